"""The agent loop on the scripted driver: events, history, budgets, refusals."""

from __future__ import annotations

from pathlib import Path

from agent import events as ev
from agent.history import Assistant, AssistantToolUse, ToolCall, ToolResult, User
from agent.loop.budget import Budget
from agent.protocol.profile import profile_for
from tests.helpers import make_agent, tool_call
from tests.loop.test_reasoning_history import THINKING_TEMPLATE


def kinds(events: list[ev.AgentEvent]) -> list[str]:
    """Event types, with consecutive text deltas counted once."""
    out: list[str] = []
    for e in events:
        if not (out and e.type == "text" == out[-1]):
            out.append(e.type)
    return out


def test_tool_call_then_answer(workspace: Path) -> None:
    agent, driver, events = make_agent(
        ["Let me read it.\n" + tool_call("read_file", path="notes.txt"), "It says hello."],
        workspace,
    )
    result = agent.run("What does notes.txt say?")
    driver.assert_complete()
    assert result.status == "done" and result.turns == 2 and result.tool_calls == 1
    assert result.final_text == "It says hello."
    assert kinds(events) == ["text", "turn", "tool_call", "tool_result", "text", "turn", "result"]
    assert agent.history[1:] == [
        User("What does notes.txt say?"),
        Assistant("Let me read it."),
        AssistantToolUse(ToolCall("call_1", "read_file", {"path": "notes.txt"})),
        ToolResult("call_1", "1\thello from bosun"),
        Assistant("It says hello."),
    ]


def test_turn_two_prompt_extends_turn_one(workspace: Path) -> None:
    agent, driver, _ = make_agent([tool_call("list_dir"), "done"], workspace)
    agent.run("list")
    first, second = driver.prompts
    assert second.startswith(first)
    assert driver.calls[1].max_tokens == Budget().max_tokens


def test_max_turns_stops_before_the_next_model_call(workspace: Path) -> None:
    steps = [tool_call("read_file", path="notes.txt", offset=i) for i in range(1, 4)]
    agent, driver, _ = make_agent(steps, workspace, budget=Budget(max_turns=2))
    result = agent.run("loop")
    assert result.status == "max_turns" and result.turns == 2
    assert driver.remaining == 1  # the third completion was never requested


def test_identical_calls_three_times_is_stuck(workspace: Path) -> None:
    agent, driver, _ = make_agent([tool_call("list_dir", path=".")] * 4, workspace)
    result = agent.run("loop")
    assert result.status == "stuck" and result.tool_calls == 3
    assert driver.remaining == 1


def test_malformed_calls_go_back_to_the_model_then_stop(workspace: Path) -> None:
    bad = '<tool_call>{"name": "read_file", "arguments": {"path": }</tool_call>'
    agent, driver, events = make_agent([bad, bad, bad, "unused"], workspace)
    result = agent.run("read")
    assert result.status == "error" and result.turns == 3
    diagnostics = [e for e in events if isinstance(e, ev.Diagnostic)]
    assert len(diagnostics) == 3 and "not valid JSON" in diagnostics[0].message
    assert "not valid JSON" in driver.prompts[1]  # the model was told what went wrong


def test_a_good_call_resets_the_format_error_count(workspace: Path) -> None:
    bad = "<tool_call>{oops}</tool_call>"
    steps = [bad, bad, tool_call("list_dir"), bad, bad, "fine"]
    agent, _, _ = make_agent(steps, workspace)
    assert agent.run("x").status == "done"


def test_truncated_call_is_never_executed(workspace: Path) -> None:
    cut = '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}'
    agent, _, events = make_agent([{"completion": cut, "finish_reason": "length"}, "ok"], workspace)
    result = agent.run("read")
    assert result.tool_calls == 0
    assert any("cut off" in e.message for e in events if isinstance(e, ev.Diagnostic))


def test_unclosed_call_at_a_stop_string_runs(workspace: Path) -> None:
    stopped = '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}'
    agent, _, _ = make_agent([stopped, "ok"], workspace)
    assert agent.run("read").tool_calls == 1


def test_unknown_tool_and_bad_arguments_are_error_results(workspace: Path) -> None:
    agent, _, events = make_agent(
        [tool_call("launch_rockets"), tool_call("read_file", path=3), "sorry"], workspace
    )
    agent.run("x")
    results = [e for e in events if isinstance(e, ev.ToolResultEvent)]
    assert [r.is_error for r in results] == [True, True]
    assert "unknown tool 'launch_rockets'" in results[0].content
    assert "invalid arguments for read_file" in results[1].content


def test_paths_outside_the_workspace_are_refused(workspace: Path) -> None:
    agent, _, events = make_agent(
        [tool_call("read_file", path="../../etc/passwd"), "ok"], workspace
    )
    agent.run("x")
    (result,) = [e for e in events if isinstance(e, ev.ToolResultEvent)]
    assert result.is_error and "outside the workspace" in result.content


def test_wire_remap_applies_only_at_the_driver_boundary(workspace: Path) -> None:
    wire_call = '[[CALL]]\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n[[/CALL]]'
    chunks = [wire_call[:3], wire_call[3:40], wire_call[40:-4], wire_call[-4:]]
    agent, driver, events = make_agent([{"chunks": chunks}, "It says hello."], workspace, wire=True)
    result = agent.run("read it")
    assert result.status == "done" and result.tool_calls == 1
    assert isinstance(agent.history[2], AssistantToolUse)
    second = driver.prompts[1]
    assert "[[CALL]]" in second and "<tool_call>" not in second
    assert not any(isinstance(e, ev.Diagnostic) for e in events)


def test_harmony_call_ended_by_the_call_token_runs(workspace: Path) -> None:
    body = "<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>"
    step = {"completion": body + '{"path": "notes.txt"}', "stopped_by": "<|call|>"}
    final = "<|channel|>final<|message|>It says hello."
    agent, _, _ = make_agent([step, final], workspace, harmony=True)
    result = agent.run("read")
    assert result.status == "done" and result.tool_calls == 1
    assert result.final_text == "It says hello."


def test_harmony_message_cut_by_max_tokens_is_not_a_call(workspace: Path) -> None:
    body = '<|channel|>commentary to=functions.read_file<|message|>{"path": "notes.txt"}'
    step = {"completion": body, "finish_reason": "length"}
    agent, _, events = make_agent([step, "<|channel|>final<|message|>ok"], workspace, harmony=True)
    assert agent.run("read").tool_calls == 0
    assert any(isinstance(e, ev.Diagnostic) for e in events)


def test_reply_inside_a_pre_opened_think_block_is_reasoning(workspace: Path) -> None:
    profile = profile_for("thinking-model", chat_template=THINKING_TEMPLATE)
    agent, _, events = make_agent(["pondering...</think>The answer."], workspace, profile=profile)
    result = agent.run("q")
    assert result.final_text == "The answer."
    assert [e.text for e in events if isinstance(e, ev.ReasoningDelta)] == ["pondering..."]


def test_a_native_format_runs_end_to_end(workspace: Path) -> None:
    """A GLM model writes its own call markup; it is parsed, run, and shown back to it in
    its own template's markup on the next turn."""
    from tests.protocol.prompt_cases import CORPUS

    template = (CORPUS / "GLM-4.6.jinja").read_text(encoding="utf-8")
    profile = profile_for("GLM-4.6", chat_template=template)
    (workspace / "notes.txt").write_text("alpha", encoding="utf-8")
    call = (
        "<tool_call>read_file\n<arg_key>path</arg_key>\n"
        "<arg_value>notes.txt</arg_value>\n</tool_call>"
    )
    agent, driver, events = make_agent(
        ["<think>I should read it.</think>\n" + call, "It says alpha."], workspace, profile=profile
    )
    result = agent.run("What is in notes.txt?")
    assert (result.status, result.final_text, result.tool_calls) == ("done", "It says alpha.", 1)
    (tool_result,) = [e for e in events if isinstance(e, ev.ToolResultEvent)]
    assert "alpha" in tool_result.content and not tool_result.is_error
    assert "<tool_response>" in driver.prompts[1] and "alpha" in driver.prompts[1]
    assert "<arg_key>path</arg_key>" in driver.prompts[1]  # the call, in GLM's own markup
