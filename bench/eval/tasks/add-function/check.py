"""Success: mathlib.multiply multiplies and mathlib.add still adds."""

from checklib import assert_code, workspace

ws = workspace()

assert_code(
    ws,
    "from mathlib import add, multiply\n"
    "assert multiply(3, 4) == 12\n"
    "assert multiply(-2, 5) == -10\n"
    "assert add(2, 3) == 5",
)
