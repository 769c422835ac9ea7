"""The start of a reply that may be inside a reasoning block the prompt opened.

Many templates end the prompt with `<think>` (or make it depend on a setting), so the
reply starts inside reasoning and only its closer is written. Two situations:

- `open`: the prompt is known to have opened it. What comes first is reasoning, up to
  the closer. A model may also skip the closer and go straight to a call; a call in the
  reasoning therefore makes the rest wait: if the closer still comes, the call was only
  thought about (and is not run); if the reply ends first, the call was meant.
- `maybe`: nobody knows what the prompt said (a parse of text alone). The text waits
  for the output to decide: the opener first means the reply opens its own block (read
  as in `open`); the closer means what came before was reasoning; the end means there
  was none.

Either way the rest of the reply goes to the format's own parser, so this is one piece
of logic for every format. Every decision depends on the text alone, so any chunking
gives the same events, and every character is scanned a bounded number of times.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

from agent.markup import partial_suffix
from agent.parsing.base import WS, Event, ReasoningChannel

Mode = Literal["open", "maybe"]


class ReasoningLead:
    def __init__(
        self, inner: Any, pair: tuple[str, str], call_openers: Iterable[str], mode: Mode
    ) -> None:
        self.inner = inner
        self._open, self._close = pair
        self._calls = tuple(c for c in call_openers if c)
        marks = sorted({self._close, *self._calls}, key=len, reverse=True)
        self._find = re.compile("|".join(map(re.escape, marks)))
        self._out: list[Event] = []
        self._thoughts = ReasoningChannel(self._out)
        self._state = "streaming" if mode == "open" else "maybe"
        if mode == "open":
            self._thoughts.open_block()
        self._held = ""  # the undecided start, or a partial marker while streaming
        self._parts: list[str] = []  # text held until the closer decides (waiting, pending)
        self._tail = ""  # the last characters held, where a closer may have begun
        self._opened = False  # the start was checked for an opener
        self._skip_ws = False  # after the closer, until the prose begins

    def feed(self, chunk: str) -> list[Event]:
        if self._state == "done":
            return self._pass(chunk)
        if self._state in ("waiting", "pending"):
            self._wait(chunk, final=False)
        else:
            self._held += chunk  # a few characters: the undecided start or a partial mark
            self._advance(final=False)
        return self._drain()

    def finish(self) -> list[Event]:
        if self._state != "done":
            if self._state in ("waiting", "pending"):
                self._wait("", final=True)
            else:
                self._advance(final=True)
            if self._state == "streaming":
                self._thoughts.push(self._held)
                self._thoughts.close_block()
                self._held = ""
            if self._state == "pending":  # the reply ended before any closer: a call
                self._thoughts.close_block()
            if self._state != "done":
                self._state = "done"
                rest = self._held + "".join(self._parts)
                self._held, self._parts = "", []
                self._out.extend(self._pass(rest) if rest else [])
        return self._drain() + list(self.inner.finish())

    # -- machinery ---------------------------------------------------------------------

    def _drain(self) -> list[Event]:
        out = self._out[:]
        self._out.clear()
        return out

    def _pass(self, text: str) -> list[Event]:
        if self._skip_ws:
            stripped = text.lstrip(WS)
            if not stripped:
                return []
            self._skip_ws = False
            text = stripped
        return list(self.inner.feed(text))

    def _advance(self, final: bool) -> None:
        if self._state in ("maybe", "streaming") and not self._opened:
            lead = self._held.lstrip()
            if lead.startswith(self._open):  # the reply opens (or repeats) the block itself
                self._held = lead[len(self._open) :]
                if self._state == "maybe":
                    self._thoughts.open_block()
                self._state, self._opened = "streaming", True
            elif not final and self._open.startswith(lead):
                return  # it may still become the opener
            elif self._state == "maybe":
                self._state = "waiting"
            self._opened = True
        buf = self._held
        if self._state == "streaming":
            m = self._find.search(buf)
            if m is None:
                keep = 0 if final else partial_suffix(buf, (self._close, *self._calls))
                self._thoughts.push(buf[: len(buf) - keep])
                self._held = buf[len(buf) - keep :]
                return
            self._thoughts.push(buf[: m.start()])
            if m.group() == self._close:
                self._end_reasoning(buf[m.end() :])
                return
            self._state, buf = "pending", buf[m.start() :]
        self._held = ""
        self._wait(buf, final)

    def _wait(self, chunk: str, final: bool) -> None:
        """Hold text until the closer shows up; only the new text (and the last few held
        characters, where a closer may have begun) is searched, so holding is linear."""
        window = self._tail + chunk
        at = window.find(self._close)
        if chunk:
            self._parts.append(chunk)
        if at < 0:
            keep = len(self._close) - 1
            self._tail = window[-keep:] if keep else ""
            if final and self._state == "waiting":
                self._state = "done"
                held, self._parts = "".join(self._parts), []
                self._out.extend(self._pass(held))
            return
        held = "".join(self._parts)
        at += len(held) - len(window)  # where the window starts in what is held
        self._parts, self._tail = [], ""
        if self._state == "waiting":
            self._thoughts.open_block()
        self._thoughts.push(held[:at])
        self._end_reasoning(held[at + len(self._close) :])

    def _end_reasoning(self, rest: str) -> None:
        self._thoughts.close_block()
        self._held = ""
        self._skip_ws = True
        self._done(rest)

    def _done(self, rest: str) -> None:
        self._state = "done"
        self._held = ""
        if rest:
            self._out.extend(self._pass(rest))
