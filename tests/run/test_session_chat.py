"""The chat controller in process: multi-turn budgets, interrupts, repairs, model switch."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from agent import events as ev
from agent.errors import UsageError
from agent.history import Assistant, AssistantToolUse, System, ToolCall, ToolResult, User
from agent.loop.turn import cut_partial_marker
from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.settings import Settings
from agent.session import load_messages
from agent.tools.orchestrator import INTERRUPTED_CALL, STOPPED_CALL
from agent.ui.commands import init_prompt
from tests.helpers import tool_call


def chat_with(script: Path, workspace: Path, events: list, approver=None, **config) -> ChatSession:
    chat = ChatSession(
        Settings.from_config(Config(model=f"scripted:{script}", **config), workspace=workspace),
        events.append,
        approver if approver is not None else (lambda call, tool: "yes"),
    )
    chat.start_new()
    return chat


def test_budgets_guard_one_user_turn_not_the_conversation(workspace: Path, script_file) -> None:
    look = tool_call("list_dir", path=".")
    script = script_file(*[s for _ in range(4) for s in (look, "done")])
    events: list = []
    chat = chat_with(script, workspace, events)
    chat.agent.budget.max_turns = 2  # each user turn needs exactly 2 model calls
    statuses = [chat.send(f"turn {i}").status for i in range(4)]
    assert statuses == ["done"] * 4
    ids = [m.call.id for m in chat.history if isinstance(m, AssistantToolUse)]
    assert ids == ["call_1", "call_2", "call_3", "call_4"]  # unique across turns
    chat.close()


def test_sigint_mid_stream_keeps_prose_and_drops_the_call(workspace: Path, script_file) -> None:
    call = tool_call("write_file", path="x.txt", content="x")
    script = script_file({"chunks": ["Partial ", "answer ", "<tool_", call[6:], "tail"]}, "next")
    events: list = []

    def emit(event: ev.AgentEvent) -> None:
        events.append(event)
        if isinstance(event, ev.TextDelta) and "answer" in event.text:
            os.kill(os.getpid(), signal.SIGINT)  # as the terminal's Ctrl-C would

    chat = ChatSession(
        Settings.from_config(Config(model=f"scripted:{script}"), workspace=workspace), emit, None
    )
    chat.start_new()
    before = signal.getsignal(signal.SIGINT)
    result = chat.send("go")
    assert result.status == "interrupted"
    assert signal.getsignal(signal.SIGINT) is before  # the REPL's handler is back
    assert chat.history[-2:] == [User("go"), Assistant("Partial answer")]
    assert not any(isinstance(e, ev.ToolCallEvent) for e in events)
    assert chat.send("again").status == "done"  # the conversation goes on
    assert chat.history[-1] == Assistant("next")
    assert load_messages(chat.log.path) == chat.history
    chat.close()


def test_ctrl_c_at_the_approval_question_answers_every_call(workspace: Path, script_file) -> None:
    calls = tool_call("write_file", path="a.txt", content="a") + tool_call(
        "write_file", path="b.txt", content="b"
    )
    script = script_file(calls)

    def approver(call: ToolCall, tool: object) -> str:
        raise KeyboardInterrupt

    chat = chat_with(script, workspace, [], approver)
    assert chat.send("write both").status == "interrupted"
    results = [m for m in chat.history if isinstance(m, ToolResult)]
    assert [r.is_error for r in results] == [True, True]
    assert results[1].content == INTERRUPTED_CALL
    assert not (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()
    chat.close()


def test_a_hard_interrupt_inside_a_tool_still_leaves_answered_calls(
    workspace: Path, script_file, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = script_file(tool_call("read_file", path="notes.txt"))
    chat = chat_with(script, workspace, [])

    def boom(*_args: object) -> None:
        raise KeyboardInterrupt  # a second Ctrl-C while the tool ran

    monkeypatch.setattr(chat.tools, "execute", boom)
    assert chat.send("read").status == "interrupted"
    use, result = chat.history[-2:]
    assert isinstance(use, AssistantToolUse) and isinstance(result, ToolResult)
    assert result.call_id == use.call.id and result.is_error
    assert load_messages(chat.log.path) == chat.history
    chat.close()


def test_clear_starts_a_new_file_with_fresh_instructions(workspace: Path, script_file) -> None:
    chat = chat_with(script_file("one", "two"), workspace, [])
    chat.send("first")
    old = chat.log.path
    (workspace / "AGENTS.md").write_text("Always answer in French.\n")
    chat.start_new()
    assert chat.log.path != old and len(chat.history) == 1
    assert "Always answer in French." in chat.history[0].content
    assert chat.stats.calls == 0
    chat.close()


def test_switch_model_keeps_history(workspace: Path, script_file) -> None:
    chat = chat_with(script_file("from the first"), workspace, [])
    chat.send("hi")
    chat.apply(chat.settings.but(model=f"scripted:{script_file('from the second')}"))
    chat.send("and you?")
    assert [m.content for m in chat.history if isinstance(m, Assistant)] == [
        "from the first",
        "from the second",
    ]
    assert "from the first" in chat.driver.prompts[0]  # the new model saw it all
    chat.close()


def test_a_model_that_fails_to_open_leaves_the_session_as_it_was(
    workspace: Path, script_file
) -> None:
    """`/model` goes through `apply`: the new model is opened before the old one is
    closed, so a bad one changes nothing, settings included."""
    chat = chat_with(script_file("first", "second"), workspace, [])
    chat.send("hi")
    before, seat = chat.settings, chat.agent.seat
    with pytest.raises(UsageError, match="not found"):
        chat.apply(chat.settings.but(model="scripted:/nonexistent/script.jsonl"))
    assert chat.settings == before and chat.agent.seat is seat
    assert chat.send("again").status == "done"
    chat.close()


def test_apply_changes_only_what_differs(workspace: Path, script_file) -> None:
    chat = chat_with(script_file("x"), workspace, [])
    seat = chat.agent.seat
    chat.apply(chat.settings.but(approve="read-only"))
    assert chat.agent.approve == "read-only" and chat.agent.seat is seat  # no reload
    chat.apply(chat.settings.but(sandbox=None))
    assert chat.agent.sandbox is None and chat.agent.seat is seat
    chat.close()


def test_status_numbers(workspace: Path, script_file) -> None:
    chat = chat_with(script_file("a b c"), workspace, [])
    chat.send("count")
    stats = chat.stats
    assert stats.calls == 1 and stats.total.completion_tokens == 3
    assert stats.context_used == stats.total.prompt_tokens + 3
    chat.close()


def test_init_asks_the_model_to_survey_and_write_agents_md(workspace: Path) -> None:
    prompt = init_prompt(workspace)
    assert "write AGENTS.md" in prompt and "AGENTS.md exists" not in prompt
    (workspace / "AGENTS.md").write_text("# old\n")
    assert "AGENTS.md exists: read it" in init_prompt(workspace)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Done.\n\n<tool_ca", "Done."),
        ("Done. <", "Done."),
        ("see [[CA", "see"),
        ("a < b is true", "a < b is true"),
        ("plain", "plain"),
    ],
)
def test_cut_partial_marker(text: str, kept: str) -> None:
    assert cut_partial_marker(text) == kept


def test_system_prompt_carries_project_instructions(workspace: Path, script_file) -> None:
    (workspace / "AGENTS.md").write_text("Run make test before you finish.\n")
    chat = chat_with(script_file("ok"), workspace, [])
    assert isinstance(chat.history[0], System)
    assert "Run make test before you finish." in chat.history[0].content
    chat.close()


def test_ctrl_c_stops_a_running_command_at_once(workspace: Path, script_file) -> None:
    script = script_file(tool_call("bash", command="sleep 30"))

    def emit(event: ev.AgentEvent) -> None:
        if isinstance(event, ev.ToolCallEvent):
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()

    chat = ChatSession(
        Settings.from_config(
            Config(model=f"scripted:{script}", approve="auto"), workspace=workspace
        ),
        emit,
        None,
    )
    chat.start_new()
    started = time.monotonic()
    assert chat.send("wait").status == "interrupted"
    assert time.monotonic() - started < 10
    result = chat.history[-1]
    assert isinstance(result, ToolResult) and result.content == STOPPED_CALL
    chat.close()


def test_compact_says_what_it_did_or_which_reason_kept_it(workspace: Path, script_file) -> None:
    (workspace / "big.txt").write_text("".join(f"line {i} of a long file\n" for i in range(300)))
    read = tool_call("read_file", path="big.txt")
    script = script_file(read, "read it", "ok")
    events: list = []
    unknown = chat_with(script_file("x"), workspace, events)
    assert unknown.compact() == (
        "nothing to compact: the context size is unknown (give --context-size N)"
    )
    unknown.close()
    chat = chat_with(script, workspace, events, context_size=32768)
    said = chat.compact()
    assert said.startswith("nothing to compact: the context holds") and "latest request" in said
    chat.send("read big.txt")
    chat.send("and now?")  # the read is an older request's now: it can be folded
    said = chat.compact()
    assert said.startswith("compacted: "), said
    before, after = (int(n.replace(",", "")) for n in said[11:].split(" tokens")[0].split(" → "))
    assert after < before
    chat.close()
