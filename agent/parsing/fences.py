"""Markdown code (fences and inline spans), decided from as much text as has arrived.

Markup inside code is content, so the parser must know where code is. Each check
answers "undecided" when the text so far could still go either way (the caller waits
for more input), so code is recognised the same however the text is chunked. Fence
rules are those of `agent.markup` (CommonMark: up to three spaces of indent, three or
more backticks or tildes, no backtick in a backtick fence's info string).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from agent.markup import fence_at

_TICK_OR_NL = re.compile(r"[`\n]")
_MAYBE_OPENER = re.compile(r" {0,3}(?:`*|~*|`{3,}[^`\n]*|~{3,}[^\n]*)")
_CLOSER = re.compile(r" {0,3}(`{3,}|~{3,})[ \t\r]*")
_MAYBE_CLOSER = re.compile(r" {0,3}(?:`*|~*)[ \t\r]*")


@dataclass
class FenceState:
    """An open fence. `mode`: "probe" until the body's first non-space character shows
    whether it could be a tool-call object, then "held" (kept until the fence closes)
    or "stream" (passed on as text)."""

    chars: str
    is_json: bool
    opener: str = ""
    mode: str = "probe"
    body: list[str] = field(default_factory=list)


def opener_at(buf: str, i: int, final: bool) -> FenceState | Literal[False] | None:
    """The fence opening at line start `i`, False when none does, None when undecided."""
    nl = buf.find("\n", i)
    if nl < 0 and not final:
        return None if _MAYBE_OPENER.fullmatch(buf, i) else False
    found = fence_at(buf, i)
    if found is None:
        return False
    chars, indent = found
    end = len(buf) if nl < 0 else nl + 1
    words = buf[i + indent + len(chars) : end].split()
    return FenceState(chars, bool(words) and words[0].lower() == "json", buf[i:end])


def closer_at(buf: str, i: int, chars: str, final: bool) -> int | Literal[False] | None:
    """End of the closing-fence line at `i` (before its newline), False, or None."""
    nl = buf.find("\n", i)
    if nl < 0 and not final:
        return None if _MAYBE_CLOSER.fullmatch(buf, i) else False
    end = len(buf) if nl < 0 else nl
    m = _CLOSER.fullmatch(buf, i, end)
    if m is None or m.group(1)[0] != chars[0] or len(m.group(1)) < len(chars):
        return False
    return end


def inline_code_at(buf: str, i: int, final: bool, resume: int = 0) -> tuple[int, bool | None]:
    """For the backtick run at `i`: (end, True) when a code span ends at `end`, (end of
    the run, False) when the run is literal, (resume position, None) when undecided.

    Stricter than CommonMark on purpose: a span must close on its own line. A lone
    backtick in prose ("the `main branch") must not hide a real call further down, and
    waiting for a closer that may come paragraphs later would stall the stream. Every
    failed opener on a line has a different run length (an equal run would have closed
    it), so rescanning stays near linear.
    """
    n = len(buf)
    j = i
    while j < n and buf[j] == "`":
        j += 1
    if j == n and not final:
        return i, None
    pos = max(j, resume)
    while True:
        m = _TICK_OR_NL.search(buf, pos)
        if m is None and not final:
            return n, None
        if m is None or buf[m.start()] == "\n":
            return j, False
        p = q = m.start()
        while q < n and buf[q] == "`":
            q += 1
        if q == n and not final:
            return p, None
        if q - p == j - i:
            return q, True
        pos = q
