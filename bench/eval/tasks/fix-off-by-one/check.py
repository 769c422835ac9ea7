"""Success: count_to(n) returns 1..n inclusive (checked with the check's own asserts)."""

from checklib import assert_code, workspace

ws = workspace()

assert_code(
    ws,
    "from count import count_to\n"
    "assert count_to(3) == [1, 2, 3]\n"
    "assert count_to(1) == [1]\n"
    "assert count_to(0) == []\n"
    "assert count_to(6) == [1, 2, 3, 4, 5, 6]",
)
