"""Success: files.txt lists exactly the four .py files (any order)."""

from checklib import fail, text, workspace

ws = workspace()

got = {x.strip().removeprefix("./") for x in text(ws, "files.txt").splitlines() if x.strip()}
want = {"app.py", "lib/__init__.py", "lib/util.py", "tests/test_app.py"}
if got != want:
    fail(f"files.txt lists {sorted(got)}, want {sorted(want)}")
