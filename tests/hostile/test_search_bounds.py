"""grep and glob against patterns and repositories built to hang or crash them.

Every call here must come back (a result, an error result) well inside the search's
own time limit; the elapsed-time checks are hang detectors, not benchmarks."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agent.tools.rg import MAX_PATTERN_CHARS, TIMEOUT_S
from agent.tools.search import MAX_IGNORE_FILE_BYTES
from tests.tools.conftest import RunTool

QUICK = TIMEOUT_S / 2  # anything slower than this is a hang held off by the timeout


def timed(run_tool: RunTool, tool: str, **args: object) -> tuple[bool, str]:
    start = time.monotonic()
    result = run_tool(tool, **args)
    assert time.monotonic() - start < QUICK, (tool, args)
    return result.is_error, result.content


# -- grep: patterns ------------------------------------------------------------------


def test_catastrophic_backtracking_is_linear(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "as.txt").write_text("a" * 200_000 + "\n" + "a" * 50_000 + "b\n")
    error, content = timed(run_tool, "grep", pattern="(a+)+$")
    assert not error and content.startswith("as.txt:1: aaaa")
    assert "as.txt:2:" not in content
    error, content = timed(run_tool, "grep", pattern="(x+x+)+y", path="as.txt")
    assert not error and content.startswith("(no matches")


@pytest.mark.parametrize(
    ("pattern", "says"),
    [
        ("(" * 200 + "a" + ")" * 200, None),  # deep nesting: a result, not RecursionError
        ("(" * 999 + "a" + ")" * 999, "nested"),
        ("a{4294967295}", "size limit"),
        ("a{99999999999999999999}", "invalid"),
        ("(?<=a)b", "look-around"),
        ("(", "unclosed group"),
        ("x" * (MAX_PATTERN_CHARS + 1), "at most"),
        ("a\x00b", "NUL"),
        ("[z-a]", "range"),
    ],
)
def test_hostile_patterns_get_one_line_answers(
    run_tool: RunTool, workspace: Path, pattern: str, says: str | None
) -> None:
    (workspace / "as.txt").write_text("aaa\n")
    error, content = timed(run_tool, "grep", pattern=pattern)
    if says is None:
        assert not error and content == "as.txt:1: aaa"
    else:
        assert error and says in content, content
        assert len(content.splitlines()) == 1 and len(content) < 400, content


# -- grep: files -----------------------------------------------------------------------


def test_a_large_named_file_is_searched_whole(run_tool: RunTool, workspace: Path) -> None:
    with open(workspace / "big.log", "wb") as fh:
        fh.write(b"x" * 3_000_000 + b"\nneedle at the end\n")
    assert timed(run_tool, "grep", pattern="needle", path="big.log")[1] == (
        "big.log:2: needle at the end"
    )
    assert timed(run_tool, "grep", pattern="needle")[1] == "big.log:2: needle at the end"


def test_a_file_over_the_walk_limit_is_said_to_be_skipped(
    run_tool: RunTool, workspace: Path
) -> None:
    (workspace / "huge.log").write_bytes(b"x" * 12 * 1024 * 1024 + b"\nneedle\n")
    error, content = timed(run_tool, "grep", pattern="needle")
    assert not error and content.startswith("(no matches")
    assert "files over 10MB are skipped" in content
    # named explicitly, it is searched
    assert timed(run_tool, "grep", pattern="needle", path="huge.log")[1] == "huge.log:2: needle"


def test_a_megabyte_line_is_shown_cut(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "min.js").write_text("var a=1;" * 200_000 + "needle\n")
    error, content = timed(run_tool, "grep", pattern="needle")
    assert not error and content.startswith("min.js:1: var a=1;") and len(content) < 1000


def test_binary_and_nul_files_neither_crash_nor_flood(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\x00\x01needle\x00" * 1000)
    error, content = timed(run_tool, "grep", pattern="needle", path="blob.bin")
    assert not error and content == "blob.bin: binary file matches; not shown"


def test_a_named_fifo_is_refused_not_waited_on(run_tool: RunTool, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    error, content = timed(run_tool, "grep", pattern="x", path="pipe")
    assert error and "not a regular file" in content


def test_matches_are_capped(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "many.txt").write_text("hit\n" * 100_000)
    error, content = timed(run_tool, "grep", pattern="hit")
    lines = content.splitlines()
    assert not error and len(lines) == 101 and lines[-1].startswith("(stopped at 100 matches")


# -- .gitignore bombs ------------------------------------------------------------------


def test_an_invalid_ignore_line_is_skipped_as_git_does(run_tool: RunTool, workspace: Path) -> None:
    (workspace / ".gitignore").write_text("[z-a]\n*.log\n\\\n[\n")
    (workspace / "app.log").write_text("needle\n")
    (workspace / "app.py").write_text("needle\n")
    assert timed(run_tool, "glob", pattern="*")[1].splitlines() == [
        ".gitignore",
        "app.py",
        "notes.txt",
    ]
    assert timed(run_tool, "grep", pattern="needle")[1] == "app.py:1: needle"


def test_a_pathological_ignore_pattern_and_a_long_path_finish(
    run_tool: RunTool, workspace: Path
) -> None:
    # 1000 such lines need more than a search's 1 GiB to match: run without them
    (workspace / ".gitignore").write_text("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\n" * 1000)
    deep = workspace
    for _ in range(20):
        deep = deep / ("a" * 200)
        deep.mkdir()
    (deep / "x.txt").write_text("needle\n")
    error, content = timed(run_tool, "glob", pattern="**/x.txt")
    assert not error and content.splitlines()[0].endswith("/x.txt")
    assert "more memory than allowed" in content
    found = timed(run_tool, "grep", pattern="needle")[1]
    assert found.splitlines()[0].endswith("x.txt:1: needle")


def test_a_huge_ignore_file_is_not_applied_and_that_is_said(
    run_tool: RunTool, workspace: Path
) -> None:
    with open(workspace / ".gitignore", "wb") as fh:
        fh.write(b"*.log\n")
        fh.truncate(64 * 1024 * 1024)
    (workspace / "app.log").write_text("needle\n")
    error, content = timed(run_tool, "glob", pattern="*.log")
    assert not error and content.splitlines()[0] == "app.log"
    assert f"{MAX_IGNORE_FILE_BYTES // 1024 // 1024} MB" not in content  # the real size
    assert ".gitignore is 64 MB" in content


@pytest.mark.parametrize("where", [".gitignore", "sub/.gitignore", "sub/.ignore"])
def test_an_ignore_file_that_is_a_fifo_does_not_stall_the_search(
    run_tool: RunTool, workspace: Path, where: str
) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "a.txt").write_text("needle\n")
    os.mkfifo(workspace / where)
    error, content = timed(run_tool, "glob", pattern="**/*.txt")
    assert not error and "sub/a.txt" in content and "named pipe" in content
    error, content = timed(run_tool, "grep", pattern="needle")
    assert not error and content.startswith("sub/a.txt:1: needle")


def test_a_bad_glob_pattern_is_one_line(run_tool: RunTool) -> None:
    for pattern in ["[z-a]", "x" * (MAX_PATTERN_CHARS + 1), "a\x00"]:
        error, content = timed(run_tool, "glob", pattern=pattern)
        assert error and len(content.splitlines()) == 1, content


def test_many_files_are_counted_not_all_listed(run_tool: RunTool, workspace: Path) -> None:
    many = workspace / "many"
    many.mkdir()
    for i in range(3000):
        (many / f"f{i:04}.txt").touch()
    error, content = timed(run_tool, "glob", pattern="many/*.txt")
    lines = content.splitlines()
    assert (
        not error and len(lines) == 201 and lines[-1] == "(2800 more not shown; narrow the pattern)"
    )
