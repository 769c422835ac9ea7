"""Unified diffs of a file's text in bounded time, for the questions that show them.

difflib's matcher is quadratic in the lines it compares: a write that reorders a
48,000-line file took minutes to preview, and the approval waited for it. Most changes
touch a small middle of a file, so the lines both texts start and end with are set
aside first (one linear pass), and only the middle goes to difflib; where the middle is
still too large to compare, it is shown as replaced whole: a true diff, only not the
shortest. Every diff bosun shows (an approval's preview, a patch's, `/diff`) comes from
here.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence

# Line pairs difflib may compare: about a quarter of a second at worst (every line
# unique and moved), where 48,000 lines each side would take minutes.
MAX_COMPARED = 4_000_000

Opcode = tuple[str, int, int, int, int]


def opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """difflib's opcodes turning `a` into `b`, in time linear in their length where the
    changed middle is too large to compare."""
    end = min(len(a), len(b))
    lo = 0
    while lo < end and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < end - lo and a[len(a) - 1 - hi] == b[len(b) - 1 - hi]:
        hi += 1
    a_end, b_end = len(a) - hi, len(b) - hi
    ops: list[Opcode] = [("equal", 0, lo, 0, lo)] if lo else []
    if (a_end - lo) * (b_end - lo) <= MAX_COMPARED:
        matcher = difflib.SequenceMatcher(None, a[lo:a_end], b[lo:b_end])
        ops += [
            (t, i1 + lo, i2 + lo, j1 + lo, j2 + lo) for t, i1, i2, j1, j2 in matcher.get_opcodes()
        ]
    elif a_end > lo or b_end > lo:
        tag = "replace" if a_end > lo and b_end > lo else "delete" if a_end > lo else "insert"
        ops.append((tag, lo, a_end, lo, b_end))
    if hi:
        ops.append(("equal", a_end, len(a), b_end, len(b)))
    return ops


def unified_diff(
    a: Sequence[str], b: Sequence[str], fromfile: str = "", tofile: str = "", n: int = 3
) -> Iterator[str]:
    """difflib.unified_diff's lines (no dates), from the bounded `opcodes`."""
    started = False
    for group in _grouped(opcodes(a, b), n):
        if not started:
            started = True
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
        first, last = group[0], group[-1]
        old, new = _range(first[1], last[2]), _range(first[3], last[4])
        yield f"@@ -{old} +{new} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in a[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in b[j1:j2])


def _grouped(ops: list[Opcode], n: int) -> Iterator[list[Opcode]]:
    """SequenceMatcher.get_grouped_opcodes, on opcodes already made."""
    if not ops:
        ops = [("equal", 0, 1, 0, 1)]
    if ops[0][0] == "equal":
        t, i1, i2, j1, j2 = ops[0]
        ops[0] = t, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if ops[-1][0] == "equal":
        t, i1, i2, j1, j2 = ops[-1]
        ops[-1] = t, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    group: list[Opcode] = []
    for t, i1, i2, j1, j2 in ops:
        if t == "equal" and i2 - i1 > 2 * n:  # a long stretch ends one hunk, starts another
            group.append((t, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((t, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _range(start: int, stop: int) -> str:
    """A unified diff's `start,length` (difflib's _format_range_unified)."""
    beginning, length = start + 1, stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1  # an empty range begins at the line before it
    return f"{beginning},{length}"
