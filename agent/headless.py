"""`bosun run`: one prompt, no screen needed; events out, an exit code that means something."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.assemble import build_agent, open_model, start_session
from agent.budget import Budget
from agent.errors import SessionWriteError, UsageError
from agent.history import ToolCall
from agent.mcp.hub import Hub
from agent.mcp.servers import ServerSpec
from agent.mcp.session import begin_hub, finish_hub
from agent.output import JsonlPrinter, TextPrinter
from agent.permissions import Approval, Approver
from agent.profile import ModelProfile
from agent.session import SessionLog, new_session_id
from agent.tools import BUILTIN, Tool, ToolContext, ToolRegistry
from agent.tools.sandbox import SandboxPolicy
from agent.untrusted import json_line, visible
from drivers.base import Driver

EXIT_CODES = {
    "done": 0,
    "error": 1,
    "max_turns": 3,
    "stuck": 3,
    "declined": 4,  # the user said no to a call; the run stopped there
    "refused": 4,  # every call needed an approval nobody could give
    "interrupted": 130,
}


@dataclass
class RunOptions:
    prompt: str
    model: str
    workspace: Path
    output: str = "text"
    max_turns: int = 30
    approve: str = "ask"
    constrain: str = "auto"
    trace: Path | None = None
    api: str | None = None  # chat | completions, for openai: models
    context_size: int | None = None  # None: the model's own (a server's: no budget)
    ablate: frozenset[str] = frozenset()
    sandbox: SandboxPolicy | None = None  # bash in bubblewrap (the CLI resolves --sandbox)
    mcp_servers: tuple[ServerSpec, ...] = ()  # from the config files (agent.config)
    allow_workspace_mcp: bool = False  # start servers the workspace names, unapproved


def check_workspace(path: Path) -> Path:
    if not path.exists():
        raise UsageError(f"workspace does not exist: {path}")
    if not path.is_dir():
        raise UsageError(f"workspace is not a directory: {path}")
    return path.resolve()


def trace_writer(path: Path) -> Callable[[dict[str, Any]], None]:
    """Append one JSON line per model call; the file is opened per write so a crash
    leaves every completed call on disk."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.open("a", encoding="utf-8").close()
    except OSError as exc:
        raise UsageError(f"cannot write trace file {path}: {exc.strerror}") from None

    def write(record: dict[str, Any]) -> None:
        try:
            with path.open("a", encoding="utf-8") as fh:
                fh.write(json_line(record) + "\n")
        except OSError as exc:  # a full disk: the run ends as an error, with its result
            raise SessionWriteError(
                f"cannot write the trace file {path}: {exc.strerror or exc}"
            ) from None

    return write


def terminal_approver(tools: ToolRegistry, workspace: Path) -> Approver:
    """Ask on the terminal, showing the diff a write or edit would make first."""

    def ask(call: ToolCall, tool: Tool) -> Approval:
        # the call itself was printed as it arrived (the event); the diff says the rest
        preview = tools.preview(call, ToolContext(workspace))
        if preview:
            sys.stderr.write(visible(preview.rstrip("\n")) + "\n")
        sys.stderr.write(f"Allow {visible(call.name)}? [y]es / [n]o / [a]lways: ")
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower()
        return {"y": "yes", "yes": "yes", "a": "always", "always": "always"}.get(answer, "no")

    return ask


def loading(model: str) -> AbstractContextManager[object]:
    """A spinner on stderr while a model loads (big GGUFs take seconds); silent in pipes."""
    if not sys.stderr.isatty():
        return nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(f"loading {model} …", spinner="dots")


def run_once(opts: RunOptions) -> int:
    workspace = check_workspace(opts.workspace)
    trace = trace_writer(opts.trace) if opts.trace is not None else None
    printer: Callable[[ev.AgentEvent], None] = (
        JsonlPrinter() if opts.output == "jsonl" else TextPrinter()
    )
    hub = begin_hub(
        opts.mcp_servers,
        workspace,
        allow_workspace=opts.allow_workspace_mcp,
        reserved=(t.name for t in BUILTIN),
    )
    try:
        with loading(opts.model):
            driver, profile = open_model(opts.model, api=opts.api, context_size=opts.context_size)
        try:
            if hub is not None:
                finish_hub(hub)
            return _run(opts, workspace, driver, profile, printer, trace, hub)
        finally:
            driver.close()
    finally:
        if hub is not None:
            hub.close()


def _run(
    opts: RunOptions,
    workspace: Path,
    driver: Driver,
    profile: ModelProfile,
    printer: Callable[[ev.AgentEvent], None],
    trace: Callable[[dict[str, Any]], None] | None,
    hub: Hub | None,
) -> int:
    session = SessionLog(new_session_id())

    def emit(event: ev.AgentEvent) -> None:
        session.event(event)
        printer(event)

    agent = build_agent(
        driver,
        profile,
        workspace,
        emit,
        on_message=session.message,
        budget=Budget(max_turns=opts.max_turns),
        approve=opts.approve,
        constrain=opts.constrain,
        trace=trace,
        ablate=opts.ablate,
        context_size=opts.context_size,
        sandbox=opts.sandbox,
        extra_tools=hub.tools() if hub is not None else (),
    )
    if sys.stdin.isatty() and sys.stderr.isatty():
        agent.approver = terminal_approver(agent.tools, workspace)
    try:
        try:
            start_session(agent, session.id)
        except SessionWriteError as exc:  # before the loop: the result is still owed
            result = ev.RunFinished("error", 0, 0, 0, 0, 0, 0, "", error=str(exc))
            printer(result)
        else:
            with agent.cancel.on_sigint():
                result = agent.run(opts.prompt)
    finally:
        session.close()
    return EXIT_CODES.get(result.status, 1)
