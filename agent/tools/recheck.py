"""Re-checking what ripgrep reports, through descriptors that follow no symlink.

rg walks by path: between reading a folder's entries and opening a subfolder, an
attacker's process can swap the subfolder for a symlink out of the workspace, and rg
follows it (an explicit path is followed too). So nothing rg prints is shown as it is:
every listed name must still open from the workspace root one component at a time with
O_NOFOLLOW, and every matched line must be found again, at its number, in the file
opened that way. What fails the re-check was never inside, or is not any more.
"""

from __future__ import annotations

import os
import stat
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from agent.errors import ToolError
from agent.tools.confine import open_in_workspace

COMPARED_CHARS = 200  # enough to tell the line apart; rg may have cut the rest


def still_inside(root: Path, rel: str) -> bool:
    """Whether `rel` opens from `root` without leaving it (O_PATH: no read needed)."""
    try:
        os.close(open_in_workspace(root, rel, os.O_PATH))
    except (ToolError, OSError):
        return False
    return True


@dataclass(frozen=True)
class Match:
    path: str
    number: int
    text: str


def confirmed(root: Path, matches: Iterable[Match]) -> set[Match]:
    """The matches whose line reads the same in the file opened safely now."""
    by_path: dict[str, list[Match]] = defaultdict(list)
    for m in matches:
        by_path[m.path].append(m)
    good: set[Match] = set()
    for path, found in by_path.items():
        wanted = {m.number: m for m in found}
        for number, line in _lines(root, path, set(wanted)):
            m = wanted.get(number)
            if m is not None and _same(line, m.text):
                good.add(m)
    return good


def _same(line: str, shown: str) -> bool:
    line, shown = line.rstrip("\r"), shown.rstrip("\r")
    n = min(len(shown), COMPARED_CHARS)
    return len(line) >= n and line[:n] == shown[:n]


def _lines(root: Path, path: str, wanted: set[int]) -> Iterator[tuple[int, str]]:
    """(number, the line's first characters) for the wanted line numbers, in bounded
    memory however long a line is; blocks holding no wanted line start are only
    counted, so re-checking a match deep in a large file costs a read, not a parse."""
    try:
        fd = open_in_workspace(root, path, os.O_RDONLY | os.O_NONBLOCK)
    except (ToolError, OSError):
        return
    cap = COMPARED_CHARS * 4  # bytes: enough for COMPARED_CHARS characters of UTF-8
    ahead = sorted(wanted, reverse=True)  # the next wanted number is ahead[-1]
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return
        number, head, keep = 1, bytearray(), ahead[-1] == 1
        while ahead and (block := fh.read(1 << 20)):
            count = block.count(b"\n")
            if not keep and ahead[-1] > number + count:  # no wanted line starts here
                number += count
                continue
            pos = 0
            while (nl := block.find(b"\n", pos)) >= 0:
                if keep:
                    head += block[pos : pos + max(0, min(nl - pos, cap - len(head)))]
                    yield number, head.decode("utf-8", errors="replace")
                    ahead.pop()
                    if not ahead:
                        return
                number, head, pos = number + 1, bytearray(), nl + 1
                keep = number == ahead[-1]
            if keep:
                head += block[pos : pos + max(0, cap - len(head))]
        if keep and ahead:
            yield number, head.decode("utf-8", errors="replace")
