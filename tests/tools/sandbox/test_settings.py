"""The sandbox's settings: config files (a workspace file may only make it stricter) and
chat's `/sandbox`, the explicit step that runs bash outside it."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from agent.errors import UsageError
from agent.history import ToolCall
from agent.run.chat import ChatSession
from agent.run.config import Config, load_config, resolve, user_config_path
from agent.run.settings import Settings
from agent.tools import Tool
from agent.tools.permissions import Approval
from agent.tools.sandbox import SandboxPolicy
from agent.ui import commands
from tests.helpers import tool_call


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_workspace_file_may_make_the_sandbox_stricter_only(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(workspace / ".bosun.toml", 'sandbox = "on"\n')
    assert load_config(workspace).sandbox_mode == "on"
    loose = 'sandbox = "off"\nallow_net = true\nallow_git_writes = true\nsandbox_read = ["/"]\n'
    write(workspace / ".bosun.toml", loose)
    assert load_config(workspace) == Config()
    err = capsys.readouterr().err
    for key in ("sandbox", "allow_net", "allow_git_writes", "sandbox_read"):
        assert f"ignoring {key} = " in err
    assert err.count("\n") == 4 and "may only make the sandbox stricter" in err


def test_the_user_file_and_flags_may_loosen_it(workspace: Path) -> None:
    write(user_config_path(), 'sandbox = "off"\nallow_net = true\nsandbox_read = ["~/.pyenv"]\n')
    config = load_config(workspace)
    assert (config.sandbox_mode, config.allow_net, config.sandbox_read) == (
        "off",
        True,
        ("~/.pyenv",),
    )
    write(workspace / ".bosun.toml", 'sandbox = "auto"\nallow_net = false\n')
    assert load_config(workspace).sandbox_mode == "auto"  # stricter than the user's "off"
    assert resolve(workspace, sandbox="off", allow_git_writes=True).sandbox_mode == "off"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('sandbox = "maybe"', "sandbox must be one of auto, on, off"),
        ('allow_net = "yes"', "allow_net must be true or false"),
        ('sandbox_read = "~/.pyenv"', "sandbox_read must be a list of absolute folder paths"),
        ('sandbox_read = ["relative/path"]', "sandbox_read must be a list of absolute"),
    ],
)
def test_bad_sandbox_settings_name_the_key(workspace: Path, text: str, message: str) -> None:
    write(user_config_path(), text + "\n")
    with pytest.raises(UsageError, match=message):
        load_config(workspace)


class Screen:
    """What `/sandbox` needs of the REPL: the chat and a place to say things."""

    def __init__(self, chat: ChatSession, asked: list[str]) -> None:
        self.chat = chat
        self.asked = asked  # the tools the approver was asked about
        self.console = Console(file=io.StringIO(), width=100, highlight=False)

    def say(self, message: str, style: str = "dim") -> None:
        self.console.print(message, style=style, markup=False)

    def run(self, line: str) -> str:
        self.console.file = io.StringIO()
        name, _, arg = line.partition(" ")
        commands.find(name).run(self, arg.strip())  # type: ignore[arg-type]
        return self.console.file.getvalue()


@pytest.fixture
def screen(workspace: Path, script_file, policy: SandboxPolicy) -> Iterator[Screen]:
    steps = [tool_call("bash", command="touch one.txt"), "ok"]
    steps += [tool_call("bash", command="touch two.txt"), "ok"]
    asked: list[str] = []

    def decline(call: ToolCall, tool: Tool) -> Approval:
        asked.append(call.name)
        return "no"

    config = Config(model=f"scripted:{script_file(*steps)}", approve="auto-edit")
    chat = ChatSession(
        Settings.from_config(config, workspace=workspace, sandbox=policy), lambda e: None, decline
    )
    chat.start_new()
    yield Screen(chat, asked)
    chat.close()


def test_sandbox_off_in_chat_makes_bash_ask_again(screen: Screen, workspace: Path) -> None:
    assert "sandbox: on (bubblewrap" in screen.run("/sandbox")
    screen.chat.send("first")
    assert (workspace / "one.txt").exists() and screen.asked == []
    assert "sandbox: off; bash runs as you" in screen.run("/sandbox off")
    screen.chat.send("second")
    assert screen.asked == ["bash"]
    assert not (workspace / "two.txt").exists()  # declined
    assert "sandbox: on" in screen.run("/sandbox on")
    with pytest.raises(UsageError, match="on or off"):
        screen.run("/sandbox maybe")
