"""Success: status.txt holds the word done and nothing else."""

from checklib import fail, text, workspace

ws = workspace()

got = text(ws, "status.txt").strip()
if got.lower() != "done":
    fail(f"status.txt holds {got[:80]!r}, not done")
