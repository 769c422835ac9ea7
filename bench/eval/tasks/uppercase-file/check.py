"""Success: name.txt holds ADA LOVELACE."""

from checklib import fail, text, workspace

ws = workspace()

got = text(ws, "name.txt").strip()
if got != "ADA LOVELACE":
    fail(f"name.txt holds {got[:80]!r}")
