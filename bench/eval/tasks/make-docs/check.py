"""Success: docs/index.md starts with the heading # Docs."""

from checklib import fail, text, workspace

ws = workspace()

lines = [x.strip() for x in text(ws, "docs/index.md").splitlines() if x.strip()]
if not lines or lines[0] != "# Docs":
    fail(f"docs/index.md does not start with # Docs: {lines[:2]}")
