"""The chat session controller: one Agent kept across user requests, durable and stoppable.

It knows nothing about terminals: the REPL in `agent/ui/` hands it an `emit` callback
and an approver and calls `send()` once per user message. Kept apart from the UI so
tests can drive whole conversations (resume, interrupts, model switches) in process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.errors import UsageError
from agent.events import Status
from agent.history import Message, ToolCall, ToolResult
from agent.loop.runtime import INTERRUPTED_CALL
from agent.mcp.connection import warn
from agent.mcp.hub import Hub
from agent.mcp.session import Ask
from agent.protocol.profile import ModelProfile
from agent.run.assemble import (
    Assembly,
    prompt_map,
    recording,
    seat_for,
    session_event,
    start_session,
)
from agent.run.hooks import AskHooks
from agent.run.settings import Settings
from agent.session import (
    LOST_CALL,
    SessionLog,
    StoredSession,
    load_session,
    new_session_id,
    unanswered_calls,
)
from agent.tools import ToolContext
from agent.tools.checkpoints import Checkpoints, Undone
from agent.tools.permissions import Approver, decision
from agent.tools.plan import plan_from_record
from agent.transcript import fence
from drivers.base import Driver, Usage


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
        settings: Settings,
        emit: ev.Emit,
        approver: Approver | None,
        *,
        ask_server: Ask | None = None,
        report: Callable[[str], None] = warn,
        ask_hooks: AskHooks | None = None,
    ) -> None:
        """`ask_server` is asked once about each MCP server the workspace names
        (agent.mcp.session); `report` gets a line for each server that did not start."""
        self.settings = settings
        self.start_sandbox = settings.sandbox  # what `/sandbox on` puts back
        self.stats = Stats()
        self._ui_emit = emit
        self.last_prompt: str | None = None  # the exact bytes last sent (`/render`)
        self.pending: list[str] = []  # `!command` outputs, sent with the next message
        self.plan: ev.PlanUpdated | None = None  # the model's latest plan (`/plan`)
        self.log: SessionLog | None = None
        self.assembly = Assembly.open(
            settings, ask_server=ask_server, report=report, ask_hooks=ask_hooks
        )
        self.agent = self.assembly.agent(
            recording(lambda: self.log, self._count, emit),
            on_message=self._record,
            approver=approver,
            trace=self._sent,
        )
        self.tools = self.agent.tools
        self.agent.checkpoints = Checkpoints(settings.workspace)

    # --- plumbing ------------------------------------------------------------------

    def _count(self, event: ev.AgentEvent) -> None:
        if isinstance(event, ev.TurnFinished):
            self.stats.add(event)
        elif isinstance(event, ev.PlanUpdated):
            self.plan = event

    def _emit(self, event: ev.AgentEvent) -> None:
        self.agent.emit(event)

    def _record(self, message: Message) -> None:
        if self.log is not None:
            self.log.message(message)

    def _sent(self, record: dict[str, Any]) -> None:
        prompt = record.get("wire_prompt", record.get("prompt"))
        self.last_prompt = prompt if isinstance(prompt, str) else None

    @property
    def workspace(self) -> Path:
        return self.settings.workspace

    @property
    def hub(self) -> Hub | None:
        return self.assembly.hub

    @property
    def profile(self) -> ModelProfile:
        return self.agent.profile

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
        return self.settings.context_size or self.driver.info.n_ctx

    def _answer(self, calls: Sequence[ToolCall], content: str) -> None:
        for call in calls:
            self.agent.add(ToolResult(call.id, content, is_error=True))

    # --- what the REPL calls -------------------------------------------------------

    def apply(self, settings: Settings) -> None:
        """A change mid-session (`/model`, `/approve`, `/sandbox`, a resumed session's
        workspace): what differs from the settings in force is put in place, and nothing
        else is touched. A new model takes its own seat (driver, profile, grammar,
        context budget) over the same history: history is canonical, so that is always
        valid; a model that fails to open leaves the old one in place."""
        old, self.settings = self.settings, settings
        agent = self.agent
        if settings.model != old.model:
            try:
                self.assembly.switch(settings.model)
            except BaseException:
                self.settings = old
                raise
            view = agent.compactor.view if agent.compactor is not None else None
            assembly = self.assembly
            agent.tools = self.tools = assembly.tools(settings)  # the new model's own set
            agent.seat = seat_for(assembly.driver, assembly.profile, self.tools, settings, view)
            agent.repo_map = prompt_map(settings, assembly.driver)  # its context, tokenizer
            self.stats.last = None  # the old model's speed is not the new one's
            self._emit(session_event(agent, self.id))
        if settings.sandbox != old.sandbox:
            agent.sandbox = settings.sandbox  # "always" answers are reset with it
        if settings.approve != old.approve or settings.sandbox != old.sandbox:
            agent.set_approve(settings.approve)
        if settings.workspace != old.workspace:
            agent.workspace = settings.workspace
            agent.repo_map = prompt_map(settings, self.driver)

    def start_new(self) -> None:
        """A fresh conversation (also `/clear`): new file, system prompt read anew."""
        self._close_log()
        self.log = SessionLog(new_session_id())
        self.stats = Stats()
        self.pending.clear()
        self.plan = None
        self.agent.checkpoints = self._checkpoints()
        start_session(self.agent, self.log.id)

    def resume(self, path: Path, *, keep_workspace: bool = False) -> StoredSession:
        """Continue a stored session in its own file, with its history as it was saved.
        Calls that never got a result are answered first. The session's own workspace
        applies unless `keep_workspace` (the user named one: `--workspace` wins)."""
        try:
            stored = load_session(path)
        except ValueError as exc:
            raise UsageError(f"session {path.stem} is damaged: {exc}") from None
        self._close_log()
        if not keep_workspace and stored.workspace and Path(stored.workspace).is_dir():
            self.apply(self.settings.but(workspace=Path(stored.workspace)))
        self.log = SessionLog(stored.id, path.parent)
        self.stats = Stats()
        self.pending.clear()
        self.plan = plan_from_record(stored.plan)  # as it stood when the session stopped
        self.agent.checkpoints = self._checkpoints()
        start_session(self.agent, stored.id, stored.messages, stored.compactions)
        self._answer(unanswered_calls(self.history), LOST_CALL)
        compactor = self.agent.compactor
        if compactor is not None:  # the status bar's context before the first new call
            self.stats.context_used = compactor.size(self.history, self.tools.specs())
        return stored

    def send(self, prompt: str, *, attached: bool = False) -> ev.RunFinished:
        """One user request. Ctrl-C stops it cleanly (agent.cancel); the history left
        behind is always one a model can be shown again. `attached`: the prompt carries
        its material (files); `!command` output waiting in `pending` counts too."""
        attached = attached or bool(self.pending)
        if self.pending:
            prompt = "\n\n".join([*self.pending, prompt])
            self.pending.clear()
        cancel = self.agent.cancel
        cancel.clear()
        result: ev.RunFinished | None = None
        try:
            with cancel.on_sigint():
                result = self.agent.run(prompt, attached=attached)
        except KeyboardInterrupt:  # a second Ctrl-C landed outside the loop
            pass
        self._answer(unanswered_calls(self.history), INTERRUPTED_CALL)
        if result is None:
            result = ev.RunFinished.of(Status.INTERRUPTED)
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

    def _checkpoints(self) -> Checkpoints:
        """This conversation's: file tools, and the shell too where git is."""
        max_mb = self.settings.checkpoint_max_mb
        return Checkpoints(self.workspace, self.id, shell=True, max_mb=max_mb)

    def rewind(self, number: int) -> Undone:
        """`/rewind N`: the files as they were before request N (all or nothing), then
        the conversation cut back to before its message; the session file records it."""
        marks = self.checkpoints.marks
        if number not in marks:
            known = ", ".join(str(n) for n in sorted(marks)) or "none yet"
            raise UsageError(f"no request {number} in this session (requests: {known})")
        at = marks[number][0]
        if not 0 < at <= len(self.history):
            raise UsageError(f"request {number} is no longer in this conversation")
        undone = self.checkpoints.rewind(number)
        self.agent.load(self.history[:at])
        if self.log is not None:
            self.log.event(ev.Rewound(number, at))
        return undone

    @property
    def checkpoints(self) -> Checkpoints:
        assert self.agent.checkpoints is not None  # set in __init__ and on every start
        return self.agent.checkpoints

    def compact(self) -> str:
        """`/compact`: as small as it goes now; one line saying what it did, or which of
        the two reasons there was for doing nothing."""
        compactor = self.agent.compactor
        if compactor is None:
            return "nothing to compact: the context size is unknown (give --context-size N)"
        specs = self.tools.specs()
        before = len(compactor.view.stubs), compactor.view.cut
        used = compactor.size(self.history, specs)
        self.agent.compact(force=True)
        if (len(compactor.view.stubs), compactor.view.cut) == before:
            return (
                f"nothing to compact: the context holds {used:,} tokens, all of them your"
                " latest request's or already folded"
            )
        now = self.stats.context_used = compactor.size(self.history, specs)
        return f"compacted: {used:,} → {now:,} tokens"

    def next_prompt(self) -> str:
        """The exact bytes the next model call would send for the history so far."""
        return self.profile.render(self.history, self.tools.specs())

    def _close_log(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None

    def close(self) -> None:
        self._close_log()
        self.assembly.close()
