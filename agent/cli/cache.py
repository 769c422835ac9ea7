"""`bosun cache info | clear`: the saved prompt-head states (drivers/prefix_cache.py).

Kept apart from agent/cli/listing.py, which loads profiles and templates: looking at a
folder of files should not cost a second of imports.
"""

from __future__ import annotations

import time
from typing import Any

from drivers.prefix_cache import cache_dir, clear, entries, max_bytes


def human_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def age(seconds: float) -> str:
    """12s, 5m, 3h, 2d: how long ago, at a glance."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size:.0f}{unit}"
    return f"{seconds:.0f}s"


def info() -> tuple[list[dict[str, Any]], str]:
    """One row per saved state, most recently used first, and a line with the total
    against the cap. A damaged file is listed too (it is deleted when next met)."""
    folder, cap = cache_dir(), max_bytes()
    now = time.time()
    rows: list[dict[str, Any]] = []
    total = 0
    for entry in entries(folder):
        total += entry.size
        header = entry.header
        rows.append(
            {
                "model": header.label if header else "(damaged)",
                "tokens": len(header.tokens) if header else 0,
                "size": entry.size,
                "saved": round(now - header.created) if header else None,
                "used": round(now - entry.used),
                "file": entry.path.name,
            }
        )
    states = f"{len(rows)} saved state{'' if len(rows) == 1 else 's'}, {human_size(total)}"
    limit = f"of a {human_size(cap)} cap" if cap else "(off: BOSUN_PREFIX_CACHE_MAX=0)"
    return rows, f"{states} {limit}, in {folder}"


def text_rows(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Rows for people: sizes and ages in words."""
    return [
        {
            "model": row["model"],
            "tokens": str(row["tokens"]),
            "size": human_size(row["size"]),
            "saved": "" if row["saved"] is None else age(row["saved"]) + " ago",
            "used": age(row["used"]) + " ago",
            "file": row["file"],
        }
        for row in rows
    ]


def clear_all() -> str:
    folder = cache_dir()
    files, size = clear(folder)
    plural = "" if files == 1 else "s"
    return f"removed {files} saved state file{plural} ({human_size(size)}) from {folder}"
