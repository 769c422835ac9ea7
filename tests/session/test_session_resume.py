"""Resume rebuilds the structured history exactly, and the model sees the same prompt
after a restart as it would have without one (prefix stability across restarts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent.history import Assistant, AssistantToolUse, ToolResult, User
from agent.protocol.render import render
from agent.run.chat import LOST_CALL, ChatSession
from agent.run.config import Config
from agent.run.settings import Settings
from agent.session import load_messages, load_session, sessions_dir
from tests.helpers import tool_call

REPO = Path(__file__).resolve().parents[2]


def headless(script: Path, workspace: Path, trace: Path, prompt: str = "look around") -> Path:
    env = {k: v for k, v in os.environ.items() if k != "BOSUN_DEBUG"}
    args = ["run", prompt, "--model", f"scripted:{script}", "--workspace", str(workspace)]
    proc = subprocess.run(
        [sys.executable, "-m", "agent", *args, "--trace", str(trace), "--output", "jsonl"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    (path,) = sessions_dir().glob("*.jsonl")
    return path


def resumed(path: Path, workspace: Path, script: Path) -> ChatSession:
    chat = ChatSession(
        Settings.from_config(Config(model=f"scripted:{script}"), workspace=workspace),
        lambda e: None,
        None,
    )
    chat.resume(path)
    return chat


def test_resume_renders_the_prompt_seen_before_the_restart(
    workspace: Path, script_file, tmp_path: Path
) -> None:
    script = script_file(
        "Let me look.\n" + tool_call("list_dir", path="."),
        tool_call("read_file", path="notes.txt"),
        "It says hello from bosun.",
    )
    trace = tmp_path / "trace.jsonl"
    path = headless(script, workspace, trace)
    prompts = [json.loads(line)["prompt"] for line in trace.read_text().splitlines()]
    assert len(prompts) == 3
    lines = path.read_text().splitlines(keepends=True)
    cut_file = tmp_path / "sessions" / path.name
    cut_file.parent.mkdir()
    checked = 0
    for n in range(1, len(lines) + 1):
        # Every point a kill could leave behind where a model call was due next.
        cut_file.write_text("".join(lines[:n]))
        history = load_messages(cut_file)
        if not history or not isinstance(history[-1], User | ToolResult):
            continue
        calls_done = sum(1 for m in history if isinstance(m, ToolResult))  # one per turn
        chat = resumed(cut_file, workspace, script_file("unused"))
        assert chat.next_prompt() == prompts[calls_done]
        chat.close()
        checked += 1
    assert checked >= 3  # after the user message and after each of the two results


def test_a_resumed_chat_continues_the_same_prefix(workspace: Path, script_file) -> None:
    first = ChatSession(
        Settings.from_config(
            Config(model=f"scripted:{script_file(tool_call('list_dir'), 'Two files.')}"),
            workspace=workspace,
        ),
        lambda e: None,
        None,
    )
    first.start_new()
    first.send("what is here?")
    before = first.driver.prompts[-1]
    expected = render([*first.history, User("and now?")], first.tools.specs(), first.driver.model)
    assert first.log is not None
    path = first.log.path
    first.close()

    chat = resumed(path, workspace, script_file("ok"))
    chat.send("and now?")
    sent = chat.driver.prompts[0]
    assert sent == expected
    assert sent.startswith(before)  # the KV cache from before the restart still applies
    chat.close()


def test_resume_answers_a_call_that_never_returned(
    workspace: Path, script_file, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    path = headless(script_file(tool_call("list_dir"), "done"), workspace, trace)
    lines = path.read_text().splitlines(keepends=True)
    use = next(i for i, line in enumerate(lines) if '"assistant_tool_use"' in line)
    path.write_text("".join(lines[: use + 1]))  # killed while the tool ran

    chat = resumed(path, workspace, script_file(tool_call("read_file", path="notes.txt"), "ok"))
    assert chat.history[-1] == ToolResult("call_1", LOST_CALL, is_error=True)
    chat.send("try again")
    ids = [m.call.id for m in chat.history if isinstance(m, AssistantToolUse)]
    assert ids == ["call_1", "call_2"]  # numbering continues, ids stay unique
    assert load_messages(path) == chat.history
    assert chat.history[-1] == Assistant("ok")
    chat.close()


def test_resume_works_in_the_sessions_own_workspace(
    workspace: Path, script_file, tmp_path: Path
) -> None:
    path = headless(script_file("hi"), workspace, tmp_path / "t.jsonl")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    chat = resumed(path, elsewhere, script_file("again"))
    assert chat.workspace == workspace.resolve()
    assert load_session(path).workspace == str(workspace.resolve())
    chat.close()
