"""The terminal as a new user meets it, second pass (issue #33), in a real terminal
(tmux) with real keys at a fast typist's pace: type-ahead never answers a question,
one-key questions everywhere, a refusal with a reason carries on, the screen says what
is happening."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agent.history import ToolResult
from agent.session import load_messages, sessions_dir
from tests.helpers import tool_call
from tests.ui.tmux import Terminal, input_line, needs_chat, needs_tmux, prompt_ready

pytestmark = [needs_tmux, needs_chat]


def only_session() -> Path:
    [path] = sorted(sessions_dir().glob("*.jsonl"))
    return path


@pytest.mark.parametrize("gap", [0.0, 0.06, 0.12], ids=["burst", "fast-typist", "steady"])
def test_keys_typed_ahead_never_answer_an_approval(
    terminal: Terminal, workspace: Path, script_file, gap: float
) -> None:
    """`yes and also` typed right after sending a request that writes: the keys land
    before, while and after `Allow write_file?` is drawn, and none of them answers it;
    they wait in the input line for the next message."""
    script = script_file(tool_call("write_file", path="new.txt", content="x\n"), "Wrote it.")
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    terminal.type("write a file")
    terminal.send("Enter")
    terminal.type_like_a_typist("yes and also", gap)
    terminal.wait_for("Allow write_file?")
    time.sleep(1.0)  # long enough for a stray key to have answered
    screen = terminal.screen()
    assert "Wrote it." not in screen and not (workspace / "new.txt").exists(), screen
    terminal.answer("y")  # after a pause: an answer
    terminal.wait_for("Wrote it.")
    screen = terminal.wait_for(lambda s: input_line(s) == "> yes and also")
    assert (workspace / "new.txt").read_text() == "x\n"
    terminal.send("C-u")
    terminal.send("C-d")
    terminal.wait_for("[exit 0]")


def test_a_decline_with_a_reason_carries_on_at_once(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    script = script_file(tool_call("write_file", path="new.txt", content="x\n"), "Fine, I left it.")
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    terminal.type("write a file")
    terminal.send("Enter")
    terminal.wait_for("Allow write_file?")
    terminal.answer("n")
    terminal.wait_for("What should it do instead?")
    terminal.type("do not write anything")
    terminal.send("Enter")
    terminal.wait_for("Fine, I left it.")  # with no second message from the user
    terminal.wait_for(prompt_ready)
    assert not (workspace / "new.txt").exists()
    terminal.send("C-d")
    terminal.wait_for("[exit 0]")
    [result] = [m for m in load_messages(only_session()) if isinstance(m, ToolResult)]
    assert result.content.endswith("instead, they said: do not write anything")


def send(terminal: Terminal, text: str) -> int:
    """Type a line and press Enter; where the scrollback stood before."""
    start = len(terminal.scrollback())
    terminal.type(text)
    terminal.send("Enter")
    return start


def test_the_screen_says_what_is_happening_while_the_model_works(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    """Elapsed seconds and tokens beside the spinner, the status bar kept in view while
    the answer streams, and keys typed meanwhile shown as what the next prompt holds."""
    words = [f"word{i} " for i in range(40)]
    script = script_file({"chunks": words, "delay_ms": 150})
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    send(terminal, "go")
    screen = terminal.wait_for(lambda s: "word5" in s and "tokens · Esc stops" in s)
    assert "│ ctx" in screen.split("word5")[-1]  # the status bar, under the answer
    terminal.type("abc")
    terminal.wait_for("typed ahead: abc")
    terminal.wait_for(lambda s: input_line(s) == "> abc", 30)
    terminal.send("C-u")
    terminal.send("C-d")
    terminal.wait_for("[exit 0]")


def test_calls_known_to_fail_or_change_nothing_are_not_asked_about(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    (workspace / "three.txt").write_text("x\nx\nx\n")
    script = script_file(
        tool_call("edit_file", path="three.txt", old="x", new="y"),
        tool_call("write_file", path="notes.txt", content="hello from bosun\n"),
        "I could not.",
    )
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    send(terminal, "change it")
    screen = terminal.wait_for("I could not.")
    assert "Allow" not in screen
    assert "3 times" in screen and "would leave the file exactly as it is" in screen
    assert screen.count("✗") >= 2
    terminal.wait_for(prompt_ready)
    terminal.send("C-d")
    terminal.wait_for("[exit 0]")


def test_compact_shell_undo_and_mentions_say_what_happened(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    script = script_file(tool_call("write_file", path="new.txt", content="x\n"), "Made it.")
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace), "-y")
    terminal.wait_for(prompt_ready)

    def after(line: str, wanted: str) -> str:
        """Send `line`, wait for `wanted` below it; what the screen shows below it."""
        send(terminal, line)
        screen = terminal.wait_for(lambda s: wanted in s.split("> " + line)[-1])
        return screen.split("> " + line)[-1]

    after("/compact", "nothing to compact: the context size is unknown")
    shown = after("!false", "[exit code 1]")  # a failed command: a red cross, not a tick
    assert "✗" in shown and "✓" not in shown
    shown = after("make a file, see @missing.py", "Made it.")
    assert "@missing.py: no such file in the workspace; not attached" in shown
    terminal.wait_for(prompt_ready)
    shown = after("/undo", "deleted (bosun had created them): new.txt")
    assert "restored: new.txt" not in shown and not (workspace / "new.txt").exists()
    terminal.wait_for(prompt_ready)
    # the second /undo: the screen holds the first one's line too, so look past it
    send(terminal, "/undo")
    terminal.wait_for(lambda s: "nothing more to undo" in s.split("new.txt")[-1])
    terminal.send("C-d")
    terminal.wait_for("[exit 0]")


def test_a_message_meant_for_the_model_is_shown_as_what_it_was_told(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    cut = '<tool_call>\n{"name": "read_file", "arguments": {"path": "no'  # cut mid-argument
    script = script_file(cut, "Sorry.")
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    send(terminal, "read it")
    screen = terminal.wait_for("Sorry.")
    assert "the model's reply had a problem; it was told: your" in screen.replace("\n", " ")
    terminal.wait_for(prompt_ready)  # a Ctrl-D while it still works is type-ahead, dropped
    terminal.send("C-d")
    terminal.wait_for("[exit 0]")


def test_model_lists_the_models_and_a_switch_forgets_the_old_speed(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    first = script_file({"chunks": [f"w{i} " for i in range(30)]})
    second = script_file("hi")
    terminal.start("--model", f"scripted:{first}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    send(terminal, "go")
    terminal.wait_for(lambda s: prompt_ready(s) and " 0 tok/s" not in s.splitlines()[-1])
    send(terminal, "/model")
    screen = terminal.wait_for(lambda s: "smollm2-135m" in s.split("models to switch to")[-1])
    send(terminal, f"/model scripted:{second}")
    terminal.wait_for(f"model: scripted:{second.name}")
    screen = terminal.wait_for(prompt_ready)
    assert " 0 tok/s" in screen.splitlines()[-1], screen.splitlines()[-1]
    terminal.send("C-d")
    terminal.wait_for("[exit 0]")


def test_the_resume_picker_keeps_its_columns_aligned(
    terminal: Terminal, workspace: Path, script_file, bosun_home: Path
) -> None:
    """A status longer than the column was wide ("interrupted") pushed its prompt out of
    line with the others."""
    import json
    import subprocess
    import sys

    from tests.ui.tmux import REPO

    script = script_file("One.", "Two.")
    for prompt in ("alpha question", "gamma question"):
        subprocess.run(
            [sys.executable, "-m", "agent", "run", prompt, "--model", f"scripted:{script}",
             "--workspace", str(workspace)],
            cwd=REPO, capture_output=True, timeout=60, check=True,
        )  # fmt: skip
    first = sorted(sessions_dir().glob("*.jsonl"))[0]
    lines = first.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for record in records:
        if record.get("type") == "result":
            record["status"] = "interrupted"
    first.write_text("".join(json.dumps(r) + "\n" for r in records))
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace), "--resume")
    screen = terminal.wait_for("Resume which?")
    rows = [line for line in screen.splitlines() if "question" in line]
    assert len(rows) == 2, screen
    assert len({row.index("question") for row in rows}) == 1, rows  # one column
    terminal.send("C-c")
