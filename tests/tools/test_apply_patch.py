"""apply_patch: Codex's patch format, applied whole or not at all, confined, approved
with its diff, checkpointed for /undo, and reached from a bash heredoc too."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agent.history import ToolCall, ToolResult
from agent.tools import ToolContext, default_registry
from agent.tools.checkpoints import Checkpoints
from agent.tools.orchestrator import Gate, run_call
from agent.tools.patch import routed
from agent.tools.patch_format import MAX_PATCH_CHARS, PatchError, parse_patch, seek
from agent.tools.permissions import Approval

TOOLS = default_registry(changes=["+apply_patch"])
CODE = "def f(x):\n    return x + 1\n\n\ndef g(y):\n    return y * 2\n"


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


def apply(ws: Path, text: str) -> ToolResult:
    return TOOLS.execute(ToolCall("p1", "apply_patch", {"input": text}), ToolContext(ws))


def files(ws: Path) -> dict[str, str]:
    return {
        str(p.relative_to(ws)): p.read_text(encoding="utf-8")
        for p in sorted(ws.rglob("*"))
        if p.is_file()
    }


def test_add_file_makes_folders_and_says_what_it_did(workspace: Path) -> None:
    result = apply(workspace, patch("*** Add File: pkg/new.py", "+a = 1", "+b = 2"))
    assert not result.is_error, result.content
    assert result.content == "Applied the patch:\nA pkg/new.py (2 lines)"
    assert (workspace / "pkg/new.py").read_text() == "a = 1\nb = 2\n"


def test_update_with_several_hunks_and_context_lines(workspace: Path) -> None:
    (workspace / "m.py").write_text(CODE)
    text = patch(
        "*** Update File: m.py",
        "@@ def f(x):",
        "-    return x + 1",
        "+    return x + 10",
        "@@ def g(y):",
        "-    return y * 2",
        "+    return y * 20",
    )
    result = apply(workspace, text)
    assert not result.is_error, result.content
    assert "M m.py (2 hunks)" in result.content
    assert (workspace / "m.py").read_text() == CODE.replace("+ 1", "+ 10").replace("* 2", "* 20")


def test_the_first_hunk_may_omit_its_marker_and_a_bare_add_goes_to_the_end(
    workspace: Path,
) -> None:
    (workspace / "m.py").write_text(CODE)
    text = patch(
        "*** Update File: m.py", " def g(y):", "-    return y * 2", "+    pass", "@@", "+# end"
    )
    assert not apply(workspace, text).is_error
    assert (workspace / "m.py").read_text() == CODE.replace("return y * 2", "pass") + "# end\n"


def test_move_renames_with_the_change(workspace: Path) -> None:
    (workspace / "old.py").write_text(CODE)
    text = patch(
        "*** Update File: old.py", "*** Move to: sub/new.py", "@@", "-def f(x):", "+def h(x):"
    )
    result = apply(workspace, text)
    assert not result.is_error and "R old.py -> sub/new.py" in result.content
    assert not (workspace / "old.py").exists()
    assert (workspace / "sub/new.py").read_text() == CODE.replace("def f", "def h")


def test_delete_removes_a_file(workspace: Path) -> None:
    result = apply(workspace, patch("*** Delete File: notes.txt"))
    assert not result.is_error and result.content.endswith("D notes.txt")
    assert not (workspace / "notes.txt").exists()


def test_end_of_file_marker_picks_the_last_occurrence(workspace: Path) -> None:
    (workspace / "t.txt").write_text("x\nend\nmid\nx\nend\n")
    text = patch("*** Update File: t.txt", "@@", " x", "-end", "+END", "*** End of File")
    assert not apply(workspace, text).is_error
    assert (workspace / "t.txt").read_text() == "x\nend\nmid\nx\nEND\n"


@pytest.mark.parametrize(
    ("in_file", "in_patch"),
    [
        ("    return 1   ", "    return 1"),  # trailing whitespace
        ("\t\treturn 1", "    return 1"),  # surrounding whitespace
        ("msg = “it’s — done”", 'msg = "it\'s - done"'),  # typographic punctuation
        ("a\u00a0b", "a b"),  # a no-break space
    ],
)
def test_hunks_are_found_with_codex_leniency(workspace: Path, in_file: str, in_patch: str) -> None:
    (workspace / "f.py").write_text(f"top\n{in_file}\nbottom\n", encoding="utf-8")
    text = patch("*** Update File: f.py", "@@", " top", f"-{in_patch}", "+new", " bottom")
    result = apply(workspace, text)
    assert not result.is_error, result.content
    assert (workspace / "f.py").read_text() == "top\nnew\nbottom\n"


def test_the_exact_match_wins_over_a_fuzzy_one_earlier(workspace: Path) -> None:
    (workspace / "f.py").write_text("x = 1  \nx = 1\n")
    assert not apply(workspace, patch("*** Update File: f.py", "@@", "-x = 1", "+y")).is_error
    assert (workspace / "f.py").read_text() == "x = 1  \ny\n"


def test_unicode_text_is_kept(workspace: Path) -> None:
    (workspace / "u.txt").write_text("héllo wörld\n日本語\n", encoding="utf-8")
    text = patch("*** Update File: u.txt", "@@", "-日本語", "+中文 ✓", "*** Add File: e.txt", "+ñ")
    assert not apply(workspace, text).is_error
    assert (workspace / "u.txt").read_text(encoding="utf-8") == "héllo wörld\n中文 ✓\n"
    assert (workspace / "e.txt").read_text(encoding="utf-8") == "ñ\n"


def test_padded_markers_and_a_heredoc_wrapper_are_accepted(workspace: Path) -> None:
    text = "<<'EOF'\n*** Begin Patch \n  *** Add File: a.txt\n+a\n *** End Patch\nEOF\n"
    assert not apply(workspace, text).is_error
    assert (workspace / "a.txt").read_text() == "a\n"


def test_crlf_files_keep_crlf(workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    assert not apply(workspace, patch("*** Update File: w.txt", "@@", "-two", "+2")).is_error
    assert (workspace / "w.txt").read_bytes() == b"one\r\n2\r\n"


def test_missing_context_names_the_file_and_hunk_and_changes_nothing(workspace: Path) -> None:
    (workspace / "m.py").write_text(CODE)
    text = patch(
        "*** Update File: m.py",
        "@@",
        "-    return x + 1",
        "+    return 0",
        "@@",
        "-    return z",
        "+    return 1",
    )
    result = apply(workspace, text)
    assert result.is_error
    assert "m.py, hunk 2" in result.content and "return z" in result.content
    assert "nothing was changed" in result.content
    assert (workspace / "m.py").read_text() == CODE


def test_a_second_file_that_fails_leaves_the_first_untouched(workspace: Path) -> None:
    before = files(workspace)
    text = patch(
        "*** Add File: first.txt",
        "+made",
        "*** Update File: notes.txt",
        "@@ no such line",
        "-hello",
        "+bye",
        "*** Delete File: notes.txt",
    )
    result = apply(workspace, text)
    assert result.is_error and "notes.txt" in result.content and "no such line" in result.content
    assert files(workspace) == before


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (patch(), "no operations"),
        ("", "first line"),
        ("*** Begin Patch\n*** Add File: a\n+x\n", "last line"),
        (patch("*** Update File: notes.txt"), "has no hunks"),
        (patch("*** Frobnicate File: a"), "is not an operation"),
        (patch("*** Update File: notes.txt", "@@", "?bad"), "every hunk line starts"),
        (patch("*** Update File: notes.txt", "@@", "-hello from bosun", "oops"), "must start with"),
        (patch("*** Update File: missing.txt", "@@", "-a", "+b"), "no such file"),
        (patch("*** Delete File: missing.txt"), "no such file"),
        (patch("*** Add File: "), "needs a file path"),
    ],
)
def test_malformed_patches_are_clear_errors(workspace: Path, text: str, said: str) -> None:
    before = files(workspace)
    result = apply(workspace, text)
    assert result.is_error and said in result.content, result.content
    assert files(workspace) == before


@pytest.mark.parametrize("path", ["../escape.txt", "/etc/bosun-escape.txt", "a/../../x.txt"])
def test_paths_outside_the_workspace_are_refused(workspace: Path, path: str) -> None:
    result = apply(workspace, patch("*** Add File: ok.txt", "+ok", f"*** Add File: {path}", "+x"))
    assert result.is_error and "outside the workspace" in result.content
    assert not (workspace / "ok.txt").exists()
    assert not (workspace.parent / "escape.txt").exists()


def test_a_link_out_of_the_workspace_is_refused(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (workspace / "link.txt").symlink_to(outside)
    result = apply(workspace, patch("*** Update File: link.txt", "@@", "-secret", "+pwned"))
    assert result.is_error and "outside the workspace" in result.content
    assert outside.read_text() == "secret\n"


def test_a_link_inside_is_edited_through_but_never_deleted_or_moved(workspace: Path) -> None:
    (workspace / "link.txt").symlink_to("notes.txt")
    ok = apply(workspace, patch("*** Update File: link.txt", "@@", "-hello from bosun", "+hi"))
    assert not ok.is_error  # as edit_file: the file it names changes
    assert (workspace / "notes.txt").read_text() == "hi\n"
    gone = apply(workspace, patch("*** Delete File: link.txt"))
    assert gone.is_error and "symlink" in gone.content
    assert (workspace / "link.txt").is_symlink() and (workspace / "notes.txt").exists()


def test_deleting_a_folder_is_refused(workspace: Path) -> None:
    (workspace / "d").mkdir()
    (workspace / "d/keep.txt").write_text("k\n")
    result = apply(workspace, patch("*** Delete File: d"))
    assert result.is_error and "is a directory" in result.content
    assert (workspace / "d/keep.txt").read_text() == "k\n"


def test_the_preview_shows_every_file_and_a_no_op_is_futile(workspace: Path) -> None:
    (workspace / "m.py").write_text(CODE)
    text = patch(
        "*** Add File: new.txt",
        "+fresh",
        "*** Update File: m.py",
        "*** Move to: moved.py",
        "@@",
        "-def f(x):",
        "+def h(x):",
        "*** Delete File: notes.txt",
    )
    call = ToolCall("p", "apply_patch", {"input": text})
    shown = TOOLS.preview(call, ToolContext(workspace))
    assert shown is not None
    assert "+++ b/new.txt" in shown and "+fresh" in shown
    assert "(moves m.py to moved.py)" in shown and "--- a/m.py" in shown
    assert "+++ b/moved.py" in shown and "-def f(x):" in shown and "+def h(x):" in shown
    assert "--- a/notes.txt" in shown and "+++ /dev/null" in shown
    same = ToolCall(
        "p", "apply_patch", {"input": patch("*** Add File: notes.txt", "+hello from bosun")}
    )
    assert TOOLS.futile(same, ToolContext(workspace)) is not None


def test_undo_puts_back_every_file_a_patch_touched(workspace: Path) -> None:
    (workspace / "m.py").write_text(CODE)
    (workspace / "gone.txt").write_text("bye\n")
    before = files(workspace)
    checkpoints = Checkpoints(workspace)
    checkpoints.new_request()
    text = patch(
        "*** Add File: sub/new.txt",
        "+fresh",
        "*** Update File: notes.txt",
        "@@",
        "-hello from bosun",
        "+changed",
        "*** Update File: m.py",
        "*** Move to: moved.py",
        "@@",
        "-def f(x):",
        "+def h(x):",
        "*** Delete File: gone.txt",
    )
    call = ToolCall("c1", "apply_patch", {"input": text})
    outcome = run_call(call, TOOLS, workspace, Gate("auto"), checkpoints)
    assert not outcome.result.is_error, outcome.result.content
    assert files(workspace) != before
    undone = checkpoints.undo()
    assert sorted(undone.restored) == ["gone.txt", "m.py", "moved.py", "notes.txt", "sub/new.txt"]
    assert files(workspace) == before


HEREDOC = (
    "apply_patch <<'EOF'\n"
    + patch("*** Update File: notes.txt", "@@", "-hello from bosun", "+routed")
    + "EOF\n"
)


@pytest.mark.parametrize(
    "command",
    [
        HEREDOC,
        HEREDOC.replace("<<'EOF'", "<<EOF"),
        "apply_patch '"
        + patch("*** Update File: notes.txt", "@@", "-hello from bosun", "+routed")
        + "'",
    ],
)
def test_a_bash_apply_patch_goes_to_the_tool(workspace: Path, command: str) -> None:
    checkpoints = Checkpoints(workspace)
    checkpoints.new_request()
    call = ToolCall("c1", "bash", {"command": command})
    outcome = run_call(call, TOOLS, workspace, Gate("auto-edit"), checkpoints)
    assert not outcome.result.is_error and outcome.result.content.startswith("Applied the patch")
    assert (workspace / "notes.txt").read_text() == "routed\n"
    checkpoints.undo()
    assert (workspace / "notes.txt").read_text() == "hello from bosun\n"


def test_a_routed_patch_asks_as_apply_patch_with_its_diff(workspace: Path) -> None:
    seen: list[tuple[str, str | None]] = []

    def approver(call: ToolCall, tool: object) -> Approval:
        seen.append((call.name, TOOLS.preview(call, ToolContext(workspace))))
        return "no"

    outcome = run_call(
        ToolCall("c1", "bash", {"command": HEREDOC}), TOOLS, workspace, Gate("ask", approver)
    )
    assert outcome.declined
    [(name, diff)] = seen
    assert name == "apply_patch" and diff is not None and "+routed" in diff
    assert (workspace / "notes.txt").read_text() == "hello from bosun\n"
    outside = "apply_patch <<'EOF'\n" + patch("*** Add File: ../x.txt", "+x") + "EOF"
    refused = run_call(ToolCall("c2", "bash", {"command": outside}), TOOLS, workspace, Gate("auto"))
    assert refused.result.is_error and "outside the workspace" in refused.result.content


@pytest.mark.parametrize(
    "command",
    ["ls", "apply_patch", "apply_patch a b", HEREDOC + "rm -rf /tmp/nothing\n", "echo apply_patch"],
)
def test_other_commands_are_not_routed(command: str) -> None:
    call = ToolCall("c", "bash", {"command": command})
    assert routed(call, TOOLS) is call or (
        routed(call, TOOLS).name == "apply_patch" and command.startswith(HEREDOC)
    )


def test_without_apply_patch_in_the_tool_set_bash_stays_bash() -> None:
    call = ToolCall("c", "bash", {"command": HEREDOC})
    assert routed(call, default_registry()) is call
    assert routed(call, TOOLS).name == "apply_patch"


def test_writes_into_git_ask_even_in_auto_edit(workspace: Path) -> None:
    (workspace / ".git").mkdir()
    text = patch("*** Add File: ok.txt", "+ok", "*** Add File: .git/hooks/pre-commit", "+evil")
    outcome = run_call(
        ToolCall("c", "apply_patch", {"input": text}), TOOLS, workspace, Gate("auto-edit")
    )
    assert outcome.refused and ".git/" in outcome.result.content
    assert (
        not (workspace / ".git/hooks/pre-commit").exists() and not (workspace / "ok.txt").exists()
    )


def test_hostile_patches_fail_fast_and_never_raise(workspace: Path) -> None:
    big = "*** Begin Patch\n" + "+" * (MAX_PATCH_CHARS + 1) + "\n*** End Patch"
    assert "larger than" in apply(workspace, big).content
    (workspace / "same.txt").write_text("a\n" * 50_000)
    pattern = patch("*** Update File: same.txt", "@@", *(["-a"] * 3000 + ["-b"]), "+c")
    started = time.monotonic()
    result = apply(workspace, pattern)
    assert result.is_error and time.monotonic() - started < 10
    for junk in ["\x00", "*** Begin Patch\n\x00\n*** End Patch", "@@\n" * 1000, "*** " * 10_000]:
        assert apply(workspace, junk).is_error
    assert apply(workspace, patch("*** Add File: a\x00b", "+x")).is_error


def test_seek_tries_each_pass_over_the_whole_file() -> None:
    assert seek(["a ", "b", "a"], ["a"], 0, False) == 2  # exact beats rstrip
    assert seek(["x", "y"], ["x", "y", "z"], 0, False) is None
    assert seek(["x"], [], 0, False) == 0
    with pytest.raises(PatchError):
        parse_patch("not a patch")


def test_file_modes_survive_an_update(workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    assert not apply(
        workspace, patch("*** Update File: run.sh", "@@", "-echo hi", "+echo ho")
    ).is_error
    assert os.access(script, os.X_OK) and script.read_text() == "echo ho\n"
