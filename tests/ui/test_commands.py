"""Slash commands and their completion, on a real ChatSession without a terminal."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from rich.console import Console

from agent.history import System, User
from agent.protocol.render import read_messages_json
from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.settings import Settings
from agent.ui import commands
from agent.ui.input import SlashCompleter
from agent.ui.render import Renderer
from drivers.base import UsageError


class FakeRepl:
    """What command handlers use of the REPL, minus prompt-toolkit (needs a tty)."""

    def __init__(self, chat: ChatSession) -> None:
        self.chat = chat
        self.console = Console(file=io.StringIO(), width=80, highlight=False)
        self.renderer = Renderer(self.console, lambda name, args: None)

    def say(self, message: str, style: str = "dim") -> None:
        self.console.print(message, style=style, markup=False)

    def resume(self, path: Path) -> None:
        self.chat.resume(path)

    def run(self, line: str) -> str:
        self.console.file = io.StringIO()
        name, _, arg = line.partition(" ")
        ended = commands.find(name).run(self, arg.strip())  # type: ignore[arg-type]
        assert ended in (None, True)
        return self.console.file.getvalue()


@pytest.fixture
def repl(workspace: Path, script_file) -> Iterator[FakeRepl]:
    chat = ChatSession(
        Settings.from_config(
            Config(model=f"scripted:{script_file('first', 'second')}"), workspace=workspace
        ),
        lambda e: None,
        lambda call, tool: "yes",
    )
    chat.start_new()
    yield FakeRepl(chat)
    chat.close()


def test_tools_shows_what_asks_in_the_current_mode(repl: FakeRepl) -> None:
    out = repl.run("/tools")
    assert "read_file" in out
    names = repl.chat.tools.names

    def verdicts(text: str) -> dict[str, str]:
        rows = [line.split() for line in text.splitlines()]
        return {row[0]: row[2] for row in rows if row and row[0] in names}

    assert verdicts(out)["read_file"] == "runs"
    assert verdicts(out)["write_file"] == "asks"
    repl.run("/approve auto-edit")
    assert verdicts(repl.run("/tools"))["write_file"] == "runs"
    assert verdicts(repl.run("/tools"))["bash"] == "asks"


def test_approve_validates_the_mode(repl: FakeRepl) -> None:
    assert "approve mode: ask" in repl.run("/approve")
    repl.run("/approve read-only")
    assert repl.chat.agent.approve == "read-only"
    with pytest.raises(UsageError, match="unknown approve mode"):
        repl.run("/approve everything")


def test_render_before_and_after_a_call(repl: FakeRepl) -> None:
    out = repl.run("/render")
    assert "what the next one would send" in out
    repl.chat.send("hello there")
    out = repl.run("/render")
    assert "hello there" in out and out.strip().endswith(repl.chat.last_prompt.strip()[-20:])


def test_save_exports_history_render_can_read(repl: FakeRepl, workspace: Path) -> None:
    repl.chat.send("hi")
    assert "saved as it goes" in repl.run("/save")
    target = workspace / "out.json"  # /save writes inside the workspace only
    repl.run(f"/save {target}")
    assert read_messages_json(target) == repl.chat.history


def test_usage_clear_sessions_resume(repl: FakeRepl) -> None:
    repl.chat.send("hi")
    assert "model calls        1" in repl.run("/usage")
    first = repl.chat.id
    repl.run("/clear")
    assert repl.chat.id != first and [type(m) for m in repl.chat.history] == [System]
    out = repl.run("/sessions")
    assert first in out and repl.chat.id + "*" in out
    repl.run(f"/resume {first[:-2]}")  # a unique prefix is enough
    assert repl.chat.id == first and User("hi") in repl.chat.history
    with pytest.raises(UsageError, match="no session"):
        repl.run("/resume nope")


def test_model_and_reasoning_and_exit(repl: FakeRepl) -> None:
    assert "model: scripted:" in repl.run("/model")
    assert "shown" in repl.run("/reasoning")
    assert repl.renderer.show_reasoning
    assert commands.find("/exit").run(repl, "") is True  # type: ignore[arg-type]


def test_find_takes_unique_prefixes() -> None:
    assert commands.find("/he").name == "/help"
    with pytest.raises(UsageError, match="unknown command"):
        commands.find("/re")  # /result, /render, /resume, /reasoning
    with pytest.raises(UsageError):
        commands.find("/nothing")


def test_completion_of_commands_and_arguments() -> None:
    completer = SlashCompleter(
        {name: c.help for name, c in commands.COMMANDS.items()},
        {"/approve": lambda: ["ask", "auto-edit", "auto", "read-only"]},
    )

    def complete(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

    assert complete("/re") == ["/rewind", "/result", "/resume", "/render", "/reasoning"]
    assert complete("/approve au") == ["auto-edit", "auto"]
    assert complete("hello /re") == []
    assert complete("/clear x") == []


def test_tables_show_outside_text_as_it_is(repl: FakeRepl, monkeypatch, capsys) -> None:
    """A prompt or an MCP tool's description is text from outside: rich markup in it
    (`[/bold]` used to raise MarkupError, an internal error) and escape sequences are
    shown, never interpreted."""
    from agent.cli import common as cli_common

    hostile = "fix [/bold] the [red]bug\x1b[2J"
    repl.chat.send(hostile)
    repl.run("/clear")
    out = repl.run("/sessions")
    assert "[/bold]" in out and "[red]bug\\x1b[2J" in out and "\x1b" not in out
    monkeypatch.setattr(cli_common.sys.stdout, "isatty", lambda: True)
    cli_common.table([{"id": "x", "prompt": hostile}], ["id", "prompt"])
    printed = capsys.readouterr().out
    assert "[/bold] the [red]bug\\x1b[2J" in printed
