"""Long sessions: every prompt fits the context, nothing leaves the record, and a resumed
session shows the model the same compacted view (agent.loop.context, agent.loop.compact)."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest

from agent import events as ev
from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    System,
    ToolCall,
    ToolResult,
    User,
)
from agent.loop.budget import Budget
from agent.loop.context import Counter, Limits, View, cap_result, round_starts
from agent.run.assemble import Assembly, start_session
from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.models import open_model
from agent.run.settings import Settings
from agent.session import SessionLog, load_messages, load_session
from drivers.scripted import approx_tokens
from tests.helpers import tool_call

SUMMARY = "Summary: the files were read one by one; keep going with the next."
FILES = {f"f{i}.txt": f"file {i}: " + " ".join(f"word{i}x{j}" for j in range(60)) for i in range(7)}


def reading_script(turns: int) -> list[dict[str, object]]:
    """`turns` reads that cycle through the files, then an answer; summaries on demand."""
    names = sorted(FILES)
    steps: list[dict[str, object]] = [
        {"completion": tool_call("read_file", path=names[i % len(names)])} for i in range(turns)
    ]
    steps.append({"completion": "All read."})
    steps.append({"match": "Summarise this session so far", "completion": SUMMARY})
    return steps


def long_run(
    tmp_path: Path, turns: int, n_ctx: int, tools: tuple[str, ...] = ("-update_plan",)
) -> tuple[list, ev.RunFinished, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name, text in FILES.items():
        (workspace / name).write_text(text)
    script = tmp_path / "script.jsonl"
    script.write_text("\n".join(json.dumps(s) for s in reading_script(turns)) + "\n")
    driver, profile = open_model(f"scripted:{script}", context_size=n_ctx)
    log = SessionLog("long", tmp_path / "sessions")
    events: list[ev.AgentEvent] = []

    def emit(event: ev.AgentEvent) -> None:
        log.event(event)
        events.append(event)

    # The seven file and shell tools these budgets were set with: a tool more (the plan
    # tool) would take 255 of the 2,048 tokens and move every number here.
    settings = Settings(
        workspace=workspace,
        approve="auto",
        constrain="never",
        context_size=n_ctx,
        tools=tools,
    )
    agent = Assembly(settings, driver, profile, None).agent(emit, on_message=log.message)
    agent.budget = Budget(max_turns=turns + 5, max_tool_calls=turns + 5)
    start_session(agent, log.id)
    result = agent.run("Read every file, one at a time.")
    log.close()
    return events, result, log.path


def test_a_300_turn_session_at_2048_tokens_runs_to_its_end(tmp_path: Path) -> None:
    events, result, path = long_run(tmp_path, 300, 2048)
    assert result.status == "done", result.error
    assert result.tool_calls == 300
    prompts = [e.prompt_tokens for e in events if isinstance(e, ev.TurnFinished)]
    assert len(prompts) == 301 and max(prompts) < 2048  # the driver refuses any that do not
    compactions = [e for e in events if isinstance(e, ev.Compaction)]
    assert compactions and any(c.summary for c in compactions)
    assert all(c.tokens_after < c.tokens_before for c in compactions)
    # The record is whole: every call and every full result, in order.
    history = load_messages(path)
    calls = [m for m in history if isinstance(m, AssistantToolUse)]
    results = [m for m in history if isinstance(m, ToolResult)]
    assert len(calls) == len(results) == 300
    read = [c.call.arguments["path"] for c in calls]
    assert all(FILES[name].split()[-1] in r.content for name, r in zip(read, results, strict=True))
    assert not any("elided" in r.content for r in results)


def test_where_the_tools_leave_little_room_no_compaction_grows_the_prompt(
    tmp_path: Path,
) -> None:
    """With the plan tool too, the fixed part nears the ceiling at 2,048 tokens: a
    summary of one small round would cost more than the round, and must not be made."""
    events, result, _ = long_run(tmp_path, 40, 2048, tools=())
    assert result.status == "done", result.error
    compactions = [e for e in events if isinstance(e, ev.Compaction)]
    assert compactions and all(c.tokens_after < c.tokens_before for c in compactions)


def test_compaction_happens_once_every_few_turns_not_every_turn(tmp_path: Path) -> None:
    events, result, _ = long_run(tmp_path, 80, 4096)
    assert result.status == "done"
    turns = [i for i, e in enumerate(events) if isinstance(e, ev.TurnFinished)]
    marks = [i for i, e in enumerate(events) if isinstance(e, ev.Compaction)]
    between = [sum(1 for t in turns if a < t < b) for a, b in itertools.pairwise(marks)]
    assert marks and min(between, default=3) >= 3


def test_without_compaction_the_same_session_overflows(tmp_path: Path) -> None:
    """The falsifier's other side: the budget is what keeps the session alive."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name, text in FILES.items():
        (workspace / name).write_text(text)
    script = tmp_path / "script.jsonl"
    script.write_text("\n".join(json.dumps(s) for s in reading_script(40)) + "\n")
    driver, profile = open_model(f"scripted:{script}", context_size=2048)
    settings = Settings(workspace=workspace, approve="auto", constrain="never", max_turns=50)
    agent = Assembly(settings, driver, profile, None).agent(
        lambda _e: None, on_message=lambda _m: None
    )
    agent.seat.compactor = None
    start_session(agent, "x")
    result = agent.run("Read every file, one at a time.")
    assert result.status == "error" and "context holds 2048" in (result.error or "")


def test_a_resumed_session_shows_the_same_compacted_view(tmp_path: Path) -> None:
    events, result, path = long_run(tmp_path, 80, 2048)
    assert result.status == "done"
    stored = load_session(path)
    assert stored.compactions
    view = View()
    for record in stored.compactions:
        view.apply(record)
    last = [e for e in events if isinstance(e, ev.Compaction)][-1]
    assert view.cut == last.cut and view.summary
    shown = view.messages(stored.messages)
    assert shown[0] == stored.messages[0]  # the system prompt
    assert isinstance(shown[1], User) and shown[1].content.startswith("Read every file")
    assert SUMMARY in shown[1].content
    assert_pairs_valid(shown)


def test_chat_continue_resumes_after_a_compaction(tmp_path: Path, bosun_home: Path) -> None:
    script = tmp_path / "script.jsonl"
    steps = reading_script(40)
    steps.insert(-1, {"completion": "Resumed and done."})
    script.write_text("\n".join(json.dumps(s) for s in steps) + "\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name, text in FILES.items():
        (workspace / name).write_text(text)
    config = Config(model=f"scripted:{script}", approve="auto", context_size=2048)
    first = ChatSession(Settings.from_config(config, workspace=workspace), lambda _e: None, None)
    first.start_new()
    first.agent.budget.max_turns = 100
    assert first.send("Read every file, one at a time.").status == "done"
    view = first.agent.compactor.view
    assert view.summary and view.stubs
    expected = view.messages(first.history)
    path = first.log.path
    first.close()
    second = ChatSession(Settings.from_config(config, workspace=workspace), lambda _e: None, None)
    second.resume(path)
    assert second.agent.compactor.view.messages(second.history) == expected
    second.close()


def assert_pairs_valid(messages: list[Message]) -> None:
    """Every call is answered right after its turn, and no result is an orphan."""
    open_calls: set[str] = set()
    for m in messages:
        if isinstance(m, AssistantToolUse):
            open_calls.add(m.call.id)
        elif isinstance(m, ToolResult):
            assert m.call_id in open_calls, m
            open_calls.discard(m.call_id)
        elif isinstance(m, User):
            assert not open_calls
    assert not open_calls


def test_views_cut_only_where_every_call_has_its_result() -> None:
    call = ToolCall("c1", "read_file", {"path": "a"})
    history: list[Message] = [
        System("s"),
        User("task"),
        AssistantToolUse(call),
        ToolResult("c1", "A" * 500),
        AssistantToolUse(ToolCall("c2", "read_file", {"path": "b"})),
        ToolResult("c2", "B"),
        User("next request"),
        AssistantToolUse(ToolCall("c3", "list_dir", {})),
        ToolResult("c3", "x"),
    ]
    assert round_starts(history) == [2, 4, 7]
    view = View(stubs={"c1": "[stub]"})
    view.apply({"summary": "earlier: read a and b", "cut": 4})
    shown = view.messages(history)
    assert [type(m).__name__ for m in shown] == [
        "System",
        "User",
        "AssistantToolUse",
        "ToolResult",
        "User",
        "AssistantToolUse",
        "ToolResult",
    ]
    assert shown[1].content.endswith("earlier: read a and b")
    assert_pairs_valid(shown)
    assert view.messages(history)[1] is shown[1]  # the same object: counted once


@pytest.mark.parametrize("size", [10, 5000, 40_000])
def test_a_large_result_is_cut_to_head_and_tail_with_how_to_get_the_rest(size: int) -> None:
    counter = Counter(lambda text: text.split())
    content = "\n".join(f"line {i}" for i in range(size))
    out = cap_result(ToolResult("c", content), 512, counter)
    if counter.text(content) <= 512:
        assert out.content == content
        return
    assert counter.text(out.content) <= 512 + 60
    assert out.content.startswith("line 0\n") and out.content.endswith(f"line {size - 1}")
    assert "left out to fit the context" in out.content and "offset" in out.content


def test_counting_is_per_message_and_cached() -> None:
    calls: list[str] = []

    def tokenize(text: str) -> list[str]:
        calls.append(text)
        return text.split()

    counter = Counter(tokenize)
    history = [System("a b c"), User("d e")]
    first = counter.total(history, [])
    history.append(User("f"))
    assert counter.total(history, []) == first + 1 + 8
    assert calls == ["a b c", "d e", "f"]  # nothing counted twice


def test_limits_keep_a_margin_whatever_compact_at_is() -> None:
    assert Limits(1000).ceiling == 800 and Limits(1000).goal == 600
    assert Limits(1000, compact_at=0.4).goal == 300
    assert approx_tokens("read_file(a.txt)") == 6


def test_stubs_come_first_and_spare_a_model_call() -> None:
    """Old results become stubs, oldest first, and when that is enough no summary is
    asked for (a summary costs a model call); the latest rounds stay as they were."""
    from agent.loop.compact import Compactor

    big = " ".join(f"w{j}" for j in range(150))
    history: list[Message] = [System("sys"), User("task")]
    for i in range(6):
        history += [AssistantToolUse(ToolCall(f"c{i}", "read_file", {"path": f"{i}"}))]
        history += [ToolResult(f"c{i}", big)]
    asked: list[int] = []

    def summarise(shown: list[Message], elided: list[Message]) -> str:
        asked.append(len(elided))
        return "summary"

    compactor = Compactor(Limits(1000), Counter(str.split))
    event = compactor.fit(history, [], summarise)
    assert event is not None and not asked and not event.summary
    assert list(event.stubs) == ["c0", "c1", "c2", "c3"][: len(event.stubs)] and event.stubs
    assert event.tokens_after <= Limits(1000).goal < event.tokens_before
    assert "c4" not in compactor.view.stubs and "c5" not in compactor.view.stubs
    assert "read_file" in event.stubs["c0"] and "elided" in event.stubs["c0"]


def test_a_result_is_cut_to_the_room_the_fixed_part_leaves(tmp_path: Path) -> None:
    """A small context whose system prompt and tools take most of it: a result within
    the usual share (a quarter) still would not leave room for the next prompt, so it
    is cut to the room there is, and the run goes on instead of overflowing."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "big.txt").write_text(" ".join(f"w{i}" for i in range(3000)))
    script = tmp_path / "script.jsonl"
    steps = [
        {"completion": tool_call("read_file", path="big.txt")},
        {"completion": "Read."},
        {"match": "Summarise this session so far", "completion": SUMMARY},
    ]
    script.write_text("\n".join(json.dumps(s) for s in steps) + "\n")

    def run(n_ctx: int) -> tuple[ev.RunFinished, list[int]]:
        driver, profile = open_model(f"scripted:{script}", context_size=n_ctx)
        events: list[ev.AgentEvent] = []
        settings = Settings(  # no repo map: at 16k it would join the fixed part
            workspace=workspace,
            approve="auto",
            constrain="never",
            context_size=n_ctx,
            repo_map_tokens=0,
        )
        agent = Assembly(settings, driver, profile, None).agent(
            events.append, on_message=lambda m: None
        )
        start_session(agent, "room")
        result = agent.run("Read big.txt.")
        return result, [e.prompt_tokens for e in events if isinstance(e, ev.TurnFinished)]

    _, [fixed, *_] = run(16384)  # the first prompt: system prompt, tools, task
    n_ctx = fixed + 300  # a quarter of it is more than the 300 tokens left
    result, prompts = run(n_ctx)
    assert result.status == "done", result.error
    assert len(prompts) == 2 and max(prompts) < n_ctx


def test_a_long_answer_in_a_small_context_never_wedges_the_session(
    tmp_path: Path, bosun_home: Path
) -> None:
    """A small context whose system prompt and tools take most of it, and a long answer:
    the latest round alone leaves no room to answer the next message. The compaction
    then cuts at the user's new message, so every later message still gets an answer
    (before: each one failed with "the prompt is N tokens but the context holds M")."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text(" ".join(f"w{i}" for i in range(80)))
    long_answer = " ".join(f"point{i}" for i in range(260))
    script = tmp_path / "script.jsonl"
    steps = [
        {"completion": tool_call("read_file", path="a.txt")},
        {"completion": long_answer},
        {"completion": "Hello."},
        {"completion": "Hello again."},
        {"match": "Summarise this session so far", "completion": SUMMARY},
    ]
    script.write_text("\n".join(json.dumps(s) for s in steps) + "\n")
    # no repo map: at 16k it (and its tools) would join the fixed part measured here
    config = Config(
        model=f"scripted:{script}", approve="auto", context_size=16384, repo_map_tokens=0
    )
    probe = ChatSession(Settings.from_config(config, workspace=workspace), lambda _e: None, None)
    probe.start_new()
    fixed = probe.agent.compactor.size([*probe.history, User("Read a.txt.")], probe.tools.specs())
    probe.close()
    n_ctx = fixed + 400  # the long answer alone takes most of what is left
    events: list[ev.AgentEvent] = []
    config = replace(config, context_size=n_ctx)
    chat = ChatSession(Settings.from_config(config, workspace=workspace), events.append, None)
    chat.start_new()
    statuses = [chat.send(m).status for m in ("Read a.txt.", "Say hello.", "And again.")]
    assert statuses == ["done"] * 3, [e for e in events if isinstance(e, ev.RunFinished)]
    prompts = [e.prompt_tokens for e in events if isinstance(e, ev.TurnFinished)]
    assert len(prompts) == 4 and max(prompts) <= n_ctx - Limits(n_ctx).min_reply
    shown = chat.agent.compactor.view.messages(chat.history)
    assert shown[-2:] == [User("And again."), Assistant("Hello again.")]
    assert_pairs_valid(shown)
    assert Assistant(long_answer) in chat.history  # the record keeps it
    chat.close()
