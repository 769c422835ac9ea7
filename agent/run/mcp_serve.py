"""`bosun mcp serve`: bosun as an MCP server on stdio, so another agent (Claude Code,
Codex, an IDE) can hand it a task in a workspace and continue it later.

Two tools: `run_task` (a prompt in a workspace: a new session) and `continue_session`
(a session id and a prompt). Both answer with structured output (status, final text,
session id). While a run goes on, its model calls and tool calls come to the caller as
progress notifications; the caller's `notifications/cancelled` sets the run's one
Cancel (agent.loop.cancel), the run stops at its next safe point, and only then is the
request let go, so the session file is whole when a continuation reads it.

The agent loop is synchronous: each call runs in a worker thread, and several calls may
be in flight at once (agent.run.serve_runs says how they share a model).
"""

# No `from __future__ import annotations`: the SDK reads the tools' signatures (their
# Context parameter, their return type) from live annotations.
import contextlib
import threading
from collections.abc import Callable

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from agent.errors import HarnessError
from agent.loop.cancel import Cancel
from agent.run.assemble import Assembly
from agent.run.serve_runs import Outcome, RefusedCall, Runs
from agent.run.settings import Settings
from agent.untrusted import visible

STOP_WAIT_S = 60.0  # how long a cancelled request waits for its run to reach a safe point


class RunResult(BaseModel):
    """A tool's structured output: a run's result."""

    status: str = Field(description="done | max_turns | stuck | error | interrupted | …")
    final_text: str = Field(description="The model's last answer.")
    session_id: str = Field(description="Give it to continue_session to go on.")
    turns: int = 0
    tool_calls: int = 0
    error: str | None = None


def build_server(runs: Runs) -> MCPServer:
    """The MCP server with bosun's two tools on `runs`."""
    server = MCPServer(
        "bosun",
        instructions=(
            "bosun runs a coding task with a local model in a workspace folder and answers"
            " with the final text, a status and a session id to continue it."
        ),
    )

    async def call(
        ctx: Context, work: Callable[[Cancel, Callable[[str], None]], Outcome]
    ) -> RunResult:
        """`work` in a worker thread; progress goes out as it comes; a cancel of this
        request stops the run through its Cancel and waits for it to stop."""
        cancel = Cancel()
        finished = threading.Event()
        count = 0

        def progress(message: str) -> None:
            nonlocal count
            if cancel.is_set():
                return
            count += 1
            with contextlib.suppress(Exception):  # a caller gone: the run goes on
                anyio.from_thread.run(ctx.report_progress, count, None, visible(message))

        def body() -> Outcome:
            try:
                return work(cancel, progress)
            finally:
                finished.set()

        try:
            outcome = await anyio.to_thread.run_sync(body, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            cancel.set()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(finished.wait, STOP_WAIT_S)
            raise
        except (RefusedCall, HarnessError) as exc:  # a HarnessError: sessions unwritable, …
            raise ToolError(str(exc)) from None
        return RunResult(**vars(outcome))

    @server.tool(
        name="run_task",
        description=(
            "Run a task with bosun in a workspace folder (a new session). approve: which"
            " tools run unasked (read-only, ask, auto-edit, auto; nobody is asked here, so"
            " a tool that would ask is refused); model: a bundled name, GGUF path or"
            " openai:URL#MODEL (default: the server's)."
        ),
    )
    async def run_task(
        prompt: str,
        workspace: str,
        ctx: Context,
        approve: str | None = None,
        model: str | None = None,
    ) -> RunResult:
        def work(cancel: Cancel, progress: Callable[[str], None]) -> Outcome:
            settings = runs.settings_for(workspace, approve, model)
            return runs.run(settings, prompt, cancel, progress)

        return await call(ctx, work)

    @server.tool(
        name="continue_session",
        description=(
            "Continue a bosun session (the session_id a run returned) with another prompt,"
            " in the session's own workspace."
        ),
    )
    async def continue_session(
        session_id: str,
        prompt: str,
        ctx: Context,
        approve: str | None = None,
        model: str | None = None,
    ) -> RunResult:
        def work(cancel: Cancel, progress: Callable[[str], None]) -> Outcome:
            settings = runs.settings_for(None, approve, model)
            return runs.run(settings, prompt, cancel, progress, session_id=session_id)

        return await call(ctx, work)

    return server


def serve(settings: Settings) -> int:
    """Serve on stdin/stdout until the client goes away; models close at the end."""
    runs = Runs(settings, lambda s: Assembly.open(s))
    try:
        build_server(runs).run()
    except KeyboardInterrupt:
        return 130
    finally:
        runs.close()
    return 0
