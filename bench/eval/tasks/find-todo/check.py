"""Success: todo.txt names billing.py (src/ prefix allowed)."""

from checklib import fail, text, workspace

ws = workspace()

got = text(ws, "todo.txt").strip().removeprefix("./").removeprefix("src/")
if got != "billing.py":
    fail(f"todo.txt holds {got[:80]!r}, not billing.py")
