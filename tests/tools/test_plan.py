"""update_plan: Codex's plan tool. A call that fits becomes a `plan` event (JSONL, the
session file, a resumed chat); one that does not is an error result saying the shape."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent import events as ev
from agent.protocol.profile import profile_for
from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.output import TextPrinter
from agent.run.settings import Settings
from agent.session import load_session, sessions_dir
from agent.tools import tool_set
from agent.tools.plan import MAX_STEPS, plan_from_record, update_plan
from tests.helpers import make_agent, tool_call

REPO = Path(__file__).resolve().parents[2]
FIRST = [
    {"step": "read the failing test", "status": "completed"},
    {"step": "fix the parser", "status": "in_progress"},
    {"step": "run the tests", "status": "pending"},
]
DONE = [{**s, "status": "completed"} for s in FIRST]


def plans(events: list[ev.AgentEvent]) -> list[ev.PlanUpdated]:
    return [e for e in events if isinstance(e, ev.PlanUpdated)]


def results(events: list[ev.AgentEvent]) -> list[ev.ToolResultEvent]:
    return [e for e in events if isinstance(e, ev.ToolResultEvent)]


def test_update_plan_calls_become_plan_events(workspace: Path) -> None:
    agent, _, events = make_agent(
        [
            tool_call("update_plan", explanation="the parser drops the last line", plan=FIRST),
            tool_call("update_plan", plan=DONE),
            "All done.",
        ],
        workspace,
        approve="ask",  # nobody to ask: a read-kind tool runs all the same
    )
    result = agent.run("fix it")
    assert result.status == "done"
    assert [(r.is_error, r.content) for r in results(events)] == [(False, "Plan updated")] * 2
    first, last = plans(events)
    assert first.to_dict() == {
        "type": "plan",
        "explanation": "the parser drops the last line",
        "steps": FIRST,
    }
    assert last.explanation == "" and last.steps == DONE
    order = [e.type for e in events if e.type in ("tool_call", "tool_result", "plan")]
    assert order == ["tool_call", "tool_result", "plan"] * 2


@pytest.mark.parametrize(
    ("plan", "said"),
    [
        (
            [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}],
            "2 steps are in_progress; at most one",
        ),
        ([{"step": "a", "status": "done"}], "'done' is not one of"),
        ("read, then fix", "is not of type 'array'"),
        ([["a", "pending"]], "is not of type 'object'"),
        ([{"step": "a"}], "'status' is a required property"),
        ([{"step": "  ", "status": "pending"}], "step 1: step must be a non-empty string"),
        ([{"step": "x" * 600, "status": "pending"}], "keep a step under"),
        ([{"step": f"s{i}", "status": "pending"} for i in range(MAX_STEPS + 1)], "at most 50"),
    ],
)
def test_invalid_plans_are_error_results(workspace: Path, plan: Any, said: str) -> None:
    agent, _, events = make_agent([tool_call("update_plan", plan=plan), "ok"], workspace)
    agent.run("plan it")
    (result,) = results(events)
    assert result.is_error and said in result.content, result.content
    assert '"plan": [{"step": string, "status": "pending" | "in_progress"' in result.content
    assert not plans(events)  # a bad plan leaves the plan as it was


def test_a_plan_missing_altogether_says_the_shape(workspace: Path) -> None:
    agent, _, events = make_agent([tool_call("update_plan", steps=FIRST), "ok"], workspace)
    agent.run("plan it")
    (result,) = results(events)
    assert result.is_error and "'plan' is a required property" in result.content
    assert "expected {" in result.content and not plans(events)


@pytest.mark.parametrize("mode", ["read-only", "ask", "auto-edit", "auto"])
def test_update_plan_never_asks(workspace: Path, mode: str) -> None:
    agent, _, events = make_agent([tool_call("update_plan", plan=FIRST), "ok"], workspace)
    agent.set_approve(mode)
    agent.run("plan it")
    assert [r.content for r in results(events)] == ["Plan updated"]
    assert update_plan.kind == "read" and update_plan.written_paths({"plan": FIRST}) == []


def test_tool_sets_offer_it_by_default_but_not_to_the_tiny_bundled_models() -> None:
    assert "update_plan" in [t.name for t in tool_set()]
    assert "update_plan" not in [t.name for t in tool_set(["-update_plan"])]
    for tiny in ("smollm2-135m", "gemma3-270m", "gemma-3-270m-it-q8_0"):
        changes = profile_for(tiny).tool_changes
        assert "update_plan" not in [t.name for t in tool_set(changes)], tiny
        assert "update_plan" in [t.name for t in tool_set([*changes, "+update_plan"])]
    for model in ("gemma-3-4b-it", "Qwen3-8B", "openai:http://127.0.0.1:9/v1#gpt-oss-20b"):
        assert "update_plan" in [t.name for t in tool_set(profile_for(model).tool_changes)]


def test_the_grammar_takes_a_plan_and_holds_statuses_to_the_three() -> None:
    from tests.gbnf_check import grammar_accepts

    grammars = profile_for("smollm2-135m").grammars([t.spec() for t in tool_set()])
    assert grammars is not None

    def call(plan: Any) -> str:
        body = json.dumps({"name": "update_plan", "arguments": {"plan": plan}})
        return f"<tool_call>\n{body}\n</tool_call>"

    assert grammar_accepts(grammars[0], call(FIRST))
    assert grammar_accepts(grammars[0], call([]))
    assert not grammar_accepts(grammars[0], call([{"step": "a", "status": "done"}]))
    assert not grammar_accepts(grammars[0], call("a, then b"))


def bosun(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BOSUN_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )


def test_a_run_prints_plan_events_and_the_session_keeps_the_last(
    workspace: Path, script_file
) -> None:
    script = script_file(
        tool_call("update_plan", explanation="two steps", plan=FIRST),
        tool_call("update_plan", plan=[{"step": "two", "status": "in_progress"}] * 2),
        tool_call("update_plan", plan=DONE),
        "Done.",
    )
    model = f"scripted:{script}"
    out = bosun("run", "go", "-m", model, "-w", str(workspace), "--output", "jsonl", cwd=REPO)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    said = [e for e in lines if e["type"] == "plan"]
    assert said == [
        {"type": "plan", "explanation": "two steps", "steps": FIRST},
        {"type": "plan", "explanation": "", "steps": DONE},
    ]
    (path,) = sessions_dir().glob("*.jsonl")
    stored = load_session(path)
    assert stored.plan == said[-1]

    chat = ChatSession(
        Settings.from_config(Config(model=model), workspace=workspace), lambda e: None, None
    )
    try:
        chat.resume(path)
        assert chat.plan is not None and chat.plan.steps == DONE
        chat.start_new()  # /clear: a new conversation has no plan
        assert chat.plan is None
    finally:
        chat.close()


def test_a_chat_keeps_its_latest_plan(workspace: Path, script_file) -> None:
    script = script_file(tool_call("update_plan", plan=FIRST), "ok")
    chat = ChatSession(
        Settings.from_config(Config(model=f"scripted:{script}"), workspace=workspace),
        lambda e: None,
        None,
    )
    try:
        chat.start_new()
        assert chat.plan is None
        chat.send("plan it")
        assert chat.plan is not None and chat.plan.steps == FIRST
        assert chat.log is not None and load_session(chat.log.path).plan == chat.plan.to_dict()
    finally:
        chat.close()


@pytest.mark.parametrize(
    "record",
    [
        None,
        {"type": "plan"},
        {"type": "plan", "explanation": 3, "steps": FIRST},
        {"type": "plan", "steps": [{"step": "a", "status": "in_progress"}] * 2},
        {"type": "plan", "steps": [{"step": "\x1b[2J", "status": "nope"}]},
        {"type": "plan", "steps": "x" * 10_000},
    ],
)
def test_a_hand_edited_plan_record_is_no_plan(record: Any) -> None:
    assert plan_from_record(record) is None


def test_a_headless_text_run_lists_the_plan_on_stderr() -> None:
    for encoding, marks in (("utf-8", "☑◐☐·"), ("ascii", ("[x]", "[>]", "[ ]", "-"))):
        err = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="strict")
        TextPrinter(io.StringIO(), err)(ev.PlanUpdated("", FIRST))
        err.seek(0)
        shown = err.read()
        assert shown.splitlines() == [
            f"  plan 1/3 {marks[3]} fix the parser",
            f"    {marks[0]} read the failing test",
            f"    {marks[1]} fix the parser",
            f"    {marks[2]} run the tests",
        ]
