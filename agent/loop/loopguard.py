"""Notices when a reply has fallen into a loop, so generation can stop early.

Small models decoding greedily often end up writing one sentence (or one word fragment:
`non_empty_non_empty_…`) over and over until the token limit: on a CPU that is minutes
of output nobody can use. The guard watches the prose and reasoning of a reply (never a
tool call's arguments, where repeated lines can be legitimate file content) and trips
once its tail is the same passage, repeated back to back, over a long enough span.

Whitespace is collapsed first: looping small models move their line breaks around
between repetitions. Each check looks at a bounded window and runs every few
characters, so the cost per reply stays linear in its length.
"""

from __future__ import annotations

_PROBE = 12  # characters matched to find candidate periods


class LoopGuard:
    """`feed(text)` returns True once the text fed so far ends in a loop."""

    def __init__(
        self,
        min_repeats: int = 4,
        min_span: int = 200,
        window: int = 1600,
        every: int = 16,
    ) -> None:
        self.min_repeats = min_repeats
        self.min_span = min_span
        self.window = window
        self.every = every
        self._buf = ""
        self._space = False  # the last character kept was a collapsed space
        self._since = 0
        self.tripped = False

    def feed(self, text: str) -> bool:
        if self.tripped or not text:
            return self.tripped
        kept: list[str] = []
        for ch in text:
            if ch.isspace():
                if not self._space:
                    kept.append(" ")
                self._space = True
            else:
                kept.append(ch)
                self._space = False
        self._buf += "".join(kept)
        self._since += len(kept)
        if len(self._buf) > 2 * self.window:
            self._buf = self._buf[-self.window :]
        if self._since >= self.every:
            self._since = 0
            self.tripped = self._loops()
        return self.tripped

    def _loops(self) -> bool:
        buf = self._buf[-self.window :]
        n = len(buf)
        if n < self.min_span:
            return False
        probe = buf[n - _PROBE :]
        end = n - 1
        for _ in range(8):  # the few shortest candidate periods are enough
            at = buf.rfind(probe, 0, end)
            if at < 0:
                return False
            period = n - _PROBE - at
            repeats = max(self.min_repeats, -(-self.min_span // period))
            span = repeats * period
            if span > n:
                return False
            if buf[n - span : n - period] == buf[n - span + period :]:
                return True
            end = at + _PROBE - 1
        return False
