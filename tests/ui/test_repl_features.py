"""`bosun chat` features a user reaches for, in a real terminal (tmux): one-key
approvals, /tools after "always", /diff and /undo, @file mentions with completion,
!commands, /save as Markdown, the resume hint and picker, a near-full context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.history import User
from agent.session import load_messages, sessions_dir
from tests.helpers import tool_call
from tests.ui.tmux import Terminal, input_line, needs_chat, needs_tmux, prompt_ready

pytestmark = [needs_tmux, needs_chat]


def session_files() -> list[Path]:
    return sorted(sessions_dir().glob("*.jsonl"))


def users(path: Path) -> list[str]:
    return [m.content for m in load_messages(path) if isinstance(m, User)]


def ask(terminal: Terminal, text: str, wanted: str, timeout: float = 20.0) -> str:
    """Type a message, send it, and wait for `wanted` and the prompt after it."""
    start = len(terminal.scrollback())
    terminal.type(text)
    terminal.send("Enter")
    terminal.wait_for(wanted, timeout, after=start - 200 if start > 200 else 0)
    return terminal.wait_for(prompt_ready, timeout)


def test_one_key_always_tools_diff_undo_and_the_resume_hint(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    script = script_file(
        tool_call("write_file", path="a.txt", content="first\n"),
        "Wrote a.",
        tool_call("edit_file", path="notes.txt", old="hello", new="goodbye"),
        "Edited notes.",
    )
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    screen = terminal.wait_for(prompt_ready)
    assert "loading" not in screen  # the loading spinner goes once the model is up
    terminal.type("make a")
    terminal.send("Enter")
    terminal.wait_for("Allow write_file?")
    terminal.answer("a")  # one key, no Enter: always for this tool
    terminal.wait_for("Wrote a.")
    terminal.wait_for(prompt_ready)
    screen = ask(terminal, "/tools", "what it does")
    [row] = [line for line in screen.splitlines() if line.split()[:1] == ["write_file"]]
    assert "runs (always)" in row

    terminal.type("edit notes")
    terminal.send("Enter")
    terminal.wait_for("Allow edit_file?")
    terminal.answer("y")
    terminal.wait_for("Edited notes.")
    terminal.wait_for(prompt_ready)
    assert (workspace / "notes.txt").read_text() == "goodbye from bosun\n"

    screen = ask(terminal, "/diff", "+++ b/notes.txt")
    assert "+++ b/a.txt" in screen and "-hello from bosun" in screen
    screen = ask(terminal, "/undo", "restored: notes.txt")
    assert (workspace / "notes.txt").read_text() == "hello from bosun\n"
    assert (workspace / "a.txt").read_text() == "first\n"  # an earlier turn: still there
    screen = ask(terminal, "/undo", "deleted (bosun had created them): a.txt")
    assert not (workspace / "a.txt").exists()  # created by bosun: undone is gone
    ask(terminal, "/undo", "nothing more to undo")

    terminal.send("C-d")
    screen = terminal.wait_for("[exit 0]")
    [path] = session_files()
    assert f"resume this session: bosun chat --resume {path.stem}" in screen


def test_mentions_shell_commands_and_markdown_export(
    terminal: Terminal, workspace: Path, script_file, tmp_path: Path
) -> None:
    script = script_file("Summarised.", "Seen the output.")
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    terminal.type("summarise @not")
    terminal.send("Tab")
    terminal.wait_for("> summarise @notes.txt")
    terminal.send("Enter")  # takes the completion
    terminal.send("Enter")  # sends
    screen = terminal.wait_for("Summarised.")
    assert "attached: notes.txt" in screen
    terminal.wait_for(prompt_ready)

    ask(terminal, "!echo shell-out && ls", "the model sees this with your next message")
    assert "shell-out" in terminal.scrollback()
    ask(terminal, "what now?", "Seen the output.")
    export = workspace / "talk.md"  # /save writes inside the workspace only
    ask(terminal, f"/save {export}", "transcript)")
    terminal.send("C-d")
    terminal.wait_for("[exit 0]")

    [path] = session_files()
    first, second = users(path)
    assert first.startswith('summarise @notes.txt\n\n<file path="notes.txt">\nhello from bosun\n')
    assert second.startswith("I ran `echo shell-out && ls` myself; its output:\n```")
    assert "shell-out" in second and "notes.txt" in second and second.endswith("what now?")
    markdown = export.read_text()
    assert markdown.startswith("## User\n\nsummarise @notes.txt")
    assert "## Assistant\n\nSeen the output." in markdown


def test_resume_without_an_id_offers_this_folders_sessions(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    script = script_file("First answer.", "Second answer.")
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    ask(terminal, "remember the word tangerine", "First answer.")
    terminal.send("C-d")
    terminal.wait_for("[exit 0]")
    terminal.close()

    again = Terminal(terminal.home)
    try:
        again.start(
            "--model", f"scripted:{script}", "--workspace", str(workspace), "--resume",
            "--context-size", "4096",
        )  # fmt: skip
        screen = again.wait_for("Resume which?")
        assert "remember the word tangerine" in screen and " 1  " in screen
        again.type("1")
        again.send("Enter")
        again.wait_for("resumed: 3 messages")
        screen = again.wait_for(prompt_ready)
        # the status bar knows the resumed context before any new call
        assert "ctx 0/" not in screen.splitlines()[-1] and "/4.1k" in screen.splitlines()[-1]
    finally:
        again.close()
    [path] = session_files()  # the same session file goes on
    assert users(path) == ["remember the word tangerine"]


@pytest.mark.model
def test_a_nearly_full_context_leaves_the_chat_usable(terminal: Terminal, workspace: Path) -> None:
    """Finding 1 of the terminal review: at --context-size 1400 two reads used to wedge
    the session (a ValueError on every later message)."""
    (workspace / "notes.txt").write_text("".join(f"line {n}: some notes\n" for n in range(60)))
    terminal.start(
        "--model", "smollm2-135m", "--workspace", str(workspace), "--context-size", "1400",
        "--approve", "auto",
    )  # fmt: skip
    terminal.wait_for(prompt_ready, timeout=90)
    for message in ("Read notes.txt", "Read notes.txt again", "Say hello."):
        start = len(terminal.scrollback())
        terminal.type(message)
        terminal.send("Enter")
        terminal.wait_for(f"> {message}", 30)
        terminal.wait_for(lambda s, n=start: prompt_ready(s) and len(s) > n, timeout=240)
    screen = terminal.scrollback()
    assert "internal error" not in screen and "Traceback" not in screen
    assert "stopped (error)" not in screen, screen
    terminal.send("C-d")
    terminal.wait_for("[exit 0]", 30)
    [path] = session_files()
    # the last message the person sent (bosun's own notes on a malformed reply aside)
    typed = [u for u in users(path) if not u.startswith("Your last reply had a problem")]
    assert typed[-1] == "Say hello."
    # every message got a model turn that ended without an error (what the model said,
    # a 135M model's, may be anything, even nothing)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    results = [r for r in records if r.get("type") == "result"]
    assert [r["status"] != "error" for r in results] == [True] * 3, (results, screen)


def test_init_has_the_model_write_agents_md_and_a_spinner_runs_with_bash(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    script = script_file(
        tool_call("write_file", path="AGENTS.md", content="# notes project\n"),
        "Wrote AGENTS.md.",
        tool_call("bash", command="sleep 3; echo slept"),
        "Slept.",
    )
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    terminal.type("/init")
    terminal.send("Enter")
    terminal.wait_for("Allow write_file?")
    terminal.answer("y")
    terminal.wait_for("Wrote AGENTS.md.")
    terminal.wait_for(prompt_ready)
    assert (workspace / "AGENTS.md").read_text() == "# notes project\n"
    [path] = session_files()
    assert users(path)[0].startswith("Survey this project and write AGENTS.md")

    terminal.type("sleep a bit")
    terminal.send("Enter")
    terminal.wait_for("Allow bash?")
    terminal.answer("y")
    terminal.wait_for(lambda s: "working…" in s.split("Allow bash?")[-1], timeout=3)
    terminal.wait_for("Slept.")
    terminal.wait_for(prompt_ready)


def test_esc_stops_the_answer_like_ctrl_c(terminal: Terminal, workspace: Path, script_file) -> None:
    words = [f"word{i} " + ("\n\n" if i % 8 == 7 else "") for i in range(300)]
    script = script_file(
        {"chunks": words, "delay_ms": 20},
        tool_call("write_file", path="b.txt", content="x\n"),
        "After the write.",
    )
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    terminal.type("go")
    terminal.send("Enter")
    terminal.wait_for("word12")
    terminal.send("Left")  # an escape sequence (Esc [ D) is not an Esc
    terminal.wait_for("word20")
    terminal.send("Escape")
    screen = terminal.wait_for("stopped (interrupted)")
    terminal.wait_for(prompt_ready)
    assert "word299" not in screen
    # the approval question still gets its keys while the watcher is paused
    terminal.type("write b")
    terminal.send("Enter")
    terminal.wait_for("Allow write_file?")
    terminal.answer("y")
    terminal.wait_for("After the write.")
    terminal.wait_for(prompt_ready)
    assert (workspace / "b.txt").read_text() == "x\n"
    terminal.send("C-d")
    terminal.wait_for("[exit 0]")


def test_keys_typed_during_an_answer_reach_the_next_prompt(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    """Type-ahead, as in a shell: the Esc watcher reads the keyboard while the model
    answers, and used to drop every other key, so a `/exit` typed as the answer ended
    was lost. A line ended with Enter is sent; the rest waits in the input line."""
    words = [f"word{i} " for i in range(60)]
    script = script_file({"chunks": words, "delay_ms": 30}, {"chunks": words, "delay_ms": 30})
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace))
    terminal.wait_for(prompt_ready)
    terminal.type("go")
    terminal.send("Enter")
    terminal.wait_for("word5")
    terminal.type("/usage")
    terminal.send("Enter")
    terminal.type("and thé next")
    screen = terminal.wait_for(lambda s: input_line(s) == "> and thé next")
    assert "word59" in screen and "model calls" in screen  # /usage ran after the answer
    terminal.send("Enter")
    terminal.wait_for(lambda s: s.count("word59") == 2)
    terminal.type("/exit")  # typed the moment the answer ends
    terminal.send("Enter")
    terminal.wait_for("[exit 0]")
    assert users(session_files()[0]) == ["go", "and thé next"]


def test_result_shows_a_cut_tool_result_in_full_and_y_approves_all(
    terminal: Terminal, workspace: Path, script_file
) -> None:
    (workspace / "notes.txt").write_text("".join(f"note line {n}\n" for n in range(1, 11)))
    script = script_file(tool_call("read_file", path="notes.txt"), "Read it.")
    terminal.start("--model", f"scripted:{script}", "--workspace", str(workspace), "-y")
    terminal.wait_for(prompt_ready)
    screen = ask(terminal, "read the notes", "Read it.")
    assert "(/result shows all)" in screen and "note line 10" not in screen
    assert "Allow" not in screen  # -y: --approve auto
    screen = ask(terminal, "/result", "note line 10")
    assert "note line 9" in screen
    ask(terminal, "/result 2", "there are 1 tool results")
