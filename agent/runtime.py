"""The agent loop: run -> step -> query (model) / act (tools).

Budgets are checked before every model call; the outcome is always a `RunFinished`
event, whatever happened. Model mistakes (bad tool calls) go back to the model as
diagnostics or error results; harness failures propagate as exceptions to `run`, which
turns driver failures into status "error".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agent import events as ev
from agent.errors import DriverError
from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    Reasoning,
    ToolCall,
    ToolResult,
    User,
    retain_assistant_text,
)
from agent.loopguard import LoopGuard
from agent.parsing import Event
from agent.parsing.select import ModelOutputParser
from agent.permissions import call_decision, how_to_allow, into_git
from agent.profile import ModelProfile, profile_for
from agent.prompt import data_spans
from agent.tools.registry import Tool, ToolContext, ToolRegistry
from agent.wire import wire_to_canonical
from drivers.base import Driver, Usage

if TYPE_CHECKING:
    from agent.tools.sandbox import SandboxPolicy

Approval = Literal["yes", "no", "always"]
Approver = Callable[[ToolCall, Tool], Approval]


@dataclass
class Budget:
    max_turns: int = 30
    max_tool_calls: int = 200
    max_identical_calls: int = 3
    max_format_errors: int = 3
    max_tokens: int = 1024


@dataclass
class Reply:
    """What one model call amounted to, after parsing."""

    prose: str
    calls: list[ToolCall]
    diagnostics: list[str]
    reasoning: str = ""


@dataclass
class _Turn:
    """What one model call has produced so far, as the stream comes in."""

    emit: ev.Emit
    parser: ModelOutputParser
    record: dict[str, object]  # the --trace line
    texts: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)  # the exact completion text
    found: list[tuple[ToolCall, bool]] = field(default_factory=list)  # (call, closed)
    structured: list[ToolCall] = field(default_factory=list)  # parsed by a server
    diagnostics: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish: str = "stop"
    stopped_by: str | None = None
    guard: LoopGuard = field(default_factory=LoopGuard)  # prose and reasoning only

    def take(self, events: list[Event], closed: bool) -> None:
        for e in events:
            if e.kind == "text":
                self.texts.append(e.text)
                self.emit(ev.TextDelta(e.text))
                self.guard.feed(e.text)
            elif e.kind == "reasoning":
                self.think(e.text)
                self.guard.feed(e.text)
            elif e.kind == "tool_call" and e.call is not None:
                self.found.append((e.call, closed))
            elif e.kind == "diagnostic":
                self.diagnostics.append(e.text)

    def think(self, text: str) -> None:
        self.thoughts.append(text)
        self.emit(ev.ReasoningDelta(text))

    def end(self, usage: Usage | None, finish: str | None, stopped_by: str | None) -> None:
        if usage is not None:
            self.usage = usage
        if finish is not None:
            self.finish, self.stopped_by = finish, stopped_by

    def prose(self) -> str:
        return "".join(self.texts)


@dataclass
class Agent:
    driver: Driver
    tools: ToolRegistry
    workspace: Path
    history: list[Message]
    emit: ev.Emit = lambda _e: None
    budget: Budget = field(default_factory=Budget)
    approve: str = "auto"
    approver: Approver | None = None  # None: nobody to ask (headless)
    on_message: Callable[[Message], None] = lambda _m: None
    trace: Callable[[dict[str, object]], None] | None = None
    # Everything model-specific: template, call format, reasoning, stops, wire remap.
    # Resolved from the driver's model when not given (tests, scripts).
    profile: ModelProfile | None = None
    # Ablations for bench/eval only (`bosun run --ablate`): with salvage off, bare JSON
    # is never taken as a call; with retain off, history keeps the raw completion,
    # markup and all, the way naive harnesses do.
    salvage: bool = True
    retain: bool = True
    # Picks the GBNF grammar for the next model call (None: unconstrained).
    constraint: Callable[[Sequence[Message]], str | None] | None = None
    # bash runs in bubblewrap under this policy; None: as the user, asking in auto-edit
    sandbox: SandboxPolicy | None = None

    turns: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    _format_errors: int = 0
    _recent_calls: list[str] = field(default_factory=list)
    _always: set[str] = field(default_factory=set)
    _ids: int = 0
    _final_text: str = ""

    def __post_init__(self) -> None:
        if self.profile is None:
            self.profile = profile_for(self.driver.model)

    @property
    def model(self) -> ModelProfile:
        assert self.profile is not None  # set in __post_init__
        return self.profile

    def add(self, message: Message) -> None:
        self.history.append(message)
        self.on_message(message)

    def run(self, prompt: str) -> ev.RunFinished:
        """One user request, to the end. Budgets guard one request, so `run` can be
        called again on the same Agent (a chat) with the counters starting afresh."""
        start = time.perf_counter()
        self.turns = self.tool_calls = self._format_errors = 0
        self._recent_calls.clear()
        self._final_text = ""
        self.usage = Usage()
        status, error = "done", None
        try:
            self.add(User(prompt))
            while True:
                stopped = self._budget_exceeded()
                if stopped is not None:
                    status, error = stopped
                    break
                if not self.step():
                    break
        except KeyboardInterrupt:
            status = "interrupted"
        except DriverError as exc:
            status, error = "error", str(exc)
        result = ev.RunFinished(
            status=status,
            turns=self.turns,
            tool_calls=self.tool_calls,
            prompt_tokens=self.usage.prompt_tokens,
            cached_tokens=self.usage.cached_tokens,
            completion_tokens=self.usage.completion_tokens,
            duration_ms=round((time.perf_counter() - start) * 1000),
            final_text=self._final_text,
            error=error,
        )
        self.emit(result)
        return result

    def step(self) -> bool:
        """One model call and its consequences; False when the agent is done."""
        return self.act(self.query())

    def _budget_exceeded(self) -> tuple[str, str] | None:
        b = self.budget
        if self.turns >= b.max_turns:
            return "max_turns", f"stopped after {self.turns} model calls (--max-turns)"
        if self.tool_calls >= b.max_tool_calls:
            return "max_turns", f"stopped after {self.tool_calls} tool calls"
        recent = self._recent_calls[-b.max_identical_calls :]
        if len(recent) == b.max_identical_calls and len(set(recent)) == 1:
            return "stuck", f"the same tool call was made {b.max_identical_calls} times in a row"
        if self._format_errors >= b.max_format_errors:
            return "error", f"{self._format_errors} malformed tool calls in a row"
        return None

    def query(self) -> Reply:
        """One model call, streamed through the parser; events go out as they arrive."""
        chat_mode = bool(getattr(self.driver, "chat_mode", False))
        specs = self.tools.specs()
        prompt = "" if chat_mode else self.model.canonical(self.history, specs)
        # The prompt tells the parser whether the reply starts inside reasoning; a server
        # applying its own template ("chat" wire) sends reasoning apart, never inline.
        parser = self.model.parser(specs, prompt=prompt, salvage=self.salvage)
        t = _Turn(self.emit, parser, {"model": self.driver.model})
        texts, raw = t.texts, t.raw
        self.turns += 1
        started = time.perf_counter()
        try:
            if chat_mode:
                self._stream_chat(t)
            else:
                self._stream_text(t, prompt, specs)
        except KeyboardInterrupt:
            # Keep what the user already read; a call still being written is dropped.
            prose = retain_assistant_text(t.prose())
            if prose.strip():
                self.add(Assistant(prose))
                self._final_text = prose
            raise
        if t.guard.tripped:
            # Not a format error to retry: the reply so far stands, as an answer.
            self.emit(ev.Diagnostic("stopped the reply early: it kept repeating itself"))
            t.usage = getattr(self.driver, "last_usage", None) or t.usage
        if t.stopped_by and t.stopped_by in self.model.stop:
            # Some formats close a call with the stop token itself (harmony's <|call|>);
            # the parser reads it or drops it, whichever its format wants.
            t.take(t.parser.feed(t.stopped_by), closed=True)
        t.take(t.parser.finish(), closed=False)
        if not t.usage.ms:
            t.usage.ms = (time.perf_counter() - started) * 1000
        self._account(t.usage)
        if self.trace is not None:
            completion = "".join(raw)
            remapped = self.model.wire_remap
            t.record["completion"] = wire_to_canonical(completion) if remapped else completion
            t.record["usage"] = vars(t.usage)
            self.trace(t.record)
        # The server saw the real tokens: when it found calls, look-alikes in the prose
        # are not run a second time.
        calls = [self._renumber(call) for call in t.structured]
        for call, closed in () if t.structured else t.found:
            if t.finish == "length" and not closed:
                t.diagnostics.append(
                    f"your call to {call.name} was cut off by the token limit and was not run;"
                    " make it shorter"
                )
            else:
                calls.append(self._renumber(call))
        if not self.retain:
            completion = "".join(raw)
            if self.model.wire_remap:
                completion = wire_to_canonical(completion)
            return Reply(completion, calls, t.diagnostics)
        reasoning = "".join(t.thoughts).strip()
        return Reply(retain_assistant_text("".join(texts)), calls, t.diagnostics, reasoning)

    def _stream_text(self, t: _Turn, prompt: str, specs: list[dict[str, Any]]) -> None:
        """Completion wire: bosun's prompt in, text out (remapped where the model needs)."""
        t.record["prompt"] = prompt
        grammar = self.constraint(self.history) if self.constraint is not None else None
        model = self.model
        sent = model.to_wire(prompt)
        extra = {}
        if getattr(self.driver, "takes_data_spans", False):
            spans = data_spans(self.history, specs, sent, profile=model)
            if spans:
                extra["data"] = spans
        stream = self.driver.stream(
            sent, stop=model.stop, max_tokens=self.budget.max_tokens, grammar=grammar, **extra
        )
        try:
            for chunk in stream:
                if chunk.text:
                    t.raw.append(chunk.text)
                    t.take(t.parser.feed(chunk.text), closed=True)
                t.end(chunk.usage, chunk.finish_reason, chunk.stopped_by)
                if t.guard.tripped:
                    break
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        if model.wire_remap:
            t.record.update(wire_prompt=sent, wire_completion="".join(t.raw))

    def _stream_chat(self, t: _Turn) -> None:
        """Chat wire: the server applies its template and tool parser; its calls are
        taken as they are, and text still goes through bosun's parser (salvage)."""
        from drivers.openai_http import chat_messages

        messages = chat_messages(self.history)
        t.record["messages"] = messages
        chat = self.driver.chat  # type: ignore[attr-defined]
        for piece in chat(messages, self.tools.specs(), max_tokens=self.budget.max_tokens):
            if piece.reasoning:
                t.think(piece.reasoning)
            if piece.text:
                t.raw.append(piece.text)
                t.take(t.parser.feed(piece.text), closed=True)
            t.structured.extend(piece.calls)
            t.diagnostics.extend(piece.diagnostics)
            t.end(piece.usage, piece.finish_reason, None)
            if t.guard.tripped:
                break
        t.record["tool_calls"] = [{"name": c.name, "arguments": c.arguments} for c in t.structured]

    def _account(self, usage: Usage) -> None:
        total = self.usage
        total.prompt_tokens += usage.prompt_tokens
        total.cached_tokens += usage.cached_tokens
        total.completion_tokens += usage.completion_tokens
        total.ms += usage.ms
        self.emit(
            ev.TurnFinished(
                usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens, round(usage.ms)
            )
        )

    def _renumber(self, call: ToolCall) -> ToolCall:
        """Ids unique across the session (parsers number calls per completion)."""
        self._ids += 1
        prefix = "salvage-" if call.salvaged else "call_"
        return ToolCall(f"{prefix}{self._ids}", call.name, call.arguments, call.salvaged)

    def act(self, reply: Reply) -> bool:
        if reply.reasoning and (reply.prose.strip() or reply.calls):
            self.add(Reasoning(reply.reasoning))
        if reply.prose.strip():
            self.add(Assistant(reply.prose))
            self._final_text = reply.prose
        for message in reply.diagnostics:
            self.emit(ev.Diagnostic(message))
        if not reply.calls:
            if not reply.diagnostics:
                return False
            self._format_errors += 1
            self.add(User("Your last reply had a problem: " + "; ".join(reply.diagnostics)))
            return True
        self._format_errors = 0
        for call in reply.calls:
            if self.retain:  # without retention the raw completion already shows it
                self.add(AssistantToolUse(call))
            self.emit(ev.ToolCallEvent(call.id, call.name, call.arguments, call.salvaged))
        for n, call in enumerate(reply.calls):
            if self.tool_calls >= self.budget.max_tool_calls:
                # A reply may hold more calls than the budget allows: the rest are not run.
                cap = self.budget.max_tool_calls
                for later in reply.calls[n:]:
                    why = f"Error: not run; the budget of {cap} tool calls is used up"
                    self.add(ToolResult(later.id, why, True))
                    self.emit(ev.ToolResultEvent(later.id, True, why))
                break
            try:
                result = self._execute(call)
            except KeyboardInterrupt:
                # Every call in history gets its result, or the next prompt is invalid.
                for later in reply.calls[n:]:
                    self.add(ToolResult(later.id, "Error: interrupted by the user", True))
                raise
            self.tool_calls += 1
            self._recent_calls.append(call.name + json.dumps(call.arguments, sort_keys=True))
            self.add(result)
            self.emit(ev.ToolResultEvent(call.id, result.is_error, result.content))
        return True

    def _execute(self, call: ToolCall) -> ToolResult:
        tool = self.tools.get(call.name)
        if tool is not None:
            sandboxed = self.sandbox is not None
            verdict = call_decision(
                self.approve, tool.kind, call.arguments, self.workspace, sandboxed=sandboxed
            )
            # a write into .git/ asks each time: "always" for edits is not "always" for hooks
            git = into_git(self.approve, tool.kind, call.arguments, self.workspace)
            if verdict == "ask" and (git or call.name not in self._always):
                if self.approver is None:
                    why = (
                        "writes into .git/ run commands at the next git command, so they"
                        " need approval; only --approve auto allows them unasked"
                        if git
                        else how_to_allow(self.approve, tool.kind)
                    )
                    return ToolResult(
                        call.id,
                        f"Error: {call.name} needs approval and nobody can approve here; {why}",
                        is_error=True,
                    )
                answer = self.approver(call, tool)
                if answer == "always":
                    if not git:
                        self._always.add(call.name)
                elif answer != "yes":
                    return ToolResult(call.id, "Error: the user declined this call", True)
            elif verdict == "deny":
                return ToolResult(
                    call.id, f"Error: {call.name} is not allowed in {self.approve} mode", True
                )
        return self.tools.execute(call, ToolContext(self.workspace, self.sandbox))
