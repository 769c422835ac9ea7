"""Success: total.txt holds 105, the sum of numbers.txt."""

from checklib import fail, text, workspace

ws = workspace()

got = text(ws, "total.txt").strip()
if got != "105":
    fail(f"total.txt holds {got[:80]!r}, not 105")
