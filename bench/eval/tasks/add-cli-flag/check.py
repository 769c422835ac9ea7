"""Success: greet.py prints the greeting, shouted with --shout."""

from checklib import fail, output_of, workspace

ws = workspace()

cases = [(["Ada"], "Hello, Ada!"), (["--shout", "Ada"], "HELLO, ADA!"), ([], "Hello, world!")]
for args, want in cases:
    got = output_of(ws, "greet.py", *args).strip()
    if got != want:
        fail(f"greet.py {' '.join(args)} printed {got!r}, want {want!r}")
