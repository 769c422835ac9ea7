"""Salvage: conservative recovery of calls written without the envelope.

The contract contracts/toolcall-salvage-v1.yaml names the falsifiers here.
"""

from __future__ import annotations

import pytest

from agent.history import ToolCall
from agent.parsing import parse_tool_calls
from agent.parsing.salvage import salvage_call
from tests.parsing.support import call

BARE = '{"name": "read_file", "arguments": {"path": "a.txt"}}'
RECOVERED = ToolCall("salvage-1", "read_file", {"path": "a.txt"}, salvaged=True)


def test_salvage_recovers_bare_and_fenced_calls() -> None:
    """FALSIFY-TOOLCALL-SALVAGE-001"""
    shapes = [
        BARE,
        f"I'll read the file.\n{BARE}",
        f"I'll read the file. {BARE} Then I will summarise.",
        f"```\n{BARE}\n```",
        f"Calling:\n```tool_call\n{BARE}\n```\n",
        f"~~~python\n{BARE}\n~~~",
        '{"name": "read_file", "input": {"path": "a.txt"}}',
        '{"name": "read_file", "arguments": "{\\"path\\": \\"a.txt\\"}"}',
        '{\n  "name": "read_file",\n  "arguments": {\n    "path": "a.txt"\n  }\n}',
    ]
    for text in shapes:
        r = parse_tool_calls(text, ["read_file"])
        assert r.calls == [RECOVERED], text
        assert len(r.diagnostics) == 1 and "without <tool_call> tags" in r.diagnostics[0]
        assert "read_file" not in r.text, "a salvaged call leaves the text like an envelope"


def test_a_bare_list_of_calls_is_salvaged_whole() -> None:
    r = parse_tool_calls(f"Both:\n[{BARE}, {BARE}]\nok")
    assert [c.id for c in r.calls] == ["salvage-1", "salvage-2"]
    assert r.text == "Both:\nok"


def test_salvaged_calls_are_numbered_and_prose_between_them_stays() -> None:
    text = f"First {BARE} and then\n```\n{BARE}\n```\nend."
    r = parse_tool_calls(text)
    assert [c.id for c in r.calls] == ["salvage-1", "salvage-2"]
    assert all(c.salvaged for c in r.calls)
    assert r.text == "First and then\nend."
    assert r.unclosed == []


def test_plain_json_and_name_without_arguments_are_never_calls() -> None:
    """FALSIFY-TOOLCALL-SALVAGE-002"""
    prose = [
        '{"name": "read_file"}',
        'The config is {"name": "bosun", "version": 1}.',
        '```\n{"name": "my-package", "version": "1.0.0"}\n```',
        '{"name": 3, "arguments": {}}',
        '{"name": "", "arguments": {}}',
        '{"name": "read_file", "arguments": 5}',
        '{"name": "read_file", "arguments": "not json"}',
        '{"name": "read_file", "arguments": null}',
        '{"tool": "read_file", "arguments": {}}',
        '{"a": 1, "b": [1, 2, {"c": null}]}',
        '[{"name": "read_file", "arguments": {}}, {"a": 1}]',
        '[{"name": "read_file", "arguments": {}}, 2]',
        '{"name": "read_file", "parameters": {"path": "a"}}',
    ]
    for text in prose:
        r = parse_tool_calls(text)
        assert r.calls == [], text
        assert r.diagnostics == [], "prose that is not a call is not a mistake either"
        assert r.text == text, "and it stays byte for byte"


def test_envelope_takes_precedence_over_salvage() -> None:
    """FALSIFY-TOOLCALL-SALVAGE-003"""
    before = f"Example: {BARE}\n" + call("list_dir", path=".")
    after = call("list_dir", path=".") + f"\nNext time: {BARE}"
    fenced = f"```\n{BARE}\n```\n" + call("list_dir", path=".")
    for text in (before, after, fenced):
        r = parse_tool_calls(text)
        assert r.calls == [ToolCall("call_1", "list_dir", {"path": "."})], text
        assert r.diagnostics == []
        assert BARE in r.text, "the unrecovered JSON stays prose"


def test_malformed_envelope_does_not_block_salvage() -> None:
    """Only an envelope *call* wins; a broken one is reported and salvage still runs."""
    r = parse_tool_calls('<tool_call>{"name": "x"}</tool_call>\n' + BARE)
    assert r.calls == [RECOVERED]
    assert len(r.diagnostics) == 2


def test_unknown_tool_names_are_not_salvaged() -> None:
    r = parse_tool_calls(BARE, ["list_dir"])
    assert r.calls == [] and r.diagnostics == [] and r.text == BARE
    assert parse_tool_calls(BARE, ["read_file"]).calls == [RECOVERED]


def test_bare_json_in_inline_code_is_an_example_not_a_call() -> None:
    text = f"Write `{BARE}` to call a tool."
    r = parse_tool_calls(text)
    assert r.calls == [] and r.text == text


def test_braces_inside_json_strings_do_not_end_the_candidate() -> None:
    text = '{"name": "write", "arguments": {"content": "} </tool_call> {"}} done'
    r = parse_tool_calls(text)
    assert r.calls == [ToolCall("salvage-1", "write", {"content": "} </tool_call> {"}, True)]
    assert r.text == "done"


def test_ordinary_braces_in_prose_cost_nothing_and_stay() -> None:
    text = 'Use {x} or {\'a\': 1} or {"k": } or { "unclosed": [1, 2\n\nthen prose.'
    r = parse_tool_calls(text)
    assert r.calls == [] and r.diagnostics == [] and r.text == text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"name": "a", "arguments": {"k": 1}}, ("a", {"k": 1})),
        ({"name": "a", "input": {}}, ("a", {})),
        ({"name": "a", "arguments": '{"k": 1}'}, ("a", {"k": 1})),
        ({"name": "a"}, None),
        ({"name": "a", "arguments": "[1]"}, None),
        ({"name": None, "arguments": {}}, None),
        ("a", None),
    ],
)
def test_salvage_call_rule(value: object, expected: object) -> None:
    assert salvage_call(value) == expected
