"""`bosun chat` in a real 80x30 terminal (tmux), driven by the scripted model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.history import Assistant, AssistantToolUse, System, ToolResult, User
from agent.session import load_messages, sessions_dir
from tests.helpers import tool_call
from tests.ui.tmux import REPO, Terminal, input_line, needs_chat, needs_tmux, prompt_ready

pytestmark = [needs_tmux, needs_chat]


def only_session() -> Path:
    files = sorted(sessions_dir().glob("*.jsonl"))
    assert len(files) == 1, files
    return files[0]


def lines_fit(text: str, width: int = 80) -> bool:
    return all(len(line) <= width for line in text.splitlines())


def test_prompt_stream_tool_approval_diff_usage_exit(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    script = script_file(
        {
            "chunks": ["# Plan\n\n", "Streaming **works** ", "in pieces.\n\n", "- one\n- two\n"],
            "delay_ms": 20,
        },
        {
            "chunks": [
                "I will add a line.\n",
                tool_call("write_file", path="notes.txt", content="hello from bosun\nsecond\n"),
            ]
        },
        "Added the line.",
    )
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    terminal.type("hello")
    terminal.send("Enter")
    terminal.wait_for("two")
    terminal.wait_for(prompt_ready)
    screen = terminal.scrollback()
    assert "Streaming works in pieces." in screen  # Markdown rendered, not raw **
    assert "Plan" in screen and "# Plan" not in screen

    terminal.type("add a line")
    terminal.send("Enter")
    screen = terminal.wait_for("Allow write_file?")
    assert "I will add a line." in screen
    assert "write_file" in screen and "path: notes.txt" in screen
    assert "+second" in screen and "@@" in screen  # the diff, before approval
    assert (workspace / "notes.txt").read_text() == "hello from bosun\n"
    terminal.send("x")  # not an answer: kept for the input line, as type-ahead
    terminal.answer("y")  # one key, no Enter
    terminal.wait_for("Added the line.")
    terminal.wait_for(lambda s: input_line(s) == "> x")
    terminal.send("C-u")
    terminal.wait_for(prompt_ready)
    assert (workspace / "notes.txt").read_text() == "hello from bosun\nsecond\n"

    terminal.type("/usage")
    terminal.send("Enter")
    screen = terminal.wait_for("completion tokens")
    assert "model calls        3" in screen and "context used" in screen

    terminal.type("/exit")
    terminal.send("Enter")
    screen = terminal.wait_for("[exit 0]")
    assert lines_fit(screen)
    assert not terminal.colours()  # NO_COLOR is set

    history = load_messages(only_session())
    kinds = [type(m) for m in history]
    assert kinds == [
        System, User, Assistant, User, Assistant, AssistantToolUse, ToolResult, Assistant
    ]  # fmt: skip
    assert not history[6].is_error  # type: ignore[union-attr]


def test_colour_diff_and_declining(terminal: Terminal, workspace: Path, script_file) -> None:
    script = script_file(
        tool_call("edit_file", path="notes.txt", old="hello", new="goodbye"), "Left it alone."
    )
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace), color=True)
    terminal.wait_for(prompt_ready)
    terminal.type("change it")
    terminal.send("Enter")
    screen = terminal.wait_for("Allow edit_file?")
    assert "-hello from bosun" in screen and "+goodbye from bosun" in screen
    assert terminal.colours()  # without NO_COLOR the diff is coloured
    terminal.answer("n")
    terminal.wait_for("What should it do instead?")
    terminal.type("keep hello, add a line below")
    terminal.send("Enter")
    # a "no" with a reason carries on at once: the model answers without another message
    terminal.wait_for("Left it alone.")
    terminal.wait_for(prompt_ready)
    assert (workspace / "notes.txt").read_text() == "hello from bosun\n"
    terminal.send("C-d")
    terminal.wait_for("[exit 0]")
    [result] = [m for m in load_messages(only_session()) if isinstance(m, ToolResult)]
    assert result.content.endswith("instead, they said: keep hello, add a line below")


def test_run_on_a_terminal_asks_with_the_diff_once(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    script = script_file(
        tool_call("edit_file", path="notes.txt", old="hello", new="goodbye"), "Changed."
    )
    terminal.start(
        "change it", "--model", f"scripted:{script}", "--workspace", str(workspace),
        command="run",
    )  # fmt: skip
    screen = terminal.wait_for("Allow edit_file?")
    assert screen.count("goodbye") == 2  # the call line and the diff's +line, no JSON
    assert '{"path"' not in screen and "+goodbye from bosun" in screen
    terminal.answer("n", "Enter")
    screen = terminal.wait_for("[exit 4]")
    assert "declined" in screen and "Changed." not in screen


def test_ctrl_c_mid_stream_keeps_partial_answer(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    words = [f"word{i} " + ("\n\n" if i % 8 == 7 else "") for i in range(300)]
    script = script_file({"chunks": words, "delay_ms": 20}, "Second answer.")
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    terminal.type("go")
    terminal.send("Enter")
    terminal.wait_for("word12")
    terminal.send("C-c")
    screen = terminal.wait_for("stopped (interrupted)")
    terminal.wait_for(prompt_ready)
    assert "word299" not in screen
    terminal.type("again")
    terminal.send("Enter")
    terminal.wait_for("Second answer.")
    terminal.wait_for(prompt_ready)
    terminal.send("C-d")
    screen = terminal.wait_for("[exit 0]")
    # No line of the stream is left twice on screen (the ^C echo used to break Live).
    streamed = [line for line in screen.splitlines() if line.startswith("word")]
    assert len(streamed) == len(set(streamed))

    history = load_messages(only_session())
    assert [type(m) for m in history] == [System, User, Assistant, User, Assistant]
    partial = history[2].content  # type: ignore[union-attr]
    assert partial.startswith("word0 word1") and "word299" not in partial
    assert history[4] == Assistant("Second answer.")


def test_ctrl_c_while_a_tool_call_streams_drops_the_call(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    call = tool_call("write_file", path="x.txt", content="never\n" * 40)
    chunks = ["Writing the file now.\n\n"] + [call[i : i + 4] for i in range(0, len(call), 4)]
    script = script_file({"chunks": chunks, "delay_ms": 15}, "ok")
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    terminal.type("write x")
    terminal.send("Enter")
    terminal.wait_for("Writing the file now.")
    terminal.send("C-c")
    terminal.wait_for("stopped (interrupted)")
    terminal.wait_for(prompt_ready)
    terminal.type("/exit")
    terminal.send("Enter")
    terminal.wait_for("[exit 0]")
    assert not (workspace / "x.txt").exists()
    history = load_messages(only_session())
    assert history[-1] == Assistant("Writing the file now.")
    assert not any(isinstance(m, AssistantToolUse | ToolResult) for m in history)


def test_ctrl_c_twice_at_empty_prompt_exits(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    script = script_file("unused")
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    terminal.type("some draft")
    terminal.wait_for(lambda s: input_line(s) == "> some draft")
    terminal.send("C-c")  # clears the draft, does not arm exit
    terminal.wait_for(prompt_ready)
    assert "Ctrl-C again" not in terminal.scrollback()
    terminal.send("C-c")
    terminal.wait_for("Ctrl-C again or Ctrl-D to exit")
    terminal.send("C-c")
    terminal.wait_for("[exit 0]")


def test_chat_needs_a_terminal(workspace: Path, script_file) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "chat", "--model", f"scripted:{script_file('x')}"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode == 2 and "needs a terminal" in proc.stderr


def test_slash_commands_and_continue(terminal: Terminal, workspace: Path, script_file) -> None:
    script = script_file(
        {"chunks": ["Let me look.\n", tool_call("read_file", path="notes.txt")]},
        "It says hello.",
    )
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    terminal.type("/he")  # a unique prefix is enough
    terminal.send("Enter")
    terminal.wait_for("/approve")
    terminal.type("/approve auto-edit")
    terminal.send("Enter")
    terminal.wait_for("approve mode: auto-edit")
    terminal.type("what is in")
    terminal.send("Escape", "Enter")  # a new line, not sending yet
    terminal.type("notes.txt?")
    terminal.send("Enter")
    screen = terminal.wait_for("It says hello.")
    assert "read_file" in screen and "✓ 1 line" in screen
    terminal.wait_for(prompt_ready)
    terminal.type("/render")
    terminal.send("Enter")
    screen = terminal.wait_for("<tool_result>", timeout=10)
    terminal.type("/exit")
    terminal.send("Enter")
    terminal.wait_for("[exit 0]")
    first = only_session()

    terminal.close()
    second = Terminal(terminal.home)
    try:
        again = script_file("Still hello.")
        second.start("--model", f"scripted:{again}", "--workspace", str(workspace), "--continue")
        screen = second.wait_for(prompt_ready)
        assert f"session {first.stem}" in screen and "resumed" in screen
        assert "It says hello." in screen  # the end of the conversation is shown again
        second.send("Up")  # input history survives the restart
        second.wait_for(lambda s: input_line(s) == "> /exit", 5)
        second.send("C-c")  # clears the recalled line
        second.type("and now?")
        second.send("Enter")
        second.wait_for("Still hello.")
        second.type("/exit")
        second.send("Enter")
        second.wait_for("[exit 0]")
    finally:
        second.close()
    history = load_messages(first)  # continued in the same file
    assert User("what is in\nnotes.txt?") in history
    assert history[-2:] == [User("and now?"), Assistant("Still hello.")]
    assert len([m for m in history if isinstance(m, ToolResult)]) == 1


@pytest.mark.model
def test_real_model_answers(terminal: Terminal, workspace: Path) -> None:
    terminal.start("--model", "smollm2-135m", "--workspace", str(workspace), "--constrain", "never")
    terminal.wait_for(prompt_ready, timeout=60)
    terminal.type("Say hello.")
    terminal.send("Enter")
    terminal.wait_for(lambda s: prompt_ready(s) and "tok/s" in s and "> Say hello." in s, 120)
    history = load_messages(only_session())
    assert isinstance(history[1], User)
    assert len(history) >= 3  # the model said something (text or a tool call)
    terminal.type("/exit")
    terminal.send("Enter")
    terminal.wait_for("[exit 0]")
    assert json.loads(only_session().read_text().splitlines()[0])["model"] == "smollm2-135m"
