"""Issue 45's degraded items: every question that shows a command folds it as the bash
approval does (its start and its end in sight, whatever the padding), and a server's or
a workspace's words reach the terminal with their escapes shown, not run."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import TypeVar

import pytest
from rich.console import Console

from agent import events as ev
from agent.history import ToolCall
from agent.mcp.servers import ServerSpec
from agent.run.headless import terminal_approver
from agent.tools import default_registry
from agent.tools.hooks import HookSpec
from agent.ui.app import Repl
from agent.ui.diff import preview_diff
from agent.ui.hooks import ask_hooks
from agent.ui.render import Renderer
from agent.untrusted import fold

PADDED = "echo harmless" + "\n" * 500 + "\n".join(f": {i}" for i in range(300)) + "\nrm -rf ~"
WIDE = "echo harmless" + " " * 5000 + "; rm -rf ~"  # padded across, not down
T = TypeVar("T")
RUNNABLE = ["\x1b", "\r", "\x07", "\x9b", "\u202e", "\x08"]


def console() -> Console:
    return Console(file=io.StringIO(), width=80, force_terminal=False, color_system=None)


def shown(c: Console) -> str:
    assert isinstance(c.file, io.StringIO)
    return c.file.getvalue()


def folded_in_sight(text: str, lines: int = 20) -> None:
    assert "echo harmless" in text and "rm -rf ~" in text
    assert text.count("\n") < lines, text  # fits on the screen above the question


@pytest.mark.parametrize("command", [PADDED, WIDE], ids=["down", "across"])
def test_the_hook_question_folds_a_padded_command(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    c = console()
    hook = HookSpec("PreToolUse", command, "bash", origin="workspace", source="/w/.bosun.toml")
    assert ask_hooks(c, None, [hook]) is False
    folded_in_sight(shown(c))


@pytest.mark.parametrize("arg", [PADDED, WIDE], ids=["down", "across"])
def test_the_mcp_server_question_folds_a_padded_command_line(
    arg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    c = console()
    fake = SimpleNamespace(_status=None, console=c)
    fake.say = lambda message, style="dim": Repl.say(fake, message, style)  # type: ignore[arg-type]
    spec = ServerSpec("srv", command="sh", args=("-c", arg), origin="workspace", source=".mcp.json")
    assert Repl.ask_server(fake, spec) is False  # type: ignore[arg-type]
    folded_in_sight(shown(c))


@pytest.mark.parametrize("command", [PADDED, WIDE, "\n\nrm -rf ~"], ids=["down", "across", "lead"])
def test_the_headless_question_folds_a_padded_command(
    command: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bosun run --approve ask`: the call's line cuts each argument to 60 characters,
    so the question shows the command itself, folded."""
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    tools = default_registry()
    tool = tools.get("bash")
    assert tool is not None
    call = ToolCall("c1", "bash", {"command": command})
    assert terminal_approver(tools, workspace)(call, tool) == "no"
    assert "rm -rf ~" in err.getvalue() and err.getvalue().count("\n") < 20


@pytest.mark.parametrize(
    "command", [WIDE, "\n\n\nrm -rf ~", "rm -rf ~\n"], ids=["across", "lead", "trail"]
)
def test_the_bash_approval_shows_the_end_of_a_command_padded_at_its_ends(command: str) -> None:
    """A command wide with spaces, or that only starts or ends with a newline, was cut to
    its start, or shown as "(4 lines, 13 bytes)"."""
    c = console()
    Renderer(c, lambda name, args: None).tool_call(
        ev.ToolCallEvent("c1", "bash", {"command": command}, False), running=False
    )
    assert "rm -rf ~" in shown(c) and shown(c).count("\n") < 10


def test_fold_shows_every_escape_and_splits_only_at_newlines() -> None:
    text = fold("a\x1b[2J\x0bb\x85c\re\n" * 20, 40)
    for c in RUNNABLE:
        assert c not in text
    assert text.count("\n") == 8 and "\\x0b" in text and "\\x85" in text  # 4, ⋮, 4


TITLE = "\x1b]0;pwned\x07"  # retitles the window; valid as a regex too


def clean(text: str) -> None:
    for c in RUNNABLE:
        assert c not in text, repr(text)


def test_mcp_servers_words_in_a_tasks_run_are_shown_not_run(
    bosun_home: Path, workspace: Path, tmp_path: Path, script_file
) -> None:
    """`bosun run --tasks`: a server's last line of stderr and a tool name it listed
    reach stderr in the one line that says what went wrong."""
    import json
    import subprocess
    import sys

    from tests.mcp.helpers import FAULT, server_config, toml_server

    listed = tmp_path / "tools.json"
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "(?<=x)a"}}}
    listed.write_text(json.dumps([{"name": f"x{TITLE}", "inputSchema": schema}]))
    dying = "printf 'dying \\033]0;pwned\\007\\033[2J\\n' >&2; exit 1"
    server_config(
        bosun_home,
        toml_server("loud", "sh", ["-c", dying])
        + toml_server("odd", sys.executable, [str(FAULT), "--tools", str(listed)]),
    )
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t1", "prompt": "hi"}) + "\n")
    cmd = [sys.executable, "-m", "agent", "run", "--tasks", str(tasks), "--workspace"]
    cmd += [str(workspace), "--model", f"scripted:{script_file('done')}"]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "MCP server" in line]
    assert len(said) == 2 and "dying \\x1b]0;pwned\\x07" in said[0], said
    clean(proc.stderr)


def test_the_chat_says_a_servers_words_with_escapes_shown() -> None:
    """The REPL's report of a server that failed (the same line as above)."""
    c = console()
    Repl.say(SimpleNamespace(console=c), f"MCP server odd: tool x{TITLE}\x1b[2J; left out")  # type: ignore[arg-type]
    clean(shown(c))
    assert "\\x1b]0;pwned" in shown(c)


def test_bosun_config_shows_a_claude_settings_matcher_with_escapes_shown(
    bosun_home: Path, workspace: Path
) -> None:
    import json

    from agent.cli.config_report import report, text

    hook = {"type": "command", "command": f"echo {TITLE}"}
    settings = {"hooks": {"PreToolUse": [{"matcher": f"bash{TITLE}\n", "hooks": [hook]}]}}
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))
    listed = text(report(workspace))
    clean(listed)
    assert "bash\\x1b]0;pwned\\x07\\n" in listed and "echo \\x1b]0;pwned" in listed


def test_the_line_a_command_fails_with_shows_escapes(capsys: pytest.CaptureFixture[str]) -> None:
    """Every error a command ends with passes here; many quote others' words (a served
    model's error body, a name from the workspace)."""
    from agent.cli.common import fail

    with pytest.raises(SystemExit):
        fail(f"the server said: {TITLE}\x1b[2J", 1)
    err = capsys.readouterr().err
    clean(err)
    assert "\\x1b]0;pwned\\x07" in err


LINES = [f"line {i}\n" for i in range(48_000)]
SHUFFLED = LINES[::2] + LINES[1::2]  # every line unique and moved: difflib's worst


def _within(seconds: float, work: Callable[[], T]) -> T:
    """`work`'s answer, failing (not hanging) where it takes longer than `seconds`."""
    done: list[T] = []
    worker = threading.Thread(target=lambda: done.append(work()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert done, f"no answer within {seconds} s"
    return done[0]


def _patch(path: str) -> str:
    body = "".join("-" + line for line in LINES) + "".join("+" + line for line in SHUFFLED)
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n{body}*** End Patch\n"


@pytest.mark.parametrize(
    "call",
    [
        ToolCall("c1", "write_file", {"path": "big.txt", "content": "".join(SHUFFLED)}),
        ToolCall(
            "c1",
            "edit_file",
            {"path": "big.txt", "old": "".join(LINES[1:]), "new": "".join(SHUFFLED[1:])},
        ),
        ToolCall("c1", "apply_patch", {"input": _patch("big.txt")}),
    ],
    ids=lambda call: call.name,
)
def test_the_preview_of_a_change_to_a_48k_line_file_comes_back_at_once(
    call: ToolCall, workspace: Path
) -> None:
    """The approval question waits on this diff; difflib alone took minutes."""
    (workspace / "big.txt").write_text("".join(LINES))
    tools = default_registry(changes=("+apply_patch",))
    diff = _within(20, lambda: preview_diff(call.name, call.arguments, tools, workspace))
    assert diff is not None
    assert diff.startswith("--- a/big.txt\n+++ b/big.txt\n@@ -"), diff[:300]
    assert diff.count("\n") <= 402  # the preview's own cap (400 lines and a note)
