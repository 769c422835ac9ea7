"""The map's memory between runs: each file's symbols, valid while its size and mtime
stay the same, in one JSON file per workspace under bosun's data folder.

The file is read as untrusted input: anything that does not have the expected shape is
dropped (the file is parsed again), a file too large to be real is not read at all, and
writes go to a temporary file renamed into place, so a crash never leaves half a cache.
JSON, not pickle: loading a pickle someone planted would run their code.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from agent.session import bosun_home

VERSION = 1
MAX_CACHE_BYTES = 64 * 1024 * 1024

Entry = dict[str, Any]  # {"size", "mtime", "lang", "defs", "refs", "note", "skip"}


def cache_file(root: Path) -> Path:
    key = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return bosun_home() / "repomap" / f"{key}.json"


def _valid(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    if not all(isinstance(entry.get(k), int) for k in ("size", "mtime")):
        return False
    if not isinstance(entry.get("skip"), str) or not isinstance(entry.get("note"), str):
        return False
    if not isinstance(entry.get("lang"), str):
        return False
    defs, refs = entry.get("defs"), entry.get("refs")
    if not isinstance(defs, list) or not isinstance(refs, dict):
        return False
    for d in defs:
        if not (
            isinstance(d, list)
            and len(d) == 4
            and isinstance(d[0], str)
            and isinstance(d[1], str)
            and isinstance(d[2], int)
            and isinstance(d[3], str)
        ):
            return False
    return all(isinstance(v, int) for v in refs.values())


def load(root: Path) -> dict[str, Entry]:
    """The cached entries for this workspace; {} when there is no usable cache."""
    path = cache_file(root)
    try:
        with path.open("rb") as fh:
            if os.fstat(fh.fileno()).st_size > MAX_CACHE_BYTES:
                return {}
            data = json.loads(fh.read(MAX_CACHE_BYTES + 1))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return {}
    if data.get("root") != str(root) or not isinstance(data.get("files"), dict):
        return {}
    return {k: v for k, v in data["files"].items() if isinstance(k, str) and _valid(v)}


def save(root: Path, files: dict[str, Entry]) -> None:
    """Best effort: a cache that cannot be written only makes the next run slower."""
    path = cache_file(root)
    data = {"version": VERSION, "root": str(root), "files": files}
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if len(text) > MAX_CACHE_BYTES:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except (OSError, UnicodeError):
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def cache_size(root: Path) -> int:
    try:
        return cache_file(root).stat().st_size
    except OSError:
        return 0
