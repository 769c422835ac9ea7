"""Custom commands: Markdown files that expand into a prompt, in chat and in `bosun run`."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from agent.errors import UsageError
from agent.history import User
from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.custom_commands import expand, expand_prompt, find_commands, parse_invocation
from agent.run.settings import Settings
from agent.tools.doc_folders import MAX_ENTRIES
from agent.ui import commands
from agent.ui.render import Renderer
from tests.helpers import own_home  # noqa: F401 - an autouse fixture (`home`)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


REVIEW = "---\ndescription: Review a file: carefully\nargument-hint: FILE [FOCUS]\n---\n"
REVIEW += "Review $1 with a focus on $2.\nEverything: $ARGUMENTS (costs $$0)\n"


def test_arguments_and_positions_expand() -> None:
    body = "Review $1 with a focus on $2.\nEverything: $ARGUMENTS (costs $$0)"
    assert expand(body, ' "src/a b.py"  speed ') == (
        'Review src/a b.py with a focus on speed.\nEverything: "src/a b.py"  speed (costs $0)'
    )
    assert expand(body, "") == "Review  with a focus on .\nEverything:  (costs $0)"
    # an unclosed quote splits on spaces rather than failing
    assert expand("[$1][$2][$3]", "it's fine") == "[it's][fine][]"
    # no placeholder: the arguments are appended, never lost
    assert expand("Fix the build.", "on arm64") == "Fix the build.\n\nARGUMENTS: on arm64"
    assert expand("Fix the build.", "") == "Fix the build."


def test_invocations_are_names_not_paths() -> None:
    assert parse_invocation("/review a b") == ("review", "a b")
    assert parse_invocation("/fe:comp\nmore text") == ("fe:comp", "more text")
    assert parse_invocation("/etc/hosts is broken") is None
    assert parse_invocation("review") is None


def test_folders_front_matter_and_precedence(
    workspace: Path, bosun_home: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace / ".bosun/commands/review.md", REVIEW)
    write(workspace / ".claude/commands/review.md", "the .claude one loses")
    write(workspace / ".claude/commands/frontend/component.md", "Make a component $1")
    write(bosun_home / "commands/mine.md", "---\ndescription: my own\n---\nMine: $ARGUMENTS")
    write(home / ".claude/commands/claude-user.md", "from ~/.claude")
    codex = home / "elsewhere"
    monkeypatch.setenv("CODEX_HOME", str(codex))
    write(codex / "prompts/codex.md", "from codex $1")
    write(home / ".codex/prompts/ignored.md", "CODEX_HOME moved it")
    found = find_commands(workspace)
    assert list(found) == sorted(found)
    assert set(found) == {"review", "frontend:component", "mine", "claude-user", "codex"}
    review = found["review"]
    assert review.description == "Review a file: carefully"  # not YAML: read as a line
    assert review.argument_hint == "FILE [FOCUS]"
    assert review.origin == "workspace" and found["mine"].origin == "user"
    assert found["frontend:component"].expand("Button") == "Make a component Button"
    assert found["codex"].expand("x") == "from codex x"


def test_bad_front_matter_never_fails(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = workspace / ".bosun/commands"
    write(folder / "tree.md", "---\ndescription:\n  - a\n  - list\n---\nbody of tree")
    write(folder / "deep.md", "---\ndescription: " + "[" * 5000 + "\n---\nbody of deep")
    write(folder / "open.md", "---\ndescription: never closed\nbody")
    write(folder / "binary.md", b"---\ndescription: \xff\xfe\n---\nx")
    found = find_commands(workspace)
    assert found["tree"].description == "" and found["tree"].body == "body of tree"
    assert found["deep"].body == "body of deep"
    assert found["open"].body.startswith("---\ndescription: never closed")
    assert "binary" not in found
    err = capsys.readouterr().err
    assert "tree.md: front matter 'description' is not text" in err
    assert "binary.md: not UTF-8 text" in err


def test_hostile_folder_is_skipped_with_one_line_each(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = workspace / ".bosun/commands"
    write(folder / "ok.md", "fine")
    secret = write(tmp_path / "outside/secret.md", "SECRET")
    os.symlink(secret, folder / "leak.md")
    os.symlink(secret.parent, folder / "linked")
    os.symlink(folder / "ok.md", folder / "alias.md")  # a link inside is fine
    os.mkfifo(folder / "fifo.md")
    write(folder / "huge.md", "x" * (64 * 1024 + 1))
    found = find_commands(workspace)  # a FIFO opened for reading would hang here
    assert set(found) == {"ok", "alias"}
    assert all("SECRET" not in c.body for c in found.values())
    err = capsys.readouterr().err.splitlines()
    assert f"bosun: skipping {folder}/leak.md: it leads outside {folder}" in err
    assert f"bosun: skipping {folder}/linked: it leads outside {folder}" in err
    assert f"bosun: skipping {folder}/fifo.md: not a regular file" in err
    assert any(line.startswith(f"bosun: skipping {folder}/huge.md: 65537 bytes") for line in err)
    find_commands(workspace)
    assert capsys.readouterr().err == ""  # said once


def test_a_commands_folder_linked_out_of_the_workspace_is_skipped(
    workspace: Path, tmp_path: Path
) -> None:
    write(tmp_path / "elsewhere/stolen.md", "SECRET")
    (workspace / ".bosun").mkdir()
    os.symlink(tmp_path / "elsewhere", workspace / ".bosun/commands")
    assert find_commands(workspace) == {}


def test_many_files_are_bounded(workspace: Path) -> None:
    folder = workspace / ".bosun/commands"
    folder.mkdir(parents=True)
    for i in range(MAX_ENTRIES + 50):
        (folder / f"c{i:04}.md").write_text("x")
    assert len(find_commands(workspace)) == MAX_ENTRIES


class Screen:
    """What the command handlers use of the REPL, minus prompt-toolkit; `send` goes to
    the ChatSession as the REPL's does."""

    def __init__(self, chat: ChatSession) -> None:
        self.chat = chat
        self.console = Console(file=io.StringIO(), width=200, highlight=False)
        self.renderer = Renderer(self.console, lambda name, args: None)

    def say(self, message: str, style: str = "dim") -> None:
        self.console.print(message, style=style, markup=False)

    def send(self, text: str) -> None:
        self.chat.send(text)

    def run(self, line: str) -> str:
        self.console.file = io.StringIO()
        name, _, arg = line.partition(" ")
        commands.find(name, self.chat.workspace).run(self, arg.strip())  # type: ignore[arg-type]
        return self.console.file.getvalue()


def test_a_custom_command_expands_in_chat(workspace: Path, script_file) -> None:
    write(workspace / ".bosun/commands/review.md", REVIEW)
    write(workspace / ".bosun/commands/model.md", "a custom /model never runs")
    chat = ChatSession(
        Settings.from_config(Config(model=f"scripted:{script_file('ok')}"), workspace=workspace),
        lambda e: None,
        lambda call, tool: "yes",
    )
    chat.start_new()
    screen = Screen(chat)
    try:
        help_text = screen.run("/help")
        assert "/review" in help_text
        assert "Review a file: carefully FILE [FOCUS] [workspace]" in help_text
        rows = [line.split()[0] for line in help_text.splitlines() if line.strip()]
        assert rows.count("/model") == 1  # the built-in; the custom one is shadowed, and said
        assert "hidden by the built-in of that name: /model" in help_text
        assert commands.find("/model", workspace) is commands.COMMANDS["/model"]
        screen.run("/review notes.txt style")
        users = [m.content for m in chat.history if isinstance(m, User)]
        assert users == [
            "Review notes.txt with a focus on style.\nEverything: notes.txt style (costs $0)"
        ]
        assert commands.find("/rev", workspace).name == "/review"  # a unique prefix
        with pytest.raises(UsageError, match="unknown command /nope"):
            commands.find("/nope", workspace)
    finally:
        chat.close()


def bosun_run(workspace: Path, prompt: str, script: Path, trace: Path) -> str:
    """`bosun run PROMPT` on the scripted model; the prompt text the model saw."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "run",
            prompt,
            "--model",
            f"scripted:{script}",
            "-w",
            str(workspace),
            "--trace",
            str(trace),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(trace.read_text().splitlines()[-1])["prompt"]


def test_a_custom_command_expands_as_a_run_prompt(
    workspace: Path, script_file, tmp_path: Path
) -> None:
    write(workspace / ".bosun/commands/review.md", REVIEW)
    seen = bosun_run(workspace, "/review notes.txt speed", script_file("ok"), tmp_path / "t1")
    assert "Review notes.txt with a focus on speed." in seen
    assert "/review" not in seen
    # not a command: sent as typed
    seen = bosun_run(workspace, "/nope notes.txt", script_file("ok"), tmp_path / "t2")
    assert "/nope notes.txt" in seen


def test_expand_prompt_leaves_other_text_alone(workspace: Path) -> None:
    write(workspace / ".bosun/commands/hi.md", "Hello $1")
    assert expand_prompt("/hi there", workspace) == "Hello there"
    assert expand_prompt("say /hi", workspace) == "say /hi"
    assert expand_prompt("/etc/hosts", workspace) == "/etc/hosts"
