"""The canonical envelope: every shape a model writes a real call in."""

from __future__ import annotations

import json

import pytest

from agent.history import ToolCall
from agent.parsing import parse_tool_calls
from tests.parsing.support import call


def test_one_call_between_prose() -> None:
    r = parse_tool_calls("Let me look.\n" + call("read_file", path="a.txt") + "\nDone.")
    assert r.calls == [ToolCall("call_1", "read_file", {"path": "a.txt"})]
    assert r.text == "Let me look.\nDone."
    assert r.diagnostics == [] and r.reasoning == "" and r.unclosed == []


def test_several_calls_are_numbered_in_order() -> None:
    text = call("a", x=1) + "\n" + call("b", y=2) + "\n" + call("c")
    r = parse_tool_calls(text)
    assert [(c.id, c.name, c.arguments) for c in r.calls] == [
        ("call_1", "a", {"x": 1}),
        ("call_2", "b", {"y": 2}),
        ("call_3", "c", {}),
    ]
    assert r.text == ""


def test_input_is_an_alias_for_arguments() -> None:
    r = parse_tool_calls('<tool_call>{"name": "ls", "input": {"dir": "."}}</tool_call>')
    assert r.calls == [ToolCall("call_1", "ls", {"dir": "."})]


def test_openai_style_function_object_is_understood() -> None:
    body = {"type": "function", "function": {"name": "ls", "arguments": '{"dir": "."}'}}
    r = parse_tool_calls(f"<tool_call>{json.dumps(body)}</tool_call>")
    assert r.calls == [ToolCall("call_1", "ls", {"dir": "."})]


def test_double_encoded_arguments_are_decoded() -> None:
    inner = json.dumps({"path": "a.txt", "n": 2})
    r = parse_tool_calls(f'<tool_call>{{"name": "read_file", "arguments": {json.dumps(inner)}}}')
    assert r.calls[0].arguments == {"path": "a.txt", "n": 2}


def test_several_objects_or_a_list_in_one_envelope() -> None:
    two = '<tool_call>{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {}}</tool_call>'
    listed = (
        '<tool_call>[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]</tool_call>'
    )
    for text in (two, listed):
        assert [c.name for c in parse_tool_calls(text).calls] == ["a", "b"]


def test_raw_newlines_inside_json_strings_are_tolerated() -> None:
    text = '<tool_call>{"name": "write", "arguments": {"content": "line 1\nline 2"}}</tool_call>'
    assert parse_tool_calls(text).calls[0].arguments == {"content": "line 1\nline 2"}


def test_closing_tag_inside_a_json_string_does_not_end_the_call() -> None:
    """Regression for vllm #45167: a file whose content mentions </tool_call>."""
    content = 'print("</tool_call>")\nx = {"}": 1}\n'
    text = call("write_file", path="t.py", content=content) + "\nWritten."
    r = parse_tool_calls(text)
    assert r.calls == [ToolCall("call_1", "write_file", {"path": "t.py", "content": content})]
    assert r.text == "Written."
    assert r.diagnostics == []


def test_a_call_missing_its_closing_tag_ends_at_the_next_call() -> None:
    text = '<tool_call>{"name": "a", "arguments": {}}\n<tool_call>{"name": "b", "arguments": {}}'
    r = parse_tool_calls(text + "</tool_call>")
    assert [c.id for c in r.calls] == ["call_1", "call_2"] and r.unclosed == []


def test_unclosed_final_call_with_complete_json_counts() -> None:
    """`</tool_call>` is often a stop string, so the model never writes it."""
    r = parse_tool_calls(
        'Reading.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n'
    )
    assert r.calls == [ToolCall("call_1", "read_file", {"path": "a"})]
    assert r.unclosed == ["call_1"]
    assert r.text == "Reading."


def test_unclosed_final_call_with_incomplete_json_is_a_diagnostic() -> None:
    r = parse_tool_calls('<tool_call>{"name": "write", "arguments": {"content": "abc')
    assert r.calls == []
    assert len(r.diagnostics) == 1 and "cut off" in r.diagnostics[0]
    assert r.text == ""


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            '{"name": "read_file", "arguments": {"path": "a",}}',
            "your tool call was not valid JSON: ",
        ),
        ('{"name": "x"}', "tool call 'x' has no \"arguments\" object"),
        ('{"name": 3, "arguments": {}}', 'has no string "name"'),
        ('{"name": "x", "arguments": [1]}', "that are not a JSON object"),
        ('"read_file"', "must be a JSON object"),
        ("", "was empty"),
        ("read_file(path='a')", "not valid JSON"),
    ],
)
def test_malformed_envelopes_become_diagnostics(body: str, expected: str) -> None:
    r = parse_tool_calls(f"Trying.\n<tool_call>{body}</tool_call>\nok")
    assert r.calls == []
    assert len(r.diagnostics) == 1 and expected in r.diagnostics[0]
    assert r.text == "Trying.\nok"


def test_invalid_json_diagnostic_says_where() -> None:
    r = parse_tool_calls('<tool_call>{"name": "read_file" "arguments": {}}</tool_call>')
    assert r.diagnostics == [
        "your tool call was not valid JSON: Expecting ',' delimiter (line 1 column 22)"
    ]


def test_json_fence_holding_a_call_is_an_envelope() -> None:
    text = 'I will read it.\n```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```\n'
    r = parse_tool_calls(text)
    assert r.calls == [ToolCall("call_1", "read_file", {"path": "a"}, salvaged=False)]
    assert r.text == "I will read it." and r.diagnostics == []


def test_json_fence_with_other_json_is_just_code() -> None:
    text = '```json\n{"name": "my-package", "version": "1.0.0"}\n```'
    r = parse_tool_calls(text)
    assert r.calls == [] and r.diagnostics == [] and r.text == text


def test_fence_inside_the_envelope_is_unwrapped() -> None:
    text = '<tool_call>\n```json\n{"name": "a", "arguments": {"k": 1}}\n```\n</tool_call>'
    assert parse_tool_calls(text).calls == [ToolCall("call_1", "a", {"k": 1})]


QWEN_XML = """Let me read it.
<tool_call>
<function=read_file>
<parameter=path>
src/a.py
</parameter>
<parameter=limit>
5
</parameter>
<parameter=options>
{"follow": true}
</parameter>
</function>
</tool_call>"""


def test_qwen3_coder_xml() -> None:
    r = parse_tool_calls(QWEN_XML)
    assert r.calls == [
        ToolCall(
            "call_1", "read_file", {"path": "src/a.py", "limit": 5, "options": {"follow": True}}
        )
    ]
    assert r.text == "Let me read it."


def test_qwen3_coder_xml_values_keep_inner_newlines_and_closing_tags() -> None:
    text = (
        "<tool_call>\n<function=write_file>\n<parameter=content>\n\nline </tool_call>\nNaN\n\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    r = parse_tool_calls(text)
    assert r.calls[0].arguments == {"content": "\nline </tool_call>\nNaN\n"}


def test_qwen3_coder_xml_without_function_is_a_diagnostic() -> None:
    r = parse_tool_calls("<tool_call><function=>\n</function></tool_call>")
    assert r.calls == [] and "<function=NAME>" in r.diagnostics[0]


def test_qwen3_coder_xml_cut_off_before_function_closes() -> None:
    r = parse_tool_calls("<tool_call>\n<function=ls>\n<parameter=dir>\n.\n</parameter>\n")
    assert r.calls == [] and "cut off" in r.diagnostics[0]
    r = parse_tool_calls(
        "<tool_call>\n<function=ls>\n<parameter=dir>\n.\n</parameter>\n</function>"
    )
    assert r.calls == [ToolCall("call_1", "ls", {"dir": "."})] and r.unclosed == ["call_1"]


def test_think_block_goes_to_reasoning() -> None:
    r = parse_tool_calls("<think>\nThe user wants a file.\n</think>\n\nReading it.")
    assert r.reasoning == "The user wants a file."
    assert r.text == "Reading it."


def test_unclosed_think_at_start_is_all_reasoning() -> None:
    r = parse_tool_calls("<think>\nStill thinking when the budget ran out")
    assert r.reasoning == "Still thinking when the budget ran out" and r.text == ""


def test_think_prefilled_by_the_template() -> None:
    r = parse_tool_calls("I should list.\n</think>\n\nListing.", think_open=True)
    assert r.reasoning == "I should list." and r.text == "Listing."


def test_several_think_blocks_are_joined() -> None:
    r = parse_tool_calls("<think>one</think>A" + call("x") + "<think> two </think>B")
    assert r.reasoning == "one\ntwo"
    assert r.text == "AB"


def test_markup_inside_think_is_reasoning_not_a_call() -> None:
    r = parse_tool_calls("<think>maybe " + call("rm", path="/") + "?</think>No.")
    assert r.calls == [] and r.text == "No."


def test_hallucinated_tool_result_is_removed_from_text() -> None:
    r = parse_tool_calls(call("ls") + "\n<tool_result>\nmade up\n</tool_result>\nSo.")
    assert len(r.calls) == 1 and r.text == "So."


def test_unknown_tool_names_in_the_envelope_are_still_calls() -> None:
    """The runtime answers "unknown tool" so the model learns; salvage is stricter."""
    assert parse_tool_calls(call("nope"), ["ls"]).calls == [ToolCall("call_1", "nope", {})]
