"""Reasoning is kept in history (as `Reasoning`, apart from the prose) so that templates
which pre-open `<think>` and re-render the current request's reasoning stay
prefix-stable turn after turn, and interleaved-thinking models keep their plan."""

from __future__ import annotations

from pathlib import Path

from agent.history import (
    Assistant,
    AssistantToolUse,
    Reasoning,
    ToolCall,
    ToolResult,
    User,
    from_json,
    to_json,
)
from agent.protocol.dialect import chat_messages, to_template_messages
from agent.protocol.profile import profile_for
from tests.helpers import make_agent, tool_call

# The shape of Qwen3's and DeepSeek-R1's templates, cut down: the generation prompt
# opens <think>, and an assistant turn shows its reasoning_content when it has one.
THINKING_TEMPLATE = (
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}"
    "{% if m.role == 'assistant' and m.reasoning_content %}"
    "{{ '<think>\\n' + m.reasoning_content + '\\n</think>\\n\\n' }}{% endif %}"
    "{{ m.content }}{% for c in m.tool_calls or [] %}"
    "{{ '<tool_call>' + {'name': c.function.name, 'arguments': c.function.arguments} | tojson"
    " + '</tool_call>' }}{% endfor %}{{ '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{% endif %}"
)


def test_reasoning_is_kept_and_the_next_prompt_extends_the_last(workspace: Path) -> None:
    call = tool_call("read_file", path="notes.txt")
    first = "I should read notes.txt first.\n</think>\n\n" + call
    profile = profile_for("thinking-model", chat_template=THINKING_TEMPLATE)
    assert profile.reasoning == ("<think>", "</think>") and profile.reasoning_preopened
    replies = [first, "It is a greeting.\n</think>\n\nHello."]
    agent, driver, _ = make_agent(replies, workspace, profile=profile)
    result = agent.run("What is in notes.txt?")
    assert (result.status, result.final_text, result.tool_calls) == ("done", "Hello.", 1)
    turn = agent.history[2:5]
    assert turn[0] == Reasoning("I should read notes.txt first.")
    assert isinstance(turn[1], AssistantToolUse) and isinstance(turn[2], ToolResult)
    assert agent.history[-2:] == [Reasoning("It is a greeting."), Assistant("Hello.")]
    # The prompt the model answered, plus its reasoning, is where the next prompt starts.
    prompts = driver.prompts
    assert prompts[1].startswith(prompts[0] + "I should read notes.txt first.\n</think>")
    # Reasoning never leaks into the answer.
    assert "greeting" not in result.final_text


def test_reasoning_joins_its_turn_in_template_messages() -> None:
    history = [
        User("q"),
        Reasoning("plan"),
        Assistant("Let me look."),
        AssistantToolUse(ToolCall("c1", "read_file", {"path": "a"})),
        ToolResult("c1", "A"),
        Reasoning("done"),
        AssistantToolUse(ToolCall("c2", "read_file", {"path": "b"})),
    ]
    out = to_template_messages(history)
    assistants = [m for m in out if m["role"] == "assistant"]
    assert len(assistants) == 2
    assert assistants[0]["content"] == "Let me look."
    assert assistants[0]["reasoning_content"] == assistants[0]["thinking"] == "plan"
    assert [c["id"] for c in assistants[0]["tool_calls"]] == ["c1"]
    assert assistants[1]["reasoning_content"] == "done" and assistants[1]["content"] == ""
    assert [c["id"] for c in assistants[1]["tool_calls"]] == ["c2"]


def test_a_server_gets_reasoning_content_only() -> None:
    history = [User("q"), Reasoning("plan"), Assistant("A.")]
    assert chat_messages(history)[1] == {
        "role": "assistant",
        "content": "A.",
        "reasoning_content": "plan",
    }


def test_reasoning_round_trips_through_the_session_format() -> None:
    history = [User("q"), Reasoning("plan ü"), Assistant("A.")]
    assert from_json(to_json(history)) == history


def test_a_turn_without_reasoning_stores_none(workspace: Path) -> None:
    agent, _, _ = make_agent(["Plain answer."], workspace)
    agent.run("q")
    assert not any(isinstance(m, Reasoning) for m in agent.history)
