"""Workspace hooks in a chat: asked about once, before anything runs; a yes is
remembered, a no leaves them off with one line; SessionStart runs at the start."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from agent import events as ev
from agent.run.chat import ChatSession
from agent.run.config import load_config
from agent.run.settings import Settings
from agent.tools.hooks import HookSpec


def _chat(workspace: Path, script: Path, answers: list[bool], asked: list[int], said: list[str]):
    config = load_config(workspace)
    settings = Settings.from_config(
        config, workspace=workspace.resolve(), model=f"scripted:{script}"
    )

    def ask(hooks: Sequence[HookSpec]) -> bool:
        asked.append(len(hooks))
        return answers.pop(0)

    events: list[ev.AgentEvent] = []
    chat = ChatSession(
        settings, events.append, lambda call, tool: "yes", ask_hooks=ask, report=said.append
    )
    chat.start_new()
    return chat, events


def test_workspace_hooks_are_asked_about_once_and_remembered(
    workspace: Path, tmp_path: Path, script_file
) -> None:
    (workspace / ".claude").mkdir()
    start = {"type": "command", "command": "echo 'the build is green'"}
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"SessionStart": [{"hooks": [start]}]}})
    )
    script = script_file("hi", "hi again")
    asked: list[int] = []
    said: list[str] = []
    chat, events = _chat(workspace, script, [False], asked, said)
    chat.send("hello")
    assert asked == [1] and not [e for e in events if isinstance(e, ev.HookRan)]
    assert any("not run: not approved" in line for line in said)
    assert "the build is green" not in chat.driver.prompts[0]
    chat.close()
    chat, events = _chat(workspace, script, [True], asked, said)
    chat.send("hello")
    assert asked == [1, 1]
    assert "the build is green" in chat.driver.prompts[0]
    chat.close()
    chat, events = _chat(workspace, script, [], asked, said)  # remembered: not asked
    assert asked == [1, 1]
    assert [e.event for e in events if isinstance(e, ev.HookRan)] == ["SessionStart"]
    chat.close()
