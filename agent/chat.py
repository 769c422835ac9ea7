"""The chat session controller: one Agent kept across user turns, durable and stoppable.

It knows nothing about terminals: the REPL in `agent/ui/` hands it an `emit` callback
and an approver and calls `send()` once per user message. Kept apart from the UI so
tests can drive whole conversations (resume, interrupts, model switches) in process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.assemble import build_agent, compactor_for, open_model, start_session
from agent.budget import Budget
from agent.checkpoints import Checkpoints
from agent.config import Config
from agent.constraint import constraint_for
from agent.errors import UsageError
from agent.history import Message, ToolCall, ToolResult
from agent.mcp.hub import warn
from agent.mcp.session import Ask, begin_hub, finish_hub
from agent.permissions import Approver, decision
from agent.runtime import INTERRUPTED_CALL
from agent.session import (
    SessionLog,
    StoredSession,
    load_session,
    new_session_id,
    unanswered_calls,
)
from agent.tools import BUILTIN, ToolContext
from agent.tools.sandbox import SandboxPolicy
from agent.transcript import fence
from drivers.base import Driver, Usage

LOST_CALL = (
    "Error: bosun stopped before this call finished; its effect is unknown,"
    " so check before repeating it"
)


@dataclass
class Stats:
    """Token counts for the status line and `/usage` (whole session, and last call)."""

    calls: int = 0
    total: Usage = field(default_factory=Usage)
    context_used: int = 0
    last: ev.TurnFinished | None = None

    def add(self, turn: ev.TurnFinished) -> None:
        if turn.prompt_tokens:
            self.context_used = turn.prompt_tokens + turn.completion_tokens
        else:  # an interrupted call does not learn its prompt size; the context only grew
            self.context_used += turn.completion_tokens
        self.calls += 1
        self.total.add(
            Usage(turn.prompt_tokens, turn.cached_tokens, turn.completion_tokens, turn.ms)
        )
        self.last = turn

    @property
    def tokens_per_s(self) -> float:
        last = self.last
        return last.completion_tokens * 1000 / last.ms if last and last.ms > 0 else 0.0


class ChatSession:
    """A conversation: the agent, its session file, the model, and usage so far."""

    def __init__(
        self,
        config: Config,
        workspace: Path,
        emit: ev.Emit,
        approver: Approver | None,
        sandbox: SandboxPolicy | None = None,
        *,
        ask_server: Ask | None = None,
        allow_workspace_mcp: bool = False,
        report: Callable[[str], None] = warn,
    ) -> None:
        """`ask_server` is asked once about each MCP server the workspace names
        (agent.mcp.session); `report` gets a line for each server that did not start."""
        self.config = config
        self.workspace = workspace
        self.sandbox = sandbox  # what `/sandbox on` restores
        self.stats = Stats()
        self._ui_emit = emit
        self.last_prompt: str | None = None  # the exact bytes last sent (`/render`)
        self.pending: list[str] = []  # `!command` outputs, sent with the next message
        self.log: SessionLog | None = None
        self.hub = begin_hub(
            config.mcp_servers,
            workspace,
            allow_workspace=allow_workspace_mcp,
            ask=ask_server,
            reserved=(t.name for t in BUILTIN),
        )
        try:
            driver, self.profile = open_model(config.model, context_size=config.context_size)
            if self.hub is not None:
                finish_hub(self.hub, report)
        except BaseException:
            if self.hub is not None:
                self.hub.close()
            raise
        self.agent = build_agent(
            driver,
            self.profile,
            workspace,
            self._emit,
            on_message=self._record,
            budget=Budget(),
            approve=config.approve,
            constrain=config.constrain,
            approver=approver,
            trace=self._sent,
            context_size=config.context_size,
            compact_at=config.compact_at,
            sandbox=sandbox,
            extra_tools=self.hub.tools() if self.hub is not None else (),
        )
        self.tools = self.agent.tools
        self.agent.checkpoints = Checkpoints(workspace)

    # --- plumbing ------------------------------------------------------------------

    def _emit(self, event: ev.AgentEvent) -> None:
        if self.log is not None:
            self.log.event(event)
        if isinstance(event, ev.TurnFinished):
            self.stats.add(event)
        self._ui_emit(event)

    def _record(self, message: Message) -> None:
        if self.log is not None:
            self.log.message(message)

    def _sent(self, record: dict[str, Any]) -> None:
        prompt = record.get("wire_prompt", record.get("prompt"))
        self.last_prompt = prompt if isinstance(prompt, str) else None

    @property
    def driver(self) -> Driver:
        return self.agent.driver

    @property
    def history(self) -> list[Message]:
        return self.agent.history

    @property
    def id(self) -> str:
        return self.log.id if self.log is not None else ""

    @property
    def context_size(self) -> int | None:
        return self.driver.info.n_ctx or self.config.context_size

    def _answer(self, calls: Sequence[ToolCall], content: str) -> None:
        for call in calls:
            self.agent.add(ToolResult(call.id, content, is_error=True))

    # --- what the REPL calls -------------------------------------------------------

    def start_new(self) -> None:
        """A fresh conversation (also `/clear`): new file, system prompt read anew."""
        self._close_log()
        self.log = SessionLog(new_session_id())
        self.stats = Stats()
        self.pending.clear()
        self.agent.checkpoints = Checkpoints(self.workspace)
        start_session(self.agent, self.log.id)

    def resume(self, path: Path) -> StoredSession:
        """Continue a stored session in its own file, with its history as it was saved.
        Calls that never got a result are answered first."""
        try:
            stored = load_session(path)
        except ValueError as exc:
            raise UsageError(f"session {path.stem} is damaged: {exc}") from None
        self._close_log()
        if stored.workspace and Path(stored.workspace).is_dir():
            self.workspace = self.agent.workspace = Path(stored.workspace)
        self.log = SessionLog(stored.id, path.parent)
        self.stats = Stats()
        self.pending.clear()
        self.agent.checkpoints = Checkpoints(self.workspace)
        start_session(self.agent, stored.id, stored.messages, stored.compactions)
        self._answer(unanswered_calls(self.history), LOST_CALL)
        compactor = self.agent.compactor
        if compactor is not None:  # the status bar's context before the first new call
            self.stats.context_used = compactor.size(self.history, self.tools.specs())
        return stored

    def send(self, prompt: str) -> ev.RunFinished:
        """One user turn. Ctrl-C stops it cleanly (agent.cancel); the history left
        behind is always one a model can be shown again."""
        if self.pending:
            prompt = "\n\n".join([*self.pending, prompt])
            self.pending.clear()
        cancel = self.agent.cancel
        cancel.clear()
        result: ev.RunFinished | None = None
        try:
            with cancel.on_sigint():
                result = self.agent.run(prompt)
        except KeyboardInterrupt:  # a second Ctrl-C landed outside the loop
            pass
        self._answer(unanswered_calls(self.history), INTERRUPTED_CALL)
        if result is None:
            result = ev.RunFinished("interrupted", 0, 0, 0, 0, 0, 0, "")
            self._emit(result)
        return result

    def run_shell(self, command: str) -> ToolResult:
        """`!command` from the user: bash's sandbox and approval mode apply (read-only
        refuses; otherwise typing it is the approval). The output waits in `pending`."""
        tool = self.tools.get("bash")
        sandboxed = self.agent.sandbox is not None
        if tool is None or decision(self.agent.approve, tool.kind, sandboxed=sandboxed) == "deny":
            raise UsageError(f"approve mode {self.agent.approve}: shell commands do not run")
        call = ToolCall("shell", "bash", {"command": command})
        try:
            result = self.tools.execute(call, ToolContext(self.workspace, self.agent.sandbox))
        except KeyboardInterrupt:  # bash has killed the command by now
            result = ToolResult(call.id, "(stopped)", is_error=True)
        if self.agent.compactor is not None:
            result = self.agent.compactor.cap(result)
        self.pending.append(f"I ran `{command}` myself; its output:\n{fence(result.content)}")
        return result

    @property
    def checkpoints(self) -> Checkpoints:
        assert self.agent.checkpoints is not None  # set in __init__ and on every start
        return self.agent.checkpoints

    def set_approve(self, mode: str) -> None:
        self.agent.set_approve(mode)

    def set_sandbox(self, policy: SandboxPolicy | None) -> None:
        """bash in (a policy) or out of (None) the sandbox; "always" answers are reset."""
        self.agent.sandbox = policy
        self.agent.set_approve(self.agent.approve)

    def switch_model(self, spec: str) -> None:
        """Another model, same history: history is canonical, so this is always valid."""
        driver, profile = open_model(spec, context_size=self.config.context_size)
        self.agent.driver.close()
        self.agent.driver, self.agent.profile, self.profile = driver, profile, profile
        self.agent.constraint = constraint_for(self.config.constrain, driver, self.tools, profile)
        view = self.agent.compactor.view if self.agent.compactor is not None else None
        config = self.config
        self.agent.compactor = compactor_for(driver, config.context_size, config.compact_at, view)
        self.config = replace(self.config, model=spec)
        self._emit(ev.SessionStarted(self.id, driver.model, str(self.workspace)))

    def compact(self) -> bool:
        """`/compact`: as small as it goes now; False when there was nothing to do."""
        if self.agent.compactor is None:
            return False
        before = len(self.agent.compactor.view.stubs), self.agent.compactor.view.cut
        self.agent.compact(force=True)
        return (len(self.agent.compactor.view.stubs), self.agent.compactor.view.cut) != before

    def next_prompt(self) -> str:
        """The exact bytes the next model call would send for the history so far."""
        return self.profile.render(self.history, self.tools.specs())

    def _close_log(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None

    def close(self) -> None:
        self._close_log()
        try:
            self.driver.close()
        finally:
            if self.hub is not None:
                self.hub.close()
