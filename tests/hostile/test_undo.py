"""/undo and /diff against a workspace that moved on: the user's own edits and files made
since bosun's write, and folders or files the model swapped for links out of the
workspace. Undo restores only what bosun recorded, refuses (naming the paths) where a
file is no longer as bosun's write left it, and never reads, writes or deletes through a
link; a refused request restores nothing of itself (all or nothing)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.errors import UsageError
from agent.history import ToolCall, ToolResult
from agent.tools import default_registry
from agent.tools.checkpoints import Checkpoints
from agent.tools.orchestrator import Gate, run_call
from tests.hostile.conftest import SECRET, World


class Session:
    """The chat's checkpoints fed the way the loop feeds them: one `request` per user
    message, each call approved, checkpointed and run by the orchestrator."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.checkpoints = Checkpoints(workspace)
        self.tools = default_registry()
        self.calls = 0

    def request(self, *calls: tuple[str, dict[str, object]]) -> list[ToolResult]:
        self.checkpoints.new_request()
        results = []
        for name, arguments in calls:
            self.calls += 1
            call = ToolCall(f"c{self.calls}", name, dict(arguments))
            outcome = run_call(call, self.tools, self.workspace, Gate("auto"), self.checkpoints)
            results.append(outcome.result)
        return results


def write(path: str, content: str) -> tuple[str, dict[str, object]]:
    return "write_file", {"path": path, "content": content}


def edit(path: str, old: str, new: str) -> tuple[str, dict[str, object]]:
    return "edit_file", {"path": path, "old": old, "new": new}


@pytest.fixture
def session(workspace: Path) -> Session:
    return Session(workspace)


def test_a_plain_undo_still_restores_edits_and_removes_created_files(
    session: Session, workspace: Path
) -> None:
    session.request(edit("notes.txt", "hello", "bye"), write("new/made.txt", "made\n"))
    assert (workspace / "notes.txt").read_text() == "bye from bosun\n"
    undone = session.checkpoints.undo()
    assert sorted(undone.restored) == ["new/made.txt", "notes.txt"]
    assert undone.removed == ["new/made.txt"]  # said as deleted, not as "restored"
    assert (workspace / "notes.txt").read_text() == "hello from bosun\n"
    assert not (workspace / "new" / "made.txt").exists()
    with pytest.raises(UsageError, match="nothing more to undo: the 1 request"):
        session.checkpoints.undo()  # not "changed nothing yet": they did, and are undone


def test_a_write_aimed_at_a_folder_is_the_models_error_not_the_harness(
    session: Session, workspace: Path
) -> None:
    """The checkpoint looks at the path first: a folder there is "not a regular file",
    never an IsADirectoryError out of the run (found by the hostile fuzz)."""
    (workspace / "sub").mkdir()
    [result] = session.request(write("sub", ""))
    assert result.is_error and "directory" in result.content
    assert (workspace / "sub").is_dir()


def test_a_file_the_user_created_after_a_failed_write_is_never_deleted(
    session: Session, workspace: Path
) -> None:
    """bosun recorded "did not exist" before a write that failed: the write changed
    nothing, so there is nothing of bosun's to undo there."""
    [result] = session.request(edit("later.txt", "a", "b"))
    assert result.is_error
    (workspace / "later.txt").write_text("the user's own file\n")
    with pytest.raises(UsageError, match="nothing to undo"):
        session.checkpoints.undo()
    assert (workspace / "later.txt").read_text() == "the user's own file\n"


def test_a_file_bosun_created_and_the_user_then_rewrote_is_kept_and_named(
    session: Session, workspace: Path
) -> None:
    session.request(write("made.txt", "bosun's\n"))
    (workspace / "made.txt").write_text("the user's, now\n")
    with pytest.raises(UsageError, match=r"made\.txt"):
        session.checkpoints.undo()
    assert (workspace / "made.txt").read_text() == "the user's, now\n"


def test_a_file_the_user_recreated_after_deleting_bosuns_is_kept(
    session: Session, workspace: Path
) -> None:
    session.request(write("made.txt", "bosun's\n"))
    (workspace / "made.txt").unlink()
    (workspace / "made.txt").write_text("mine\n")
    with pytest.raises(UsageError, match=r"made\.txt"):
        session.checkpoints.undo()
    assert (workspace / "made.txt").read_text() == "mine\n"


def test_the_users_own_edits_are_not_reverted_and_nothing_of_the_request_is(
    session: Session, workspace: Path
) -> None:
    """All or nothing: one changed file keeps the whole request as it is, and the
    refusal names every changed path (and only those)."""
    (workspace / "b.txt").write_text("b0\n")
    (workspace / "c.txt").write_text("c0\n")
    session.request(write("a.txt", "a1\n"), write("b.txt", "b1\n"), write("c.txt", "c1\n"))
    (workspace / "b.txt").write_text("b1 and the user's line\n")
    (workspace / "c.txt").unlink()
    with pytest.raises(UsageError) as refused:
        session.checkpoints.undo()
    message = str(refused.value)
    assert "b.txt" in message and "c.txt" in message and "a.txt" not in message
    assert (workspace / "a.txt").read_text() == "a1\n"
    assert (workspace / "b.txt").read_text() == "b1 and the user's line\n"
    assert not (workspace / "c.txt").exists()
    with pytest.raises(UsageError, match=r"b\.txt"):  # still refused: nothing was dropped
        session.checkpoints.undo()


def test_an_older_request_checks_against_its_own_write(session: Session, workspace: Path) -> None:
    session.request(write("a.txt", "a1\n"))
    session.request(write("a.txt", "a2\n"), write("b.txt", "b\n"))
    assert sorted(session.checkpoints.undo().restored) == ["a.txt", "b.txt"]
    assert (workspace / "a.txt").read_text() == "a1\n"
    (workspace / "a.txt").write_text("a1, then the user\n")
    with pytest.raises(UsageError, match=r"a\.txt"):
        session.checkpoints.undo()
    assert (workspace / "a.txt").read_text() == "a1, then the user\n"


def test_an_edit_between_two_requests_is_kept_by_the_later_undo(
    session: Session, workspace: Path
) -> None:
    session.request(write("a.txt", "a1\n"))
    (workspace / "a.txt").write_text("a1 + user\n")
    session.request(edit("a.txt", "user", "USER"))
    assert session.checkpoints.undo().restored == ["a.txt"]
    assert (workspace / "a.txt").read_text() == "a1 + user\n"  # the user's, not bosun's a1


def _swap_folder_for_link(workspace: Path, world: World, name: str, files: dict[str, str]) -> None:
    """What a model's shell command can do after bosun wrote `name/…`: move the folder
    away and put a link to a folder outside in its place, holding the same content."""
    (workspace / name).rename(workspace / f"{name}.moved")
    target = world.outside / "target"
    target.mkdir()
    for file, text in files.items():
        (target / file).write_text(text)
    (workspace / name).symlink_to(target, target_is_directory=True)
    world.seal()


def test_undo_never_deletes_through_a_folder_swapped_for_a_link(
    session: Session, workspace: Path, world: World
) -> None:
    session.request(write("d/made.txt", "bosun wrote this\n"))
    _swap_folder_for_link(workspace, world, "d", {"made.txt": "bosun wrote this\n"})
    with pytest.raises(UsageError, match=r"d/made\.txt"):
        session.checkpoints.undo()
    assert (world.outside / "target" / "made.txt").exists()


def test_undo_never_writes_through_a_folder_swapped_for_a_link(
    session: Session, workspace: Path, world: World
) -> None:
    (workspace / "d").mkdir()
    (workspace / "d" / "a.txt").write_text("before\n")
    session.request(write("d/a.txt", "after\n"))
    _swap_folder_for_link(workspace, world, "d", {"a.txt": "after\n"})
    with pytest.raises(UsageError, match=r"d/a\.txt"):
        session.checkpoints.undo()
    assert (world.outside / "target" / "a.txt").read_text() == "after\n"


def test_undo_never_writes_through_a_file_swapped_for_a_link(
    session: Session, workspace: Path, world: World
) -> None:
    session.request(write("a.txt", SECRET))
    (workspace / "a.txt").unlink()
    (workspace / "a.txt").symlink_to(world.secret)  # the same bytes bosun wrote
    world.seal()
    with pytest.raises(UsageError, match=r"a\.txt"):
        session.checkpoints.undo()
    assert world.secret.read_text() == SECRET


def test_undo_never_writes_through_a_hard_link_to_a_file_outside(
    session: Session, workspace: Path, world: World
) -> None:
    """The name bosun wrote now names a file outside too (same bytes): the restore
    replaces the name, it does not write into the file."""
    (workspace / "a.txt").write_text("before\n")
    session.request(write("a.txt", SECRET))
    (workspace / "a.txt").unlink()
    os.link(world.secret, workspace / "a.txt")
    world.seal()
    session.checkpoints.undo()
    assert (workspace / "a.txt").read_text() == "before\n"
    assert world.secret.read_text() == SECRET


def test_undo_puts_back_the_mode_it_found(session: Session, workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("echo hi\n")
    script.chmod(0o750)
    session.request(write("run.sh", "echo bye\n"))
    session.checkpoints.undo()
    assert script.read_text() == "echo hi\n" and script.stat().st_mode & 0o777 == 0o750


def test_diff_never_reads_through_a_link_or_hangs_on_a_fifo(
    session: Session, workspace: Path, world: World
) -> None:
    session.request(write("a.txt", "mine\n"), write("b.txt", "mine too\n"))
    (workspace / "a.txt").unlink()
    (workspace / "a.txt").symlink_to(world.secret)
    (workspace / "b.txt").unlink()
    os.mkfifo(workspace / "b.txt")
    text = session.checkpoints.diff()
    assert SECRET not in text
    assert "a.txt" in text and "b.txt" in text


def test_chats_undo_names_the_changed_files_and_leaves_them(
    workspace: Path, script_file: Callable[..., Path]
) -> None:
    """The same through the chat: a scripted model writes, the user edits, /undo refuses
    with the path and the REPL carries on (a UsageError is its one-line message)."""
    from agent.run.chat import ChatSession
    from agent.run.config import Config
    from agent.run.settings import Settings
    from tests.helpers import tool_call
    from tests.ui.test_commands import FakeRepl

    script = script_file(tool_call("write_file", path="a.txt", content="bosun's\n"), "done")
    settings = Settings.from_config(Config(model=f"scripted:{script}"), workspace=workspace)
    chat = ChatSession(settings, lambda e: None, lambda call, tool: "yes")
    chat.start_new()
    try:
        chat.send("write a.txt")
        assert (workspace / "a.txt").read_text() == "bosun's\n"
        (workspace / "a.txt").write_text("the user's\n")
        repl = FakeRepl(chat)
        with pytest.raises(UsageError, match=r"nothing restored: a\.txt changed"):
            repl.run("/undo")
        assert (workspace / "a.txt").read_text() == "the user's\n"
        assert "a.txt" in repl.run("/diff")
    finally:
        chat.close()
