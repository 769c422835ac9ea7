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
from typing import Literal

from agent import events as ev
from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    ToolCall,
    ToolResult,
    User,
    retain_assistant_text,
)
from agent.parsing import GenericStreamParser, HarmonyStreamParser
from agent.permissions import decision
from agent.prompt import WireDecoder, canonical_to_wire, render, wire_to_canonical
from agent.tools.registry import Tool, ToolContext, ToolRegistry
from drivers.base import Driver, DriverError, Usage

HARMONY_CALL = "<|call|>"
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
    template: str | Path | None = None
    stop: Sequence[str] = ()
    wire: bool = False  # remap <tool_call> to [[CALL]] at the driver boundary
    harmony: bool = False  # gpt-oss: parse Harmony channels instead of <tool_call>
    think_open: str | None = None  # reasoning marker a generation prompt may end with
    # Picks the GBNF grammar for the next model call (None: unconstrained).
    constraint: Callable[[Sequence[Message]], str | None] | None = None

    turns: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    _format_errors: int = 0
    _recent_calls: list[str] = field(default_factory=list)
    _always: set[str] = field(default_factory=set)
    _ids: int = 0
    _final_text: str = ""

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
        self.add(User(prompt))
        status, error = "done", None
        try:
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
        prompt = render(self.history, self.tools.specs(), self.driver.model, self.template)
        if self.harmony:
            parser: GenericStreamParser | HarmonyStreamParser = HarmonyStreamParser(
                self.tools.names
            )
        else:  # a template that pre-opens <think> means the reply starts inside it
            opened = bool(self.think_open) and prompt.rstrip().endswith(str(self.think_open))
            parser = GenericStreamParser(self.tools.names, think_open=opened)
        texts: list[str] = []
        found: list[tuple[ToolCall, bool]] = []  # (call, envelope closed)
        diagnostics: list[str] = []
        usage, finish, stopped_by = Usage(), "stop", None
        raw: list[str] = []
        started = time.perf_counter()

        def take(events: list, closed: bool) -> None:
            for e in events:
                if e.kind == "text":
                    texts.append(e.text)
                    self.emit(ev.TextDelta(e.text))
                elif e.kind == "reasoning":
                    self.emit(ev.ReasoningDelta(e.text))
                elif e.kind == "tool_call" and e.call is not None:
                    found.append((e.call, closed))
                elif e.kind == "diagnostic":
                    diagnostics.append(e.text)

        self.turns += 1
        grammar = self.constraint(self.history) if self.constraint is not None else None
        sent = canonical_to_wire(prompt) if self.wire else prompt
        decoder = WireDecoder() if self.wire else None
        stream = self.driver.stream(
            sent, stop=self.stop, max_tokens=self.budget.max_tokens, grammar=grammar
        )
        try:
            for chunk in stream:
                if chunk.text:
                    raw.append(chunk.text)
                    text = decoder.feed(chunk.text) if decoder is not None else chunk.text
                    if text:
                        take(parser.feed(text), closed=True)
                if chunk.usage is not None:
                    usage = chunk.usage
                if chunk.finish_reason is not None:
                    finish = chunk.finish_reason
                    stopped_by = chunk.stopped_by
        except KeyboardInterrupt:
            # Keep what the user already read; a call still being written is dropped.
            close = getattr(stream, "close", None)
            if close is not None:
                close()
            prose = retain_assistant_text("".join(texts))
            if prose.strip():
                self.add(Assistant(prose))
                self._final_text = prose
            raise
        if decoder is not None and (rest := decoder.finish()):
            take(parser.feed(rest), closed=True)
        if self.harmony and stopped_by == HARMONY_CALL:
            take(parser.feed(stopped_by), closed=True)  # the end token that makes a call
        take(parser.finish(), closed=False)
        if not usage.ms:
            usage.ms = (time.perf_counter() - started) * 1000
        self._account(usage)
        if self.trace is not None:
            completion = "".join(raw)
            record: dict[str, object] = {
                "model": self.driver.model,
                "prompt": prompt,
                "completion": wire_to_canonical(completion) if self.wire else completion,
                "usage": vars(usage),
            }
            if self.wire:
                record.update(wire_prompt=sent, wire_completion=completion)
            self.trace(record)
        calls = []
        for call, closed in found:
            if finish == "length" and not closed:
                diagnostics.append(
                    f"your call to {call.name} was cut off by the token limit and was not run;"
                    " make it shorter"
                )
            else:
                calls.append(self._renumber(call))
        return Reply(retain_assistant_text("".join(texts)), calls, diagnostics)

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
            self.add(AssistantToolUse(call))
            self.emit(ev.ToolCallEvent(call.id, call.name, call.arguments, call.salvaged))
        for n, call in enumerate(reply.calls):
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
            verdict = decision(self.approve, tool.kind)
            if verdict == "ask" and call.name not in self._always:
                if self.approver is None:
                    return ToolResult(
                        call.id,
                        f"Error: {call.name} needs approval and nobody can approve here;"
                        " the user can rerun with --approve auto-edit or --approve auto",
                        is_error=True,
                    )
                answer = self.approver(call, tool)
                if answer == "always":
                    self._always.add(call.name)
                elif answer != "yes":
                    return ToolResult(call.id, "Error: the user declined this call", True)
            elif verdict == "deny":
                return ToolResult(
                    call.id, f"Error: {call.name} is not allowed in {self.approve} mode", True
                )
        return self.tools.execute(call, ToolContext(self.workspace))
