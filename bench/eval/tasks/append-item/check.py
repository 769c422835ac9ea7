"""Success: shopping.md keeps its items and ends with - milk."""

from checklib import fail, text, workspace

ws = workspace()

lines = [x.strip() for x in text(ws, "shopping.md").splitlines() if x.strip()]
if lines != ["# Shopping", "- bread", "- eggs", "- milk"]:
    fail(f"shopping.md lines are {lines}")
