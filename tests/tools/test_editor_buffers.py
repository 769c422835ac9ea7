"""The file tools through an editor (`ToolContext.editor`, what `bosun acp` sets): its
buffers are the files' text, its writes replace the disk's, and confinement comes
first, so an editor is never asked about a path outside the workspace."""

from __future__ import annotations

from pathlib import Path

from agent.errors import ToolError
from agent.history import ToolCall
from agent.tools import ToolContext, default_registry


class Buffers:
    def __init__(self, texts: dict[Path, str], writes: bool = True, fail: bool = False) -> None:
        self.texts = texts
        self.writes = writes
        self.fail = fail
        self.asked: list[Path] = []

    def read_text(self, path: Path) -> str | None:
        self.asked.append(path)
        return self.texts.get(path)

    def write_text(self, path: Path, text: str) -> bool:
        self.asked.append(path)
        if self.fail:
            raise ToolError("the editor could not write it: read-only buffer")
        if not self.writes:
            return False
        self.texts[path] = text
        return True


def _run(ws: Path, editor: Buffers, name: str, **arguments: object):
    ctx = ToolContext(ws, editor=editor)
    return default_registry().execute(ToolCall("c1", name, dict(arguments)), ctx)


def test_an_unsaved_buffer_is_read_and_edited_through_the_editor(workspace: Path) -> None:
    notes = workspace.resolve() / "notes.txt"
    editor = Buffers({notes: "unsaved hello\n"})
    assert "unsaved hello" in _run(workspace, editor, "read_file", path="notes.txt").content
    edited = _run(workspace, editor, "edit_file", path="notes.txt", old="unsaved", new="saved")
    assert not edited.is_error, edited.content
    assert editor.texts[notes] == "saved hello\n"
    assert notes.read_text() == "hello from bosun\n"  # the editor writes, not bosun


def test_an_editor_that_does_not_write_leaves_it_to_the_disk(workspace: Path) -> None:
    editor = Buffers({}, writes=False)
    result = _run(workspace, editor, "write_file", path="new/a.txt", content="x\n")
    assert not result.is_error, result.content
    assert (workspace / "new" / "a.txt").read_text() == "x\n"


def test_a_failed_editor_write_is_the_models_error(workspace: Path) -> None:
    result = _run(workspace, Buffers({}, fail=True), "write_file", path="a.txt", content="x\n")
    assert result.is_error and "read-only buffer" in result.content


def test_a_path_outside_the_workspace_never_reaches_the_editor(
    workspace: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret\n")
    editor = Buffers({secret.resolve(): "buffer of a file outside\n"})
    read = _run(workspace, editor, "read_file", path=str(secret))
    wrote = _run(workspace, editor, "write_file", path="../secret.txt", content="x")
    assert read.is_error and wrote.is_error
    assert editor.asked == [] and secret.read_text() == "secret\n"
