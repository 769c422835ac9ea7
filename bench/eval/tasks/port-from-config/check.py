"""Success: port.txt holds the port from config.json (8123)."""

from checklib import fail, text, workspace

ws = workspace()

got = text(ws, "port.txt").strip()
if got != "8123":
    fail(f"port.txt holds {got[:80]!r}, not 8123")
