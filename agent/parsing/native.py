"""One stream parser for every native tool-call format, driven by a small description.

A model's raw output is prose, reasoning and call regions. What differs between formats
is only where a region starts and ends and how its body reads (`agent.parsing.
native_formats` describes each one; `agent.parsing.decoders` reads the bodies). So one
scanner serves them all, with the guarantees the Hermes parser has:

- one forward pass: every character is looked at a bounded number of times, whatever
  the chunking (a partial marker at the end of a chunk is held back, never re-scanned
  from the start);
- the same events for any chunking: every decision depends on the text only;
- never raises on model text: a malformed body becomes a diagnostic;
- a region that never closed is decoded only at `finish()`, so the runtime can tell a
  call a token limit may have cut off (and does not run it);
- reasoning apart from prose; wrapper and control tokens never reach the prose.

A reply that starts inside reasoning the prompt opened is `agent.parsing.lead`'s to
read; this parser sees what follows it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.history import ToolCall
from agent.markup import partial_suffix
from agent.parsing.base import Event, ReasoningChannel, TextChannel

Schemas = Mapping[str, dict[str, Any]]  # tool name -> its parameters' JSON schema


@dataclass(frozen=True)
class Prose:
    """Text a region turned out not to be a call after all."""

    text: str


# What a body decodes to, in order: a call, a diagnostic for the model, or prose.
Item = tuple[str, dict[str, Any]] | str | Prose
Decoder = Callable[[str, bool, Schemas], list[Item]]


@dataclass(frozen=True)
class Region:
    """Where calls are written: from `opener` to `closer` (None: to the end of the reply).

    `keep_opener`: the opener is part of the body (`<function=` opens Qwen3-Coder's XML
    when a model leaves out `<tool_call>`). `at_start`: only at the start of the reply
    (bare JSON or a Python list). `json`: a closer inside a JSON string does not count.
    `follow`: for an opener that is also common prose (`[`, `{`), what must come after
    it for a region to open: given at most `LOOKAHEAD` characters after the opener, True
    (a call starts here), False (prose) or None (too few characters yet to tell). A
    bounded look, so a prose `[` costs O(1) and the scan stays linear.
    """

    opener: str
    closer: str | None
    decode: Decoder
    keep_opener: bool = False
    at_start: bool = False
    json: bool = False
    follow: Callable[[str], bool | None] | None = None


LOOKAHEAD = 96  # characters after an opener that `Region.follow` is shown


@dataclass(frozen=True)
class NativeFormat:
    name: str
    regions: tuple[Region, ...]
    strip: tuple[str, ...] = ()  # control tokens that may appear in prose, and mean nothing


PROSE, REASONING, REGION = range(3)


class NativeStreamParser:
    """`feed(chunk)` -> events the text so far decides; `finish()` -> the rest."""

    def __init__(
        self,
        fmt: NativeFormat,
        tool_names: Iterable[str] | None = None,
        *,
        schemas: Schemas | None = None,
        reasoning: tuple[str, str] | None = None,
    ) -> None:
        self.fmt = fmt
        self._names: Collection[str] | None = None if tool_names is None else set(tool_names)
        self._schemas: Schemas = schemas or {}
        self._reasoning = reasoning
        self._out: list[Event] = []
        self._text = TextChannel(self._out)
        self._thoughts = ReasoningChannel(self._out)
        self._buf = ""
        self._final = False
        self._calls = 0
        self._started = False  # prose (not whitespace) has been written
        self._region: Region | None = None
        self._body: list[str] = []
        self._json = _JsonState()
        anywhere = [r.opener for r in fmt.regions if not r.at_start]
        self._openers = {r.opener: r for r in fmt.regions if not r.at_start}
        self._start_regions = [r for r in fmt.regions if r.at_start]
        marks = [*anywhere, *fmt.strip]
        if reasoning is not None:
            marks += [reasoning[0], reasoning[1]]
        self._marks = tuple(dict.fromkeys(m for m in marks if m))
        self._find = _alternation(self._marks)
        self._strip = _alternation(fmt.strip)
        self._state = PROSE

    # -- public --------------------------------------------------------------------------

    def feed(self, chunk: str) -> list[Event]:
        if self._final or not chunk:
            return []
        self._buf += chunk
        self._pump()
        return self._drain()

    def finish(self) -> list[Event]:
        if self._final:
            return []
        self._final = True
        self._pump()
        if self._state == REASONING:
            self._thoughts.push(self._buf)
            self._buf = ""
            self._thoughts.close_block()
        elif self._state == REGION:
            self._end_region(closed=False)
        if self._buf:
            self._prose(self._buf)
            self._buf = ""
        self._text.finish()
        return self._drain()

    # -- machinery -------------------------------------------------------------------------

    def _drain(self) -> list[Event]:
        out = self._out[:]
        self._out.clear()  # the channels append to this same list
        return out

    def _pump(self) -> None:
        handlers = {
            PROSE: self._in_prose,
            REASONING: self._in_reasoning,
            REGION: self._in_region,
        }
        while self._buf and handlers[self._state]():
            pass

    def _hold(self, text: str, marks: Iterable[str]) -> int:
        return 0 if self._final else partial_suffix(text, tuple(marks))

    def _prose(self, text: str) -> None:
        if text.strip():
            self._started = True
        self._text.push(text)

    def _in_prose(self) -> bool:
        buf = self._buf
        if not self._started and self._start_regions:
            lead = len(buf) - len(buf.lstrip())
            rest = buf[lead:]
            if not rest:
                if self._final:
                    self._prose(buf)
                    self._buf = ""
                return False
            for region in self._start_regions:
                if rest.startswith(region.opener):
                    self._buf = buf[lead:]
                    self._enter(region)
                    return True
            if not self._final and any(r.opener.startswith(rest) for r in self._start_regions):
                return False
        m = self._find.search(buf) if self._find is not None else None
        if m is None:
            keep = self._hold(buf, self._marks)
            self._prose(buf[: len(buf) - keep])
            self._buf = buf[len(buf) - keep :]
            return False
        before, mark = buf[: m.start()], m.group()
        self._prose(before)
        self._buf = buf[m.end() :]
        if mark in self._openers:
            region = self._openers[mark]
            if region.follow is not None:
                ahead = buf[m.end() : m.end() + LOOKAHEAD]
                verdict = region.follow(ahead)
                if verdict is None and not self._final and len(ahead) < LOOKAHEAD:
                    self._buf = buf[m.start() :]  # look again with more text
                    return False
                if not verdict:  # prose after all: the opener is text
                    self._prose(mark)
                    return True
            if region.keep_opener:
                self._buf = mark + self._buf
            self._enter(region)
        elif self._reasoning is not None and mark == self._reasoning[0]:
            self._open_reasoning()
        else:  # a stripped token, or a stray reasoning closer
            self._text.removed(skip_ws=self._reasoning is None or mark != self._reasoning[1])
        return True

    def _open_reasoning(self) -> None:
        self._state = REASONING
        self._thoughts.open_block()

    def _in_reasoning(self) -> bool:
        assert self._reasoning is not None
        close = self._reasoning[1]
        at = self._buf.find(close)
        if at < 0:
            keep = self._hold(self._buf, (close,))
            self._thoughts.push(self._buf[: len(self._buf) - keep])
            self._buf = self._buf[len(self._buf) - keep :]
            return False
        self._thoughts.push(self._buf[:at])
        self._thoughts.close_block()
        self._buf = self._buf[at + len(close) :]
        self._state = PROSE
        self._text.removed()
        return True

    def _enter(self, region: Region) -> None:
        self._state = REGION
        self._region = region
        self._body = []
        self._json = _JsonState()
        self._text.removed()

    def _in_region(self) -> bool:
        region = self._region
        assert region is not None
        buf = self._buf
        if region.closer is None:  # to the end of the reply
            self._body.append(buf)
            self._buf = ""
            return False
        skip = len(region.opener) if region.keep_opener and not self._body else 0
        at = (
            self._json.find(buf, region.closer, skip)
            if region.json
            else buf.find(region.closer, skip)
        )
        if at < 0:
            keep = self._hold(buf, (region.closer,))
            self._body.append(buf[: len(buf) - keep])
            self._buf = buf[len(buf) - keep :]
            if region.json:
                self._json.rebase(len(buf) - keep)
            return False
        self._body.append(buf[:at])
        if region.keep_opener:
            self._body.append(region.closer)
        rest = buf[at + len(region.closer) :]
        self._buf = rest
        self._end_region(closed=True)
        return True

    def _end_region(self, closed: bool) -> None:
        region = self._region
        assert region is not None
        body = "".join(self._body)
        self._body, self._region, self._state = [], None, PROSE
        if region.closer is None and self._buf:
            body += self._buf
            self._buf = ""
        try:
            # A region that runs to the end of the reply never closes: only a body that
            # is complete in itself (whole JSON, closed tags) gives calls.
            items = region.decode(body, closed and region.closer is not None, self._schemas)
        except Exception as exc:  # a decoder bug must not end the run: say so instead
            items = [f"bosun could not read this {self.fmt.name} tool call ({exc})"]
        for item in items:
            if isinstance(item, Prose):
                self._region_prose(item.text)
            elif isinstance(item, str):
                self._out.append(Event("diagnostic", item))
            else:
                self._calls += 1
                name, args = item
                self._out.append(
                    Event("tool_call", call=ToolCall(f"call_{self._calls}", name, args))
                )
        self._text.removed()

    def _region_prose(self, text: str) -> None:
        """Prose a region gave back (the text after a bare call that ran to the end of
        the reply): its control tokens mean nothing here either, as in other prose."""
        parts = self._strip.split(text) if self._strip is not None else [text]
        for k, part in enumerate(parts):
            if k:
                self._text.removed()
            self._prose(part)


class _JsonState:
    """Where a closer may end a JSON body: only outside strings. Resumable across chunks
    (`rebase` after the scanned text is moved out of the buffer)."""

    def __init__(self) -> None:
        self.in_string = False
        self.escaped = False
        self.pos = 0

    def rebase(self, consumed: int) -> None:
        self.pos = max(0, self.pos - consumed)

    def find(self, buf: str, closer: str, start: int = 0) -> int:
        i = max(self.pos, start)
        n = len(buf)
        first = closer[0]
        while i < n:
            c = buf[i]
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif c == "\\":
                    self.escaped = True
                elif c == '"':
                    self.in_string = False
            elif c == '"':
                self.in_string = True
            elif c == first and buf.startswith(closer, i):
                self.pos = i
                return i
            elif c == first and n - i < len(closer) and closer.startswith(buf[i:]):
                self.pos = i  # a partial closer: look here again with more text
                return -1
            i += 1
        self.pos = n
        return -1


def _alternation(marks: Iterable[str]) -> re.Pattern[str] | None:
    ordered = sorted(set(marks), key=len, reverse=True)
    return re.compile("|".join(map(re.escape, ordered))) if ordered else None
