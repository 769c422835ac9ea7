"""Success: count.txt holds 7, the number of lines in data.txt."""

from checklib import fail, text, workspace

ws = workspace()

got = text(ws, "count.txt").strip()
if got != "7":
    fail(f"count.txt holds {got[:80]!r}, not 7")
