"""Success: greetings.hello works and test_greetings.py has at least one passing test."""

from checklib import assert_code, fail, run_python, text, workspace

ws = workspace()

assert_code(
    ws,
    "from greetings import hello\n"
    "assert hello('Ada') == 'Hello, Ada!'\n"
    "assert hello('Bo') == 'Hello, Bo!'",
)
if not (ws / "greetings" / "__init__.py").is_file():
    fail("greetings/__init__.py is missing")
text(ws, "test_greetings.py")
proc = run_python(ws, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_greetings.py")
if proc.returncode != 0:
    fail(f"pytest test_greetings.py exited {proc.returncode}: {proc.stdout[-300:]}")
