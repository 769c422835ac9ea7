"""Success: greeting.txt has Goodbye instead of Hello and is otherwise unchanged."""

from checklib import fail, text, workspace

ws = workspace()

got = text(ws, "greeting.txt").rstrip("\n")
if got != "Goodbye, world!\nHave a nice day.":
    fail(f"greeting.txt is {got!r}")
