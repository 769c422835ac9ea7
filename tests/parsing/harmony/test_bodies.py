"""Call bodies: arguments come through byte for byte, malformed ones never run."""

from __future__ import annotations

import json

import pytest

from agent.history import ToolCall
from agent.parsing.harmony import parse_harmony
from tests.parsing.harmony.support import MARKERS, call, comparable, stream

EVERY_MARKER = "".join(MARKERS) + "</tool_call><tool_call>```json\n```"
NASTY = {
    "content": f"line 1\n{EVERY_MARKER}\nend",
    "escaped": 'a "quoted <|call|>" \\ back\\slash <|end|>',
    "nested": {"list": [EVERY_MARKER, "\\", '"'], "n": 1},
    "unicode": "é🙂<|return|>",
}


def test_arguments_containing_every_marker_come_through_intact() -> None:
    text = call("write_file", NASTY)
    r = parse_harmony(text)
    assert r.calls == [ToolCall("call_1", "write_file", NASTY)]
    assert (r.text, r.reasoning, r.diagnostics) == ("", "", [])


def test_every_split_of_a_marker_laden_call_gives_the_same_call() -> None:
    text = call("write_file", NASTY)
    one_shot = comparable([text])
    for i in range(1, len(text)):
        assert comparable([text[:i], text[i:]]) == one_shot, i
    fed, finished = stream(list(text))
    assert [e.call for e in fed if e.kind == "tool_call"] == [
        ToolCall("call_1", "write_file", NASTY)
    ]
    assert finished == []


def test_ascii_escaped_arguments_decode_the_same() -> None:
    body = json.dumps(NASTY)  # \u00e9 and friends
    r = parse_harmony(f"<|channel|>commentary to=functions.w json<|message|>{body}<|call|>")
    assert r.calls == [ToolCall("call_1", "w", NASTY)]


@pytest.mark.parametrize(
    "body", ["{bad}", '{"path": "a.txt",}', "", "   ", "[1, 2]", '"text"', "3", "null"]
)
def test_malformed_or_non_object_json_is_a_diagnostic_not_a_call(body: str) -> None:
    r = parse_harmony(f"<|channel|>commentary to=functions.ls json<|message|>{body}<|call|>")
    assert r.calls == [] and r.text == ""
    assert len(r.diagnostics) == 1 and "'ls'" in r.diagnostics[0]


def test_double_encoded_arguments_are_accepted() -> None:
    body = json.dumps(json.dumps({"path": "a.txt"}))
    r = parse_harmony(f"<|channel|>commentary to=functions.ls json<|message|>{body}<|call|>")
    assert r.calls == [ToolCall("call_1", "ls", {"path": "a.txt"})]


@pytest.mark.parametrize("closer", ["<|return|>", "<|start|>assistant", "<|channel|>"])
def test_a_call_closed_by_anything_but_call_or_end_is_not_run(closer: str) -> None:
    r = parse_harmony(f'<|channel|>commentary to=functions.ls json<|message|>{{"a": 1}}{closer}')
    assert r.calls == [] and len(r.diagnostics) == 1


def test_parallel_calls_separated_by_end_are_all_run() -> None:
    """Some renderings separate parallel calls with <|end|>: none of them is lost."""
    call = '<|start|>assistant to=functions.ls<|channel|>commentary json<|message|>{{"a": {}}}'
    r = parse_harmony(call.format(1) + "<|end|>" + call.format(2))
    assert r.calls == [ToolCall("call_1", "ls", {"a": 1}), ToolCall("call_2", "ls", {"a": 2})]
    assert r.diagnostics == []


def test_a_stray_quote_hides_call_and_says_so() -> None:
    r = parse_harmony(
        '<|channel|>commentary to=functions.ls json<|message|>{"path": "a.txt}<|call|>'
    )
    assert r.calls == []
    assert len(r.diagnostics) == 1 and "unterminated string" in r.diagnostics[0]


def test_text_bodies_keep_markup_of_other_formats() -> None:
    body = 'Use `<tool_call>` like this:\n```json\n{"name": "x"}\n```\n</tool_call> is literal.'
    r = parse_harmony(f"<|channel|>final<|message|>{body}<|return|>")
    assert (r.text, r.calls, r.diagnostics) == (body, [], [])
