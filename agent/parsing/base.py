"""Types shared by every parser: what a parse yields, whatever the wire format.

Also home of the two delta channels, because the whitespace rule for prose is part of the
contract between streaming and one-shot parsing, not a detail of one parser.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from agent.history import ToolCall

EventKind = Literal["text", "reasoning", "tool_call", "diagnostic"]

# The whitespace `agent.markup.strip_markup` skips after a removed span.
WS = " \t\r\n"


@dataclass(slots=True)
class Event:
    """One thing a stream parser found.

    `text` carries the delta for "text"/"reasoning" and the message for "diagnostic";
    `call` is set for "tool_call". A tool_call event returned by `feed()` is a call whose
    envelope closed; one returned by `finish()` was unclosed or salvaged, which is how the
    runtime tells a call that a max_tokens cut-off may have truncated.

    Not frozen: a frozen dataclass pays for `object.__setattr__` on every construction,
    and a parser makes one per streamed token.
    """

    kind: EventKind
    text: str = ""
    call: ToolCall | None = None


@dataclass
class ParseResult:
    text: str
    calls: list[ToolCall] = field(default_factory=list)
    reasoning: str = ""
    diagnostics: list[str] = field(default_factory=list)
    # Ids of calls that only `finish()` could report: an envelope that never closed (a
    # stop string or max_tokens may have cut it) or a salvaged call.
    unclosed: list[str] = field(default_factory=list)


def coalesce(events: Iterable[Event]) -> list[Event]:
    """Merge adjacent text deltas and adjacent reasoning deltas.

    Streaming parity is defined on this form: how a parser batches deltas depends on the
    chunking, what it says does not.
    """
    out: list[Event] = []
    run: list[str] = []  # texts of the delta run that ends `out`, joined once (linear)
    for e in events:
        if out and e.kind == out[-1].kind and e.kind in ("text", "reasoning"):
            run.append(e.text)
            continue
        if len(run) > 1:
            out[-1] = Event(out[-1].kind, "".join(run))
        out.append(e)
        run = [e.text]
    if len(run) > 1:
        out[-1] = Event(out[-1].kind, "".join(run))
    return out


def result_from_events(events: Iterable[Event], unclosed: Iterable[str] = ()) -> ParseResult:
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    diagnostics: list[str] = []
    for e in events:
        if e.kind == "text":
            text.append(e.text)
        elif e.kind == "reasoning":
            reasoning.append(e.text)
        elif e.kind == "tool_call" and e.call is not None:
            calls.append(e.call)
        elif e.kind == "diagnostic":
            diagnostics.append(e.text)
    return ParseResult("".join(text), calls, "".join(reasoning), diagnostics, list(unclosed))


class TextChannel:
    """Streams prose under a whitespace rule that needs no lookahead but whitespace.

    The rule follows `strip_markup`: whitespace right after a removed span goes with it,
    whitespace before one stays when prose follows, and the ends are trimmed only when
    something was removed. Trailing whitespace is therefore held until non-space prose
    (or `finish`) decides it. One deviation, because a stream cannot take back what it
    sent: leading whitespace is dropped only when a removal came before the first prose.
    """

    def __init__(self, out: list[Event]) -> None:
        self._out = out
        self._pending = ""
        self._skip = False
        self._emitted = False
        self.removed_any = False

    def push(self, s: str) -> None:
        if self._skip or (self.removed_any and not self._emitted):
            s = s.lstrip(WS)
            if not s:
                return
            self._skip = False
        body = s.rstrip(WS)
        if not body:
            self._pending += s
            return
        tail = s[len(body) :]
        if self._pending:
            body = self._pending + body
        self._out.append(Event("text", body))
        self._pending = tail
        self._emitted = True

    def removed(self, skip_ws: bool = True) -> None:
        self.removed_any = True
        self._skip = self._skip or skip_ws
        if not self._emitted:
            self._pending = ""

    def finish(self) -> None:
        if self._pending and not self.removed_any:
            self._out.append(Event("text", self._pending))
        self._pending = ""


class Blocks:
    """Deltas of one kind: each block trimmed, blocks joined by `sep`.

    Trailing whitespace is held until non-space text follows in the same block, so the
    trim needs no lookahead and any chunking emits the same text. Think blocks and
    Harmony messages both stream through this."""

    def __init__(self, out: list[Event], kind: EventKind, sep: str) -> None:
        self._out, self._kind, self._sep = out, kind, sep
        self._owed = ""  # the separator the next emitted delta starts with
        self._pending, self._skip, self._emitted = "", True, False

    def open(self) -> None:
        self._skip = True
        self._pending = ""
        self._owed = self._sep if self._emitted else ""

    def push(self, s: str) -> None:
        if self._skip:
            s = s.lstrip(WS)
            if not s:
                return
            self._skip = False
        body = s.rstrip(WS)
        if not body:
            self._pending += s
            return
        self._out.append(Event(self._kind, self._owed + self._pending + body))
        self._owed = ""
        self._pending = s[len(body) :]
        self._emitted = True

    def close(self) -> None:
        self._pending = ""
        self._skip = True


class ReasoningChannel(Blocks):
    """Streams think-block contents, each block trimmed, blocks joined by a newline."""

    def __init__(self, out: list[Event]) -> None:
        super().__init__(out, "reasoning", "\n")

    def open_block(self) -> None:
        self.open()

    def close_block(self) -> None:
        self._pending = ""
        self._skip = True
