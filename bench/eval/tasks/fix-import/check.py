"""Success: main.py runs and prints my-first-post, still through slugify."""

from checklib import fail, output_of, text, workspace

ws = workspace()

out = output_of(ws, "main.py").strip()
if out != "my-first-post":
    fail(f"main.py printed {out!r}")
if "slugify" not in text(ws, "main.py"):
    fail("main.py no longer uses slugify")
