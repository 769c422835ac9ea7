"""Success: hello.py exists and prints exactly hello (any case)."""

from checklib import fail, output_of, workspace

ws = workspace()

out = output_of(ws, "hello.py").strip()
if out.lower() != "hello":
    fail(f"hello.py printed {out!r}, not hello")
