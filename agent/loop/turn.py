"""One model call, streamed: the request out, the parser's events in, a Reply at the end.

The loop in `agent.loop.runtime` decides what happens next; this module only turns one call
into what the model said (prose, reasoning, calls, diagnostics) while the events go out
as they arrive. Two roads, one result: a text driver gets the prompt the profile
rendered and its text is parsed in the model's own format; a chat driver (a server that
applies its own template) gets the messages, and the calls its parser found are decoded
here, as everything a model writes is, bounded and checked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from agent import events as ev
from agent import untrusted
from agent.history import Message, ToolCall, retain_assistant_text
from agent.loop.loopguard import LoopGuard
from agent.markup import TOOL_CALL_OPEN, TOOL_RESULT_OPEN, WIRE_CALL_OPEN
from agent.parsing import Event
from agent.parsing.select import ModelOutputParser
from agent.parsing.wire import wire_to_canonical
from agent.protocol.dialect import chat_messages
from agent.protocol.profile import ModelProfile
from agent.protocol.render import Rendered, render_call
from drivers.base import ChatDriver, Driver, Halt, RawCall, Usage, partial_suffix

Trace = Callable[[dict[str, object]], None]

_OPENERS = (TOOL_CALL_OPEN, TOOL_RESULT_OPEN, WIRE_CALL_OPEN, "<think>")
# Characters one reply may have (prose, reasoning and a server's call arguments
# together): about a million tokens, which no local model writes in one turn but a
# hostile server sends in a second. Past it the reply is cut there, as a token limit
# would cut it, so a 50 MB argument never reaches the parser, history or a template.
MAX_REPLY_CHARS = 4_000_000


def cut_partial_marker(text: str, openers: Sequence[str] = ()) -> str:
    """Prose of an interrupted reply without a half-written tag at its end.

    The stream stops wherever Ctrl-C lands, possibly inside "<tool_ca" that the parser
    was holding back; its final flush hands such a fragment over as text, and it must
    not reach history (a model shown it would learn to write broken calls). `openers`:
    the format's own tags besides bosun's (its parser knows them).
    """
    k = partial_suffix(text, (*_OPENERS, *openers))
    return (text[:-k] if k else text).rstrip()


@dataclass
class Reply:
    """What one model call amounted to, after parsing."""

    prose: str
    calls: list[ToolCall]
    diagnostics: list[str]
    reasoning: str = ""
    usage: Usage = field(default_factory=Usage)
    interrupted: bool = False  # the user stopped it: its calls were never seen through
    finish: str = "stop"  # "length": cut by max_tokens or a full context
    text_calls: bool = False  # a chat server sent calls as text (its parser did not run)
    ttft_ms: int | None = None  # time to the first piece of the reply (None: none came)


@dataclass
class Query:
    """Everything one model call needs besides the driver and the profile."""

    history: Sequence[Message]
    specs: list[dict[str, Any]]
    emit: ev.Emit
    max_tokens: int
    grammar: str | None = None
    salvage: bool = True
    retain: bool = True  # False (an ablation): the raw completion is the prose
    halt: Halt = lambda: False
    trace: Trace | None = None


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
    structured: list[RawCall] = field(default_factory=list)  # parsed by a server
    diagnostics: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish: str = "stop"
    stopped_by: str | None = None
    guard: LoopGuard = field(default_factory=LoopGuard)  # prose and reasoning only
    size: int = 0  # characters received so far (MAX_REPLY_CHARS)
    oversize: bool = False
    started: float = field(default_factory=time.perf_counter)
    first: float | None = None  # when the first piece of the reply came

    def arrived(self) -> None:
        if self.first is None:
            self.first = time.perf_counter()

    @property
    def ttft_ms(self) -> int | None:
        return None if self.first is None else round((self.first - self.started) * 1000)

    def allow(self, piece: str) -> str:
        """What of `piece` fits under MAX_REPLY_CHARS; the first piece past it cuts the
        reply off (a diagnostic for the model, finish "length": open calls are dropped)."""
        if piece:
            self.arrived()
        room = MAX_REPLY_CHARS - self.size
        self.size += len(piece)
        if len(piece) <= room:
            return piece
        if not self.oversize:
            self.oversize, self.finish = True, "length"
            self.diagnostics.append(
                f"your reply passed {MAX_REPLY_CHARS:,} characters and was cut off there;"
                " write large content in parts (several smaller calls)"
            )
        return piece[: max(room, 0)]

    def text(self, piece: str) -> None:
        piece = self.allow(piece)
        if piece:
            self.raw.append(piece)
            self.take(self.parser.feed(piece), closed=True)

    def take(self, events: list[Event], closed: bool) -> None:
        for e in events:
            if e.kind == "text":
                self.texts.append(e.text)
                self.emit(ev.TextDelta(e.text))
                self.guard.feed(e.text)
            elif e.kind == "reasoning":
                self.think(e.text)
            elif e.kind == "tool_call" and e.call is not None:
                self.found.append((e.call, closed))
            elif e.kind == "diagnostic":
                self.diagnostics.append(e.text)

    def think(self, text: str) -> None:
        text = self.allow(text)
        if not text:
            return
        self.thoughts.append(text)
        self.emit(ev.ReasoningDelta(text))
        self.guard.feed(text)

    def progress(self, report: tuple[int, int] | None) -> None:
        """A server's prefill report, passed on for a screen (a transient event)."""
        if report is not None:
            self.emit(ev.PromptProgress(*report))

    def end(self, usage: Usage | None, finish: str | None, stopped_by: str | None) -> None:
        if usage is not None:
            self.usage = usage
        if finish is not None and not self.oversize:
            self.finish, self.stopped_by = finish, stopped_by


def call_model(driver: Driver, profile: ModelProfile, req: Query) -> Reply:
    """One model call, streamed through the model's parser; events go out as they arrive.

    It ends early, keeping what was said, when `req.halt()` says so (the user stopped
    it) or when the reply keeps repeating itself; a KeyboardInterrupt while the backend
    is in native code counts as a halt too, so what the user already read is kept.
    """
    info = driver.info
    chat = info.chat
    rendered = None
    if not chat:
        spans, head = info.data_spans, info.prefix_cache  # what this driver can use
        rendered = render_call(profile, req.history, req.specs, spans=spans, head=head)
    # The prompt tells the parser whether the reply starts inside reasoning; a server
    # applying its own template sends reasoning apart, never inline.
    prompt = rendered.canonical if rendered is not None else ""
    parser = profile.parser(req.specs, prompt=prompt, salvage=req.salvage)
    t = _Turn(req.emit, parser, {"model": driver.model})
    started = t.started

    def halt() -> bool:
        return t.guard.tripped or t.oversize or req.halt()

    try:
        if rendered is None:
            _stream_chat(cast(ChatDriver, driver), req, t, halt)
        else:
            _stream_text(driver, profile, req, t, rendered, halt)
    except KeyboardInterrupt:
        t.finish = "interrupted"
    if t.guard.tripped:
        # Not a format error to retry: the reply so far stands, as an answer.
        req.emit(ev.Diagnostic("stopped the reply early: it kept repeating itself"))
    if t.stopped_by and t.stopped_by in profile.stop:
        # Some formats close a call with the stop token itself (harmony's);
        # the parser reads it or drops it, whichever its format wants.
        t.take(t.parser.feed(t.stopped_by), closed=True)
    t.take(t.parser.finish(), closed=False)
    if not t.usage.ms:
        t.usage.ms = (time.perf_counter() - started) * 1000
    completion = "".join(t.raw)
    if profile.wire_remap:
        completion = wire_to_canonical(completion)
    calls = _calls(t)
    if req.trace is not None:
        if chat:
            t.record["tool_calls"] = [{"name": c.name, "arguments": c.arguments} for c in calls]
        t.record["completion"] = completion
        t.record["usage"] = vars(t.usage)
        req.trace(t.record)
    stopped = t.finish == "interrupted" and not t.guard.tripped
    if not req.retain:
        return Reply(
            completion,
            calls,
            t.diagnostics,
            usage=t.usage,
            interrupted=stopped,
            finish=t.finish,
            ttft_ms=t.ttft_ms,
        )
    prose = retain_assistant_text("".join(t.texts))
    if t.finish == "interrupted":
        prose = cut_partial_marker(prose, t.parser.openers)
    reasoning = "".join(t.thoughts).strip()
    text_calls = chat and bool(calls) and not t.structured
    return Reply(
        prose, calls, t.diagnostics, reasoning, t.usage, stopped, t.finish, text_calls, t.ttft_ms
    )


def _calls(t: _Turn) -> list[ToolCall]:
    """The calls to run: the server's, when it found any (look-alikes in its prose are
    not run a second time), else the parser's, without any a token limit cut off."""
    if t.structured:
        return [c for raw in t.structured if (c := decode_call(raw, t.diagnostics)) is not None]
    calls = []
    for call, closed in t.found:
        if t.finish == "length" and not closed:
            if not t.oversize:  # else the cut was said already, with its own reason
                t.diagnostics.append(
                    f"your call to {call.name} was cut off by the token limit and was not run;"
                    " make it shorter"
                )
        else:
            calls.append(call)
    return calls


def decode_call(raw: RawCall, diagnostics: list[str]) -> ToolCall | None:
    """A server's call -> a ToolCall, or a diagnostic the model reads next turn."""
    name = raw.name or "a tool"
    if raw.cut_off:
        problem = f"your call to {name} was cut off by the token limit and was not run;"
        diagnostics.append(problem + " make it shorter")
        return None
    if not raw.name:
        diagnostics.append("the server sent a tool call without a name; it was not run")
        return None
    try:
        arguments = untrusted.loads(raw.arguments) if raw.arguments else {}
    except ValueError as exc:
        diagnostics.append(f"the arguments of your call to {name} were not valid JSON ({exc})")
        return None
    if not isinstance(arguments, dict):
        diagnostics.append(f"the arguments of your call to {name} must be a JSON object")
        return None
    return ToolCall(raw.id, raw.name, arguments)


def _stream_text(
    driver: Driver, profile: ModelProfile, req: Query, t: _Turn, rendered: Rendered, halt: Halt
) -> None:
    """Bosun's prompt in, text out (remapped where the model needs)."""
    t.record["prompt"] = rendered.canonical
    stream = driver.stream(rendered.request(req.max_tokens, req.grammar), halt=halt)
    halted = 0
    try:
        for chunk in stream:
            t.progress(chunk.progress)
            for notice in chunk.notices:  # the backend's, for the person: not the model's
                req.emit(ev.Diagnostic(notice))
            if chunk.text:
                t.text(chunk.text)
            t.end(chunk.usage, chunk.finish_reason, chunk.stopped_by)
            # A driver that honours `halt` sends one last chunk, with its usage; one
            # that does not is stopped here, at its second chunk past the halt.
            halted += halt() and chunk.finish_reason is None
            if halted > 1:
                t.finish = "length" if t.oversize else "interrupted"
                break
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    if profile.wire_remap:
        t.record.update(wire_prompt=rendered.sent, wire_completion="".join(t.raw))


def _stream_chat(driver: ChatDriver, req: Query, t: _Turn, halt: Halt) -> None:
    """The server applies its template and tool parser; its calls are decoded here, and
    text still goes through bosun's parser (salvage)."""
    messages = chat_messages(req.history)
    t.record["messages"] = messages
    for piece in driver.chat(messages, req.specs, max_tokens=req.max_tokens, halt=halt):
        t.progress(piece.progress)
        if piece.reasoning:
            t.think(piece.reasoning)
        if piece.text:
            t.text(piece.text)
        for call in piece.calls:  # a server's arguments count against the reply too
            if t.allow(call.arguments or "") == (call.arguments or ""):
                t.structured.append(call)
        t.end(piece.usage, piece.finish_reason, None)
