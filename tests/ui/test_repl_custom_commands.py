"""A custom command typed in `bosun chat` (a real terminal, tmux): its expansion is
what the model gets."""

from __future__ import annotations

from pathlib import Path

from agent.history import User
from agent.session import load_messages, sessions_dir
from tests.ui.tmux import Terminal, needs_chat, needs_tmux, prompt_ready

pytestmark = [needs_tmux, needs_chat]


def test_a_custom_command_typed_in_chat(terminal: Terminal, workspace: Path, script_file) -> None:
    folder = workspace / ".bosun/commands"
    folder.mkdir(parents=True)
    (folder / "review.md").write_text(
        "---\ndescription: Review one file\n---\nReview $1 for $2 please.", encoding="utf-8"
    )
    terminal.start("--model", f"scripted:{script_file('Reviewed it.')}", "-w", str(workspace))
    terminal.wait_for(prompt_ready)
    terminal.type("/help")
    terminal.send("Enter")
    screen = terminal.wait_for("Review one file")
    assert "/review" in screen
    terminal.wait_for(prompt_ready)
    terminal.type("/review notes.txt typos")
    terminal.send("Enter")
    terminal.wait_for("Reviewed it.")
    terminal.wait_for(prompt_ready)
    terminal.type("/exit")
    terminal.send("Enter")
    terminal.wait_for("[exit 0]")
    (log,) = sorted(sessions_dir().glob("*.jsonl"))
    users = [m.content for m in load_messages(log) if isinstance(m, User)]
    assert users == ["Review notes.txt for typos please."]
