"""Success: north.txt holds 160."""

from checklib import fail, text, workspace

ws = workspace()

got = text(ws, "north.txt").strip()
if got not in ("160", "160.0"):
    fail(f"north.txt holds {got[:80]!r}, not 160")
