"""Success: copy.txt has the same text as the untouched template.txt."""

from checklib import fail, text, workspace

ws = workspace()

want = text(ws, "template.txt").rstrip("\n")
if text(ws, "copy.txt").rstrip("\n") != want:
    fail("copy.txt differs from template.txt")
if want != "Dear customer,\nyour order 4471 has shipped.\nThanks!":
    fail("template.txt was changed")
