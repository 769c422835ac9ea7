"""Success: calc.py runs, prints 42, and answer() still returns 42."""

from checklib import assert_code, fail, output_of, workspace

ws = workspace()

out = output_of(ws, "calc.py").strip()
if out != "42":
    fail(f"calc.py printed {out!r}")
assert_code(ws, "import calc\nassert calc.answer() == 42")
