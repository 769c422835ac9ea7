"""The evaluation's ablation switches (`bosun run --ablate`) change what they claim to,
and nothing else: bench/eval compares bosun with and without them."""

from __future__ import annotations

import json
from pathlib import Path

from agent.history import Assistant, AssistantToolUse, ToolResult
from tests.helpers import make_agent, tool_call

BARE = json.dumps({"name": "list_dir", "arguments": {"path": "."}})


def test_salvage_takes_a_bare_json_call_by_default(workspace: Path) -> None:
    agent, _, _ = make_agent([BARE, "Done."], workspace)
    agent.run("list the files")
    assert agent.state.tool_calls == 1


def test_without_salvage_a_bare_json_call_stays_prose(workspace: Path) -> None:
    agent, _, _ = make_agent([BARE], workspace)
    agent.salvage = False
    result = agent.run("list the files")
    assert (agent.state.tool_calls, result.status) == (0, "done")
    assert result.final_text == BARE


def test_without_retention_history_keeps_the_raw_markup(workspace: Path) -> None:
    call = tool_call("list_dir", path=".")
    reply = "Let me look.\n" + call
    agent, driver, _ = make_agent([reply, "Done."], workspace)
    agent.retain = False
    agent.run("list the files")
    kinds = [type(m) for m in agent.history[2:]]
    assert kinds == [Assistant, ToolResult, Assistant]
    assert agent.history[2] == Assistant(reply)
    # The second prompt shows the call once, as the model typed it.
    shown = [p.count('"name": "list_dir"') for p in driver.prompts]
    assert shown[1] - shown[0] == 1


def test_with_retention_history_is_structured(workspace: Path) -> None:
    agent, _, _ = make_agent(
        ["Let me look.\n" + tool_call("list_dir", path="."), "Done."], workspace
    )
    agent.run("list the files")
    kinds = [type(m) for m in agent.history[2:]]
    assert kinds == [Assistant, AssistantToolUse, ToolResult, Assistant]
    assert agent.history[2] == Assistant("Let me look.")


def test_ablate_reaches_a_tasks_run(workspace: Path, script_file, tmp_path: Path) -> None:
    from tests.cli.test_cli import bosun

    script = script_file(BARE)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t1", "prompt": "list the files"}) + "\n")
    base = ["run", "--tasks", str(tasks), "-m", f"scripted:{script}", "-w", str(workspace)]
    proc = bosun(*base, "--approve", "auto", "--ablate", "salvage")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert not [e for e in events if e["type"] == "tool_call"], proc.stdout
    assert [e["status"] for e in events if e["type"] == "result"] == ["done"]
