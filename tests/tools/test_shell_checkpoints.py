"""Checkpoints that cover the shell: a scripted model's bash deletes, changes and makes
files, and /undo, /rewind and `bosun checkpoints restore` put the workspace back, from a
shadow repository under BOSUN_HOME that never touches the user's .git."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.errors import UsageError
from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.settings import Settings
from agent.session import load_session
from agent.tools.shadow import ShadowRepo
from tests.helpers import tool_call
from tests.ui.test_commands import FakeRepl

BASH = "rm gone.txt && echo changed > kept.txt && mkdir -p new && echo made > new/made.txt"


@pytest.fixture
def ws(workspace: Path) -> Path:
    (workspace / "gone.txt").write_text("to be deleted\n")
    (workspace / "kept.txt").write_text("original\n")
    (workspace / ".gitignore").write_text("*.log\n")
    (workspace / "build.log").write_text("ignored, before\n")
    return workspace


Chat = Callable[..., ChatSession]


@pytest.fixture
def chat(ws: Path, script_file: Callable[..., Path]) -> Iterator[Chat]:
    made: list[ChatSession] = []

    def make(*steps: str, approve: str = "auto") -> ChatSession:
        config = Config(model=f"scripted:{script_file(*steps)}", approve=approve)
        session = ChatSession(Settings.from_config(config, workspace=ws), made_events.append, None)
        session.start_new()
        made.append(session)
        return session

    made_events: list[object] = []
    make.events = made_events  # type: ignore[attr-defined]
    yield make
    for session in made:
        session.close()


def _is_back(ws: Path) -> None:
    assert (ws / "gone.txt").read_text() == "to be deleted\n"
    assert (ws / "kept.txt").read_text() == "original\n"
    assert not (ws / "new").exists()  # the file bash made, and its folder


def test_undo_brings_back_what_bash_deleted_and_changed(chat: Chat, ws: Path) -> None:
    session = chat(tool_call("bash", command=BASH + " && echo after > build.log"), "done")
    session.send("tidy up")
    assert not (ws / "gone.txt").exists()
    repl = FakeRepl(session)
    said = repl.run("/undo")
    _is_back(ws)
    assert (ws / "build.log").read_text() == "after\n"  # ignored: never snapshotted, kept
    assert "gone.txt" in said and "new/made.txt" in said
    assert "not tracked" not in said
    with pytest.raises(UsageError, match="nothing more to undo"):
        repl.run("/undo")


def test_undo_refuses_a_file_the_user_changed_since(chat: Chat, ws: Path) -> None:
    session = chat(tool_call("bash", command=BASH), "done")
    session.send("tidy up")
    (ws / "kept.txt").write_text("the user's\n")
    with pytest.raises(UsageError, match=r"nothing restored: kept\.txt changed"):
        session.checkpoints.undo()
    assert (ws / "kept.txt").read_text() == "the user's\n"
    assert not (ws / "gone.txt").exists()  # all or nothing


def test_checkpoints_cli_lists_and_restores(chat: Chat, ws: Path) -> None:
    from agent.cli.main import app

    session = chat(tool_call("bash", command=BASH), "done")
    session.send("tidy up")
    session.close()
    runner = CliRunner()
    listed = runner.invoke(app, ["checkpoints", "list", "--session", session.id])
    assert listed.exit_code == 0, listed.output
    assert "tidy up" in listed.output and "gone.txt" in listed.output
    restored = runner.invoke(app, ["checkpoints", "restore", "--session", session.id])
    assert restored.exit_code == 0, restored.output
    _is_back(ws)
    again = runner.invoke(app, ["checkpoints", "restore", "--session", session.id])
    assert again.exit_code != 0 and "no snapshots" in str(again.exception)


def test_rewind_restores_files_and_cuts_the_conversation(chat: Chat, ws: Path) -> None:
    session = chat(
        "nothing to do",
        tool_call("bash", command=BASH),
        "done",
        tool_call("bash", command="echo third > kept.txt"),
        "done again",
    )
    session.send("first")
    session.send("second")
    session.send("third")
    repl = FakeRepl(session)
    listing = repl.run("/rewind")
    assert "1  first" in listing and "3  third" in listing
    said = repl.run("/rewind 2")
    _is_back(ws)
    assert "its prompt was: second" in said
    users = [m for m in session.history if type(m).__name__ == "User"]
    assert [u.content for u in users] == ["first"]
    stored = load_session(session.log.path)  # type: ignore[union-attr]
    assert [m.content for m in stored.messages if type(m).__name__ == "User"] == ["first"]


def test_read_only_takes_no_snapshot(chat: Chat, ws: Path) -> None:
    session = chat("just reading", approve="read-only")
    session.send("look")
    assert session.checkpoints.shadow is not None
    assert session.checkpoints.shadow.numbers() == []


def test_a_sparse_1gb_file_is_skipped_said_and_fast(chat: Chat, ws: Path) -> None:
    with (ws / "huge.bin").open("wb") as f:
        f.truncate(1024**3)
    session = chat(tool_call("bash", command=BASH), "done")
    start = time.perf_counter()
    session.send("tidy up")
    took = time.perf_counter() - start
    said = [getattr(e, "message", "") for e in chat.events]  # type: ignore[attr-defined]
    assert any("huge.bin is over 10 MB" in m for m in said)
    assert took < 10
    undone = session.checkpoints.undo()
    _is_back(ws)
    assert "huge.bin" in undone.not_saved and (ws / "huge.bin").stat().st_size == 1024**3


def test_without_git_the_file_tools_fallback_is_said(
    chat: Chat, ws: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    os.symlink("/bin/sh", bare / "sh")  # bash the tool still needs a shell
    os.symlink(subprocess.check_output(["which", "bash"], text=True).strip(), bare / "bash")
    monkeypatch.setenv("PATH", str(bare))
    session = chat(tool_call("write_file", path="kept.txt", content="bosun's\n"), "done")
    session.send("write")
    said = [getattr(e, "message", "") for e in chat.events]  # type: ignore[attr-defined]
    assert any("git is not installed" in m for m in said)
    assert session.checkpoints.shadow is None
    assert session.checkpoints.undo().restored == ["kept.txt"]  # the file tools' records
    assert (ws / "kept.txt").read_text() == "original\n"


def _tree_state(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes() if p.is_file() else b"")
        for p in sorted(folder.rglob("*"))
    }


def test_the_users_git_is_never_touched(chat: Chat, ws: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x"}
    env |= {"GIT_COMMITTER_NAME": "u", "GIT_COMMITTER_EMAIL": "u@x"}
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=ws, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "x"], cwd=ws, check=True, env=env)
    before = _tree_state(ws / ".git")
    session = chat(tool_call("bash", command=BASH), "done")
    session.send("tidy up")
    session.checkpoints.undo()
    _is_back(ws)
    assert _tree_state(ws / ".git") == before
    repo = ShadowRepo(ws, session.id)
    assert repo.git_dir.is_relative_to(Path(os.environ["BOSUN_HOME"]))
    listed = repo.git("ls-tree", "-r", "--name-only", repo.tree()[0]).decode()
    assert ".git/" not in listed and "build.log" not in listed


def test_snapshot_of_a_thousand_files_is_quick(ws: Path) -> None:
    for i in range(1000):
        folder = ws / f"d{i % 20}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n" * 10)
    repo = ShadowRepo(ws, "timing-1")
    start = time.perf_counter()
    repo.snapshot(1, "before")
    first = time.perf_counter() - start
    start = time.perf_counter()
    repo.snapshot(1, "after")
    again = time.perf_counter() - start
    print(f"snapshot of 1000 files: first {first * 1000:.0f} ms, unchanged {again * 1000:.0f} ms")
    assert again < 5


def test_checkpoints_restore_names_files_with_escapes_shown(chat: Chat, ws: Path) -> None:
    """A file the model's bash named with an escape sequence is named, not run."""
    from agent.cli.main import app

    session = chat(tool_call("bash", command="touch \"$(printf 'x\\033]0;pwned\\007')\""), "done")
    session.send("make it")
    session.close()
    restored = CliRunner().invoke(app, ["checkpoints", "restore", "--session", session.id])
    assert restored.exit_code == 0, restored.output
    assert "deleted (created since): x\\x1b]0;pwned\\x07" in restored.output
    assert "\x1b" not in restored.output and "\x07" not in restored.output
