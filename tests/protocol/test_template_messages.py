"""History -> the message dicts a chat template sees, in each shape a template may need."""

from __future__ import annotations

import json

from agent.history import Assistant, AssistantToolUse, System, ToolCall, ToolResult, User
from agent.protocol.dialect import Dialect, short_id, to_template_messages
from agent.protocol.render import render
from tests.protocol.prompt_cases import CANONICAL, TOOLS

TURN = [
    System("sys"),
    User("go"),
    Assistant("Looking."),
    AssistantToolUse(ToolCall("call_1", "read_file", {"path": "a"})),
    AssistantToolUse(ToolCall("call_2", "grep_files", {"pattern": "b"})),
    ToolResult("call_1", "A"),
    ToolResult("call_2", "B", is_error=True),
]


def test_openai_shape_by_default() -> None:
    out = to_template_messages(TURN)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "tool"]
    assistant = out[2]
    assert assistant["content"] == "Looking."
    assert assistant["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "read_file", "arguments": {"path": "a"}},
        },
        {
            "id": "call_2",
            "type": "function",
            "function": {"name": "grep_files", "arguments": {"pattern": "b"}},
        },
    ]
    assert out[3] == {"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": "A"}
    assert out[4]["name"] == "grep_files"


def test_a_tool_use_without_prose_opens_its_own_assistant_message() -> None:
    out = to_template_messages(TURN[:2] + TURN[3:4])
    assert out[2] == {"role": "assistant", "content": "", "tool_calls": out[2]["tool_calls"]}


def test_arguments_as_a_json_string_where_the_template_needs_it() -> None:
    out = to_template_messages(TURN, Dialect(arguments_as_string=True))
    arguments = out[2]["tool_calls"][0]["function"]["arguments"]
    assert isinstance(arguments, str) and json.loads(arguments) == {"path": "a"}


def test_single_call_and_split_prose() -> None:
    out = to_template_messages(TURN, Dialect(single_call=True, split_prose=True))
    assert [m["role"] for m in out] == [
        "system",
        "user",
        "assistant",
        "assistant",
        "assistant",
        "tool",
        "tool",
    ]
    assert out[2] == {"role": "assistant", "content": "Looking."}
    assert [len(m["tool_calls"]) for m in out[3:5]] == [1, 1]


def test_short_ids_are_stable_and_pair_calls_with_results() -> None:
    out = to_template_messages(TURN, Dialect(short_ids=True))
    ids = [c["id"] for c in out[2]["tool_calls"]]
    assert all(len(i) == 9 and i.isalnum() for i in ids)
    assert ids == [out[3]["tool_call_id"], out[4]["tool_call_id"]]
    assert short_id("call_1") == short_id("call_1") != short_id("call_2")
    assert short_id("abcDEF123") == "abcDEF123"


def test_fallback_shape_keeps_the_canonical_envelope() -> None:
    out = to_template_messages(
        TURN, Dialect(native_tools=False, native_calls=False, native_results=False), "\n\nTOOLS"
    )
    assert out[0] == {"role": "system", "content": "sys\n\nTOOLS"}
    assert out[2]["content"] == (
        "Looking.\n"
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "grep_files", "arguments": {"pattern": "b"}}\n</tool_call>'
    )
    assert "tool_calls" not in out[2]
    # Results of one turn share one user message, as <tool_result> blocks.
    assert out[3] == {
        "role": "user",
        "content": "<tool_result>\nA\n</tool_result>\n<tool_result>\nB\n</tool_result>",
    }
    assert len(out) == 4


def test_fallback_tool_block_without_a_system_message() -> None:
    out = to_template_messages([User("go")], Dialect(native_tools=False), "\n\nTOOLS")
    assert out[0] == {"role": "system", "content": "TOOLS"}


def test_system_folds_into_the_first_user_turn() -> None:
    history = [*TURN, Assistant("done"), User("again")]
    out = to_template_messages(history, Dialect(system_role=False))
    assert out[0] == {"role": "user", "content": "sys\n\ngo"}
    assert out[-1] == {"role": "user", "content": "again"}


def test_every_render_builds_fresh_dicts() -> None:
    first, second = to_template_messages(TURN), to_template_messages(TURN)
    assert first == second and first[2] is not second[2]


def test_no_prose_summary_and_no_continue_nudge() -> None:
    """A template without tool support still sees the real calls and results."""
    plain = (
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    text = render(CANONICAL, TOOLS, template=plain)
    assert (
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n</tool_call>'
        in text
    )
    assert "<user><tool_result>\nalpha beta gamma\n</tool_result></user>" in text
    assert "### Continue" not in text
    assert text.count("# Tools") == 1 and text.index("# Tools") < text.index("<user>")
