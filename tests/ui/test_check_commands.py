"""/lint and /test in chat, on a real ChatSession without a terminal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.settings import Settings
from agent.tools.checks import CheckCmd
from drivers.base import UsageError
from tests.ui.test_commands import FakeRepl


def session(workspace: Path, script_file, **given: object) -> ChatSession:
    settings = Settings.from_config(
        Config(model=f"scripted:{script_file('hi')}"), workspace=workspace, **given
    )
    chat = ChatSession(settings, lambda e: None, lambda call, tool: "yes")
    chat.start_new()
    return chat


@pytest.fixture
def repl(workspace: Path, script_file) -> Iterator[FakeRepl]:
    chat = session(workspace, script_file, test_cmd=CheckCmd("echo 'FAIL: one'; exit 1"))
    yield FakeRepl(chat)
    chat.close()


def test_lint_names_files_and_queues_problems(repl: FakeRepl, workspace: Path) -> None:
    with pytest.raises(UsageError, match="nothing to lint yet"):
        repl.run("/lint")
    (workspace / "bad.py").write_text("if True:\nprint(1)\n")
    out = repl.run("/lint bad.py missing.py")
    assert "IndentationError" in out and "not files in the workspace: missing.py" in out
    assert "bad.py:2:" in repl.chat.pending[-1]
    (workspace / "good.py").write_text("x = 1\n")
    repl.chat.pending.clear()
    repl.run("/lint good.py")
    assert repl.chat.pending == []


def test_test_runs_the_command_and_queues_a_failure(repl: FakeRepl) -> None:
    out = repl.run("/test")
    assert "running echo" in out and "FAIL: one" in out
    assert "they failed (exit 1)" in repl.chat.pending[-1]
    repl.chat.pending.clear()
    repl.run("/test true")  # typed here: the user's own command
    assert repl.chat.pending == []


def test_test_refuses_in_read_only_and_without_a_command(workspace: Path, script_file) -> None:
    chat = session(workspace, script_file, approve="read-only", test_cmd=CheckCmd("true"))
    try:
        with pytest.raises(UsageError, match="runs no command"):
            FakeRepl(chat).run("/test")
    finally:
        chat.close()
    chat = session(workspace, script_file)
    try:
        with pytest.raises(UsageError, match="no test command"):
            FakeRepl(chat).run("/test")
    finally:
        chat.close()


def test_a_workspace_test_cmd_is_refused_where_bash_would_ask(workspace: Path, script_file) -> None:
    marker = workspace / "ran"
    chat = session(workspace, script_file, test_cmd=CheckCmd(f"touch {marker}", "workspace"))
    try:
        with pytest.raises(UsageError, match="comes from the workspace"):
            FakeRepl(chat).run("/test")
        assert not marker.exists()
    finally:
        chat.close()
