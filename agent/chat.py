"""The chat session controller: one Agent kept across user turns, durable and stoppable.

It knows nothing about terminals: the REPL in `agent/ui/` hands it an `emit` callback
and an approver and calls `send()` once per user message. Kept apart from the UI so
tests can drive whole conversations (resume, interrupts, model switches) in process.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any

from agent import events as ev
from agent.config import Config
from agent.constraint import constraint_for
from agent.errors import UsageError
from agent.headless import profile_of, system_message
from agent.history import Assistant, Message, ToolCall, ToolResult
from agent.markup import TOOL_CALL_OPEN, TOOL_RESULT_OPEN, WIRE_CALL_OPEN
from agent.profile import ModelProfile
from agent.runtime import Agent, Approval, Approver, Budget, Reply
from agent.session import (
    SessionLog,
    StoredSession,
    last_call_number,
    load_session,
    new_session_id,
    unanswered_calls,
)
from agent.tools import Tool, default_registry
from agent.tools.sandbox import SandboxPolicy
from drivers import open_driver
from drivers.base import Chunk, Driver, Usage, partial_suffix

INTERRUPTED_CALL = "Error: the user interrupted before this call ran"
STOPPED_CALL = "Error: the user interrupted this call while it ran; its effect may be partial"
LOST_CALL = (
    "Error: bosun stopped before this call finished; its effect is unknown,"
    " so check before repeating it"
)


_HARMONY = ("<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|call|>", "<|end|>")
_OPENERS = (TOOL_CALL_OPEN, TOOL_RESULT_OPEN, WIRE_CALL_OPEN, "<think>", *_HARMONY)


def cut_partial_marker(text: str) -> str:
    """Prose of an interrupted reply without a half-written tag at its end.

    The stream stops wherever Ctrl-C lands, possibly inside "<tool_ca" that the parser
    was holding back; its final flush hands such a fragment over as text, and it must
    not reach history (a model shown it would learn to write broken calls).
    """
    k = partial_suffix(text, _OPENERS)
    return (text[:-k] if k else text).rstrip()


class Interrupt:
    """Ctrl-C as a request, not an exception: the stream and the loop stop at the next
    safe point, so history never holds half a message. While a tool runs, and on a
    second Ctrl-C, it raises KeyboardInterrupt as usual: a running command (or a backend
    stuck in native code) has no safe point to wait for."""

    def __init__(self) -> None:
        self.requested = False
        self.hard = False  # raise at once (a tool is running)

    def handler(self, _signum: int, _frame: FrameType | None) -> None:
        already = self.requested
        self.requested = True
        if already or self.hard:
            raise KeyboardInterrupt


class StoppableDriver:
    """Wraps a driver: ends the stream early when an interrupt is requested, and keeps
    the exact prompt last sent (for `/render`)."""

    def __init__(self, inner: Driver, interrupt: Interrupt) -> None:
        self.interrupt = interrupt
        self.last_prompt: str | None = None
        self.swap(inner)

    def swap(self, inner: Driver) -> None:
        self.inner = inner
        self.model = inner.model
        self.supports_grammar = inner.supports_grammar

    def __getattr__(self, name: str) -> Any:  # n_ctx, n_params, tokenize, ...
        return getattr(self.inner, name)

    def stream(self, prompt: str, **options: Any) -> Iterator[Chunk]:
        self.last_prompt = prompt
        return self._guarded(self.inner.stream(prompt, **options))

    def _guarded(self, chunks: Iterator[Chunk]) -> Iterator[Chunk]:
        pieces = 0
        try:
            for chunk in chunks:
                if self.interrupt.requested:
                    break
                pieces += 1
                yield chunk
            else:
                return
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()  # llama.cpp stops generating here
        yield Chunk("", usage=Usage(completion_tokens=pieces), finish_reason="interrupted")

    def close(self) -> None:
        self.inner.close()


@dataclass
class ChatAgent(Agent):
    """An Agent that runs one user turn per `run()` and honours `Interrupt`.

    Budgets guard one request, not the whole conversation, so the counters restart with
    every user message. On an interrupt the partial answer is kept as prose and every
    tool call of that reply is dropped: none of them was seen through by the user.
    """

    interrupt: Interrupt = field(default_factory=Interrupt)

    def run(self, prompt: str) -> ev.RunFinished:
        self.turns = self.tool_calls = self._format_errors = 0
        self._recent_calls.clear()
        self._final_text = ""
        self.usage = Usage()
        return super().run(prompt)

    def step(self) -> bool:
        if self.interrupt.requested:
            raise KeyboardInterrupt
        return super().step()

    def act(self, reply: Reply) -> bool:
        if self.interrupt.requested:
            prose = cut_partial_marker(reply.prose)
            if prose.strip():
                self.add(Assistant(prose))
                self._final_text = prose
            raise KeyboardInterrupt
        return super().act(reply)

    def _execute(self, call: ToolCall) -> ToolResult:
        if self.interrupt.requested:
            return ToolResult(call.id, INTERRUPTED_CALL, is_error=True)
        self.interrupt.hard = True
        try:
            return super()._execute(call)
        except KeyboardInterrupt:  # the shell tool has killed its command by now
            self.interrupt.requested = True
            return ToolResult(call.id, STOPPED_CALL, is_error=True)
        finally:
            self.interrupt.hard = False


@dataclass
class Stats:
    """Token counts for the status line and `/usage` (whole session, and last call)."""

    calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    ms: int = 0
    context_used: int = 0
    last: ev.TurnFinished | None = None

    def add(self, turn: ev.TurnFinished) -> None:
        if turn.prompt_tokens:
            self.context_used = turn.prompt_tokens + turn.completion_tokens
        else:  # an interrupted call does not learn its prompt size; the context only grew
            self.context_used += turn.completion_tokens
        self.calls += 1
        self.prompt_tokens += turn.prompt_tokens
        self.cached_tokens += turn.cached_tokens
        self.completion_tokens += turn.completion_tokens
        self.ms += turn.ms
        self.last = turn

    @property
    def tokens_per_s(self) -> float:
        last = self.last
        return last.completion_tokens * 1000 / last.ms if last and last.ms > 0 else 0.0


def open_model(spec: str, context_size: int | None) -> tuple[Driver, ModelProfile]:
    profile = profile_of(spec)
    local = not spec.startswith(("scripted:", "openai:"))
    options = {"n_ctx": context_size} if context_size and local else {}
    return open_driver(spec, **options), profile


class ChatSession:
    """A conversation: the agent, its session file, the model, and usage so far."""

    def __init__(
        self,
        config: Config,
        workspace: Path,
        emit: ev.Emit,
        approver: Approver | None,
        sandbox: SandboxPolicy | None = None,
    ) -> None:
        self.config = config
        self.workspace = workspace
        self.sandbox = sandbox  # what `/sandbox on` restores
        self.stats = Stats()
        self.tools = default_registry()
        self._ui_emit = emit
        self._ui_approver = approver
        self.interrupt = Interrupt()
        inner, profile = open_model(config.model, config.context_size)
        self.driver = StoppableDriver(inner, self.interrupt)
        self.log: SessionLog | None = None
        self.agent = ChatAgent(
            driver=self.driver,
            tools=self.tools,
            workspace=workspace,
            history=[],
            emit=self._emit,
            budget=Budget(),
            approve=config.approve,
            approver=self._approve if approver is not None else None,
            on_message=self._record,
            interrupt=self.interrupt,
            profile=profile,
            sandbox=sandbox,
        )
        self._use_model(inner, profile, config.constrain)

    # --- plumbing ------------------------------------------------------------------

    def _use_model(self, inner: Driver, profile: ModelProfile, constrain: str) -> None:
        self.agent.profile = profile
        self.agent.constraint = constraint_for(constrain, inner, self.tools, profile)
        self.profile = profile

    def _emit(self, event: ev.AgentEvent) -> None:
        if self.log is not None:
            self.log.event(event)
        if isinstance(event, ev.TurnFinished):
            self.stats.add(event)
        self._ui_emit(event)

    def _record(self, message: Message) -> None:
        if self.log is not None:
            self.log.message(message)

    def _approve(self, call: ToolCall, tool: Tool) -> Approval:
        assert self._ui_approver is not None
        try:
            return self._ui_approver(call, tool)
        except KeyboardInterrupt:  # Ctrl-C at the question: no, and stop this turn
            self.interrupt.requested = True
            return "no"
        except EOFError:
            return "no"

    @property
    def history(self) -> list[Message]:
        return self.agent.history

    @property
    def id(self) -> str:
        return self.log.id if self.log is not None else ""

    @property
    def context_size(self) -> int | None:
        n_ctx = getattr(self.driver.inner, "n_ctx", None)
        return n_ctx if isinstance(n_ctx, int) else self.config.context_size

    def _answer(self, calls: Sequence[ToolCall], content: str) -> None:
        for call in calls:
            self.agent.add(ToolResult(call.id, content, is_error=True))

    # --- what the REPL calls -------------------------------------------------------

    def start_new(self) -> None:
        """A fresh conversation (also `/clear`): new file, system prompt read anew."""
        self._close_log()
        self.log = SessionLog(new_session_id())
        self.agent.history.clear()
        self.agent._ids = 0
        self.agent._always.clear()
        self.stats = Stats()
        self._emit(ev.SessionStarted(self.log.id, self.driver.model, str(self.workspace)))
        self.agent.add(system_message(self.workspace))

    def resume(self, path: Path) -> StoredSession:
        """Continue a stored session in its own file, with its history as it was saved.

        The stored system prompt is reused, not rendered again, so the next prompt starts
        with exactly the bytes the model saw before the restart (and a KV cache or server
        prefix cache still applies). Calls that never got a result are answered first.
        """
        try:
            stored = load_session(path)
        except ValueError as exc:
            raise UsageError(f"session {path.stem} is damaged: {exc}") from None
        self._close_log()
        if stored.workspace and Path(stored.workspace).is_dir():
            self.workspace = self.agent.workspace = Path(stored.workspace)
        self.log = SessionLog(stored.id, path.parent)
        self.agent.history[:] = stored.messages
        self.agent._ids = last_call_number(stored.messages)
        self.agent._always.clear()
        self.stats = Stats()
        self._emit(ev.SessionStarted(stored.id, self.driver.model, str(self.workspace)))
        self._answer(unanswered_calls(self.history), LOST_CALL)
        return stored

    def send(self, prompt: str) -> ev.RunFinished:
        """One user turn. Ctrl-C stops it cleanly (see Interrupt); the history left
        behind is always one a model can be shown again."""
        self.interrupt.requested = False
        previous = signal.signal(signal.SIGINT, self.interrupt.handler)
        result: ev.RunFinished | None = None
        try:
            result = self.agent.run(prompt)
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGINT, previous)
            self._answer(unanswered_calls(self.history), INTERRUPTED_CALL)
        if result is None:  # a hard second Ctrl-C landed outside the loop's own handler
            result = ev.RunFinished("interrupted", 0, 0, 0, 0, 0, 0, "")
            self._emit(result)
        return result

    def set_approve(self, mode: str) -> None:
        self.agent.approve = mode
        self.agent._always.clear()

    def set_sandbox(self, policy: SandboxPolicy | None) -> None:
        """bash in (a policy) or out of (None) the sandbox; "always" answers are reset."""
        self.agent.sandbox = policy
        self.agent._always.clear()

    def switch_model(self, spec: str) -> None:
        """Another model, same history: history is canonical, so this is always valid."""
        inner, profile = open_model(spec, self.config.context_size)
        self.driver.inner.close()
        self.driver.swap(inner)
        self._use_model(inner, profile, self.config.constrain)
        self.config = replace(self.config, model=spec)
        self._emit(ev.SessionStarted(self.id, self.driver.model, str(self.workspace)))

    def next_prompt(self) -> str:
        """The exact bytes the next model call would send for the history so far."""
        return self.profile.render(self.history, self.tools.specs())

    def _close_log(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None

    def close(self) -> None:
        self._close_log()
        self.driver.close()
