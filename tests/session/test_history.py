"""Structured history: lossless JSON and retain_assistant_text."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.history import (
    Assistant,
    AssistantToolUse,
    HistoryFormatError,
    System,
    ToolCall,
    ToolResult,
    User,
    from_json,
    retain_assistant_text,
    to_json,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)
messages = st.one_of(
    st.builds(System, st.text()),
    st.builds(User, st.text()),
    st.builds(Assistant, st.text()),
    st.builds(
        AssistantToolUse,
        st.builds(
            ToolCall,
            st.text(min_size=1),
            st.text(min_size=1),
            st.dictionaries(st.text(max_size=8), json_values, max_size=4),
            st.booleans(),
        ),
    ),
    st.builds(ToolResult, st.text(), st.text(), st.booleans()),
)


@given(st.lists(messages, max_size=6))
def test_json_round_trip_is_lossless(history: list) -> None:
    assert from_json(to_json(history)) == history
    for m in history:
        assert from_json(to_json(m)) == m


def test_messages_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        User("a").content = "b"  # type: ignore[misc]


@pytest.mark.parametrize(
    "bad",
    [
        '{"kind": "wizard", "content": "x"}',
        '{"kind": "user"}',
        "[1]",
        "{not json",
        '{"kind": "assistant_tool_use", "call": {"id": "1", "name": "x", "arguments": []}}',
    ],
)
def test_corrupt_messages_raise_a_clear_error(bad: str) -> None:
    with pytest.raises(HistoryFormatError):
        from_json(bad)


CALL = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"Let me look.\n{CALL}", "Let me look."),
        (f"{CALL}\nDone reading.", "Done reading."),
        (f"A.\n{CALL}\nB.", "A.\nB."),
        (CALL, ""),
        (f"{CALL}\n{CALL}", ""),
        ("<tool_result>\nfile text\n</tool_result>\nSo it says hi.", "So it says hi."),
        ('Reading now.\n<tool_call>\n{"name": "read_file", "argu', "Reading now."),
        ('[[CALL]]\n{"name": "x", "arguments": {}}\n[[/CALL]] ok', "ok"),
        ("Sure.</tool_call>", "Sure."),
        ('trailing [[CALL]] {"name"', "trailing"),
        # a closing tag inside a JSON string does not end the call (vllm #45167)
        ('<tool_call>{"name": "w", "arguments": {"c": "x</tool_call>y"}}</tool_call>Hi', "Hi"),
    ],
)
def test_retain_strips_markup(text: str, expected: str) -> None:
    assert retain_assistant_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Use the `<tool_call>` tag to call tools.",
        'Here is how:\n```xml\n<tool_call>\n{"name": "x"}\n</tool_call>\n```\nThat\'s it.',
        "~~~\n<tool_result>x</tool_result>\n~~~\n",
        "  plain prose with trailing spaces  \n\n",
        "",
        "a < b and [[c]] are fine",
    ],
)
def test_retain_keeps_prose_and_code_byte_for_byte(text: str) -> None:
    assert retain_assistant_text(text) == text


@given(st.text(alphabet=st.characters(blacklist_characters="<[")))
def test_retain_is_identity_without_markup(text: str) -> None:
    assert retain_assistant_text(text) == text


@given(st.text())
def test_retain_never_raises_and_is_idempotent(text: str) -> None:
    once = retain_assistant_text(text)
    assert retain_assistant_text(once) == once
