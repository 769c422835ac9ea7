"""write_file and edit_file: exact edits, helpful refusals, and the diff preview."""

from __future__ import annotations

from pathlib import Path

from agent.history import ToolCall
from agent.tools import ToolContext, default_registry
from agent.tools.edit import closest_lines
from tests.tools.conftest import RunTool

CODE = "def f(x):\n    return x + 1\n\n\ndef g(y):\n    return y * 2\n"


def test_write_creates_file_and_parent_folders(run_tool: RunTool, workspace: Path) -> None:
    result = run_tool("write_file", path="pkg/sub/mod.py", content=CODE)
    assert not result.is_error and result.content.startswith("Created pkg/sub/mod.py (6 lines")
    assert (workspace / "pkg/sub/mod.py").read_text(encoding="utf-8") == CODE


def test_write_overwrites_and_says_what_was_there(run_tool: RunTool, workspace: Path) -> None:
    result = run_tool("write_file", path="notes.txt", content="new\n")
    assert result.content == "Wrote notes.txt (1 line, 4 bytes; it had 1 line)"
    assert (workspace / "notes.txt").read_text(encoding="utf-8") == "new\n"


def test_write_to_a_directory_is_an_error(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "d").mkdir()
    result = run_tool("write_file", path="d", content="x")
    assert result.is_error and "is a directory" in result.content


def test_edit_replaces_exactly_once_and_shows_the_result(
    run_tool: RunTool, workspace: Path
) -> None:
    (workspace / "m.py").write_text(CODE, encoding="utf-8")
    result = run_tool("edit_file", path="m.py", old="return y * 2", new="return y * 3")
    assert not result.is_error
    assert result.content.startswith("Edited m.py; line 6 now reads:")
    assert "6\t    return y * 3" in result.content
    assert (workspace / "m.py").read_text(encoding="utf-8") == CODE.replace("y * 2", "y * 3")


def test_edit_with_wrong_indentation_shows_the_closest_lines(
    run_tool: RunTool, workspace: Path
) -> None:
    (workspace / "m.py").write_text(CODE, encoding="utf-8")
    result = run_tool("edit_file", path="m.py", old="def g(y):\n  return y * 2", new="pass")
    assert result.is_error
    assert "differs only in whitespace" in result.content
    assert "5\tdef g(y):\n     6\t    return y * 2" in result.content
    assert (workspace / "m.py").read_text(encoding="utf-8") == CODE


def test_edit_with_nothing_close_says_so(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "m.py").write_text(CODE, encoding="utf-8")
    result = run_tool("edit_file", path="m.py", old="class Zebra(Protocol):", new="")
    assert result.is_error and "nothing in it looks close" in result.content


def test_ambiguous_edit_is_refused_with_line_numbers(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "m.py").write_text(CODE, encoding="utf-8")
    result = run_tool("edit_file", path="m.py", old="    return", new="    yield")
    assert result.is_error
    assert "occurs 2 times" in result.content and "lines 2, 6" in result.content
    assert (workspace / "m.py").read_text(encoding="utf-8") == CODE
    every = run_tool("edit_file", path="m.py", old="    return", new="    yield", replace_all=True)
    assert not every.is_error and "replaced 2 occurrences" in every.content
    assert (workspace / "m.py").read_text(encoding="utf-8").count("yield") == 2


def test_edit_refusals(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\x00\x01abc")
    (workspace / "latin.txt").write_bytes(b"caf\xe9\n")
    cases = {
        ("nope.py", "a", "b"): "no such file; to create it use write_file",
        ("notes.txt", "", "b"): "old is empty",
        ("notes.txt", "hello", "hello"): "nothing would change",
        ("blob.bin", "abc", "x"): "binary file",
        ("latin.txt", "caf", "x"): "not UTF-8",
    }
    for (path, old, new), message in cases.items():
        result = run_tool("edit_file", path=path, old=old, new=new)
        assert result.is_error and message in result.content, (path, result.content)
    assert (workspace / "latin.txt").read_bytes() == b"caf\xe9\n"


def test_edit_keeps_crlf_line_endings(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    result = run_tool("edit_file", path="w.txt", old="a\nb", new="A\nB")
    assert not result.is_error
    assert (workspace / "w.txt").read_bytes() == b"A\r\nB\r\nc\r\n"


def test_closest_lines_scales_to_big_files() -> None:
    text = "".join(f"value_{i} = compute({i})\n" for i in range(20_000))
    near = closest_lines(text, "value_12345 = compute(12346)")
    assert near.startswith(" 12346\tvalue_12345")


def test_preview_is_a_unified_diff_and_changes_nothing(workspace: Path) -> None:
    registry, ctx = default_registry(), ToolContext(workspace)
    edit = ToolCall("c1", "edit_file", {"path": "notes.txt", "old": "hello", "new": "goodbye"})
    diff = registry.preview(edit, ctx)
    assert diff is not None
    assert diff.splitlines()[:2] == ["--- a/notes.txt", "+++ b/notes.txt"]
    assert "-hello from bosun" in diff and "+goodbye from bosun" in diff
    new = registry.preview(ToolCall("c2", "write_file", {"path": "n.txt", "content": "x"}), ctx)
    assert new is not None and new.startswith("--- /dev/null\n+++ b/n.txt")
    assert "No newline at end of file" in new
    failing = ToolCall("c3", "edit_file", {"path": "notes.txt", "old": "absent", "new": "x"})
    assert (registry.preview(failing, ctx) or "").startswith("(this call would fail: old text")
    assert registry.preview(ToolCall("c4", "bash", {"command": "ls"}), ctx) is None
    assert (workspace / "notes.txt").read_text(encoding="utf-8") == "hello from bosun\n"
    assert not (workspace / "n.txt").exists()


def test_unencodable_text_is_an_error_result_not_a_crash(
    run_tool: RunTool, workspace: Path
) -> None:
    lone = "\ud800"  # valid in JSON, impossible in UTF-8
    for result in (
        run_tool("write_file", path="s.txt", content=lone),
        run_tool("write_file", path=f"s{lone}.txt", content="x"),
        run_tool("bash", command=f"echo {lone}"),
    ):
        assert result.is_error and "cannot be encoded" in result.content
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt"]
