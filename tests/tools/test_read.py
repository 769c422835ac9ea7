"""read_file and list_dir, including the ways a model gets them wrong."""

from __future__ import annotations

import os
from pathlib import Path

from agent.tools.files import MAX_LINE_CHARS, MAX_READ_BYTES
from tests.tools.conftest import RunTool


def test_read_file_numbers_lines(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "a.py").write_text("one\ntwo\nthree\n", encoding="utf-8")
    result = run_tool("read_file", path="a.py")
    assert not result.is_error
    assert result.content == "1\tone\n2\ttwo\n3\tthree"


def test_read_file_offset_and_limit_say_what_is_shown(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "a.txt").write_text("".join(f"l{i}\n" for i in range(1, 21)), encoding="utf-8")
    result = run_tool("read_file", path="a.txt", offset=5, limit=3)
    assert result.content.splitlines() == ["5\tl5", "6\tl6", "7\tl7", "(showing lines 5-7 of 20)"]
    past = run_tool("read_file", path="a.txt", offset=50)
    assert not past.is_error and "has 20 lines; offset 50 is past the end" in past.content


def test_read_missing_file_is_an_error_result(run_tool: RunTool) -> None:
    result = run_tool("read_file", path="nope.txt")
    assert result.is_error and result.content.startswith("Error: nope.txt: no such file")


def test_read_binary_file_is_refused(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    result = run_tool("read_file", path="img.png")
    assert result.is_error and "binary" in result.content


def test_read_non_utf8_text_is_decoded_with_replacement(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "latin.txt").write_bytes("caf\xe9 ok\n".encode("latin-1"))
    result = run_tool("read_file", path="latin.txt")
    assert not result.is_error and result.content == "1\tcaf\ufffd ok"


def test_read_huge_file_is_capped_and_says_so(run_tool: RunTool, workspace: Path) -> None:
    line = "x" * 99 + "\n"
    (workspace / "big.txt").write_text(line * (MAX_READ_BYTES // 100 * 2), encoding="utf-8")
    result = run_tool("read_file", path="big.txt", limit=10**9)
    assert not result.is_error
    assert f"larger than {MAX_READ_BYTES} bytes" in result.content
    assert len(result.content) < MAX_READ_BYTES * 1.2


def test_read_minified_line_is_clipped(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "min.js").write_text("a" * (MAX_LINE_CHARS * 5), encoding="utf-8")
    result = run_tool("read_file", path="min.js")
    assert len(result.content) < MAX_LINE_CHARS + 100 and "more characters" in result.content


def test_read_directory_and_fifo_are_refused(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    assert "is a directory" in run_tool("read_file", path="sub").content
    os.mkfifo(workspace / "pipe")
    result = run_tool("read_file", path="pipe")  # would block forever without O_NONBLOCK
    assert result.is_error and "not a regular file" in result.content


def test_list_dir_marks_folders_and_hides_git(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / ".git").mkdir()
    result = run_tool("list_dir")
    assert result.content.splitlines() == ["src/", "notes.txt"]
    assert "no such directory" in run_tool("list_dir", path="missing").content
    assert "is a file" in run_tool("list_dir", path="notes.txt").content


def test_bad_arguments_are_reported_before_the_call(run_tool: RunTool) -> None:
    wrong_type = run_tool("read_file", path=3)
    assert wrong_type.is_error and "invalid arguments for read_file" in wrong_type.content
    missing = run_tool("edit_file", path="notes.txt", old="hello")
    assert missing.is_error and "'new' is a required property" in missing.content
    extra = run_tool("bash", command="true", cwd="/")
    assert extra.is_error and "'cwd' was unexpected" in extra.content


def test_integral_floats_count_as_integers_and_limit_is_checked(run_tool: RunTool) -> None:
    assert run_tool("read_file", path="notes.txt", offset=1.0, limit=5.0).content == (
        "1\thello from bosun"
    )
    zero = run_tool("read_file", path="notes.txt", limit=0)
    assert zero.is_error and "limit must be at least 1" in zero.content
