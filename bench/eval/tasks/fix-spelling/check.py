"""Success: every docs/*.md has receive and is otherwise unchanged."""

from checklib import fail, text, workspace

ws = workspace()

want = {
    "a.md": "You will receive an email.",
    "b.md": "Servers receive requests.",
    "c.md": "# FAQ\n\nDid you receive it? Yes.",
}
for name, body in want.items():
    got = text(ws, f"docs/{name}").rstrip("\n")
    if got != body:
        fail(f"docs/{name} is {got[:120]!r}")
