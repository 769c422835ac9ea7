"""The saved states' folder, kept tidy: which files are bosun's, and the cap.

Split from drivers/prefix_cache.py (the format and the lookups): everything here works
on names and sizes only, never on a file's content. A name that is not exactly a state's
(`<key>-<tokens>.kv`) or a write in progress (`.<state name>.<random>.part`) is never
touched, so `bosun cache clear` and eviction cannot delete what is not bosun's.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from pathlib import Path

STALE_PART_S = 3600.0  # a `.part` file this old belongs to a write that died
_NAME = re.compile(r"^[0-9a-f]{16}-[0-9a-f]{16}\.kv$")
_PART = re.compile(r"^\.[0-9a-f]{16}-[0-9a-f]{16}\.kv\..*\.part$")


def _drop(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (where the platform lets a folder be fsynced)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _files(folder: Path) -> list[tuple[Path, os.stat_result]]:
    """bosun's state files in `folder` (by exact name), regular files only."""
    found = []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        if not (_NAME.match(name) or _PART.match(name)):
            continue
        path = folder / name
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            found.append((path, info))
    return found


def evict(folder: Path, limit: int, keep: Path | None = None) -> int:
    """Delete least recently used states until the folder's states fit in `limit`, and
    `.part` files of writes that died; returns how many files went."""
    now = time.time()
    states = []
    gone = 0
    for path, info in _files(folder):
        if _PART.match(path.name):
            if now - info.st_mtime > STALE_PART_S:
                _drop(path)
                gone += 1
        else:
            states.append((info.st_mtime, info.st_size, path))
    total = sum(size for _, size, _ in states)
    for _, size, path in sorted(states):
        if total <= limit:
            break
        if path == keep:
            continue
        _drop(path)
        total -= size
        gone += 1
    return gone
