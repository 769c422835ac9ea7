"""Success: no .py file mentions foo; util.bar doubles; main.py and report.py still run."""

from checklib import assert_code, fail, mentions, output_of, python_files, workspace

ws = workspace()

for path in python_files(ws):
    if mentions(path.read_text(encoding="utf-8"), "foo"):
        fail(f"{path.name} still mentions foo")
if output_of(ws, "main.py").strip() != "42":
    fail("main.py does not print 42")
if output_of(ws, "report.py").strip() != "[2, 4]":
    fail("report.py does not print [2, 4]")
assert_code(ws, "from util import bar\nassert bar(5) == 10")
