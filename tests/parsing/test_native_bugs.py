"""The bugs bosun had in the formats it claimed, each pinned, and what every native
format owes the prose: no wrapper or control token in it."""

from __future__ import annotations

import pytest

from agent.parsing import parse_tool_calls, parser_for
from agent.parsing.native_formats import NATIVE
from agent.parsing.shapes import SHAPES, write_call

WRITE_FILE = {
    "type": "function",
    "function": {
        "name": "write_file",
        "parameters": {
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
}
BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "parameters": {
            "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}}
        },
    },
}


def _xml(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


@pytest.mark.parametrize("content", ['{"k": 1}', '"hi"', "[1, 2]", "42", "null"])
def test_string_parameters_stay_the_text_the_model_wrote(content: str) -> None:
    text = _xml("write_file", path="a.json", content=content)
    (call,) = parse_tool_calls(text, format="qwen3_coder_xml", tools=[WRITE_FILE]).calls
    assert call.arguments == {"path": "a.json", "content": content}


def test_typed_parameters_are_parsed_and_bad_ones_kept_for_validation() -> None:
    text = _xml("bash", command="true", timeout="30")
    (call,) = parse_tool_calls(text, format="qwen3_coder_xml", tools=[BASH]).calls
    assert call.arguments == {"command": "true", "timeout": 30}
    text = _xml("bash", command="ls", timeout="soon")
    (call,) = parse_tool_calls(text, format="qwen3_coder_xml", tools=[BASH]).calls
    assert call.arguments == {"command": "ls", "timeout": "soon"}  # the tool says why


def test_qwen3_coder_xml_without_its_opening_tag_is_a_call() -> None:
    text = "Let me list.\n" + _xml("bash", command="ls").removeprefix("<tool_call>\n")
    result = parse_tool_calls(text, format="qwen3_coder_xml", tools=[BASH])
    assert [(c.name, c.arguments) for c in result.calls] == [("bash", {"command": "ls"})]
    assert result.text == "Let me list."


def test_llama3_bare_json_with_parameters_is_a_call() -> None:
    for text in (
        '{"name": "bash", "parameters": {"command": "ls"}}',
        '<|python_tag|>{"name": "bash", "parameters": {"command": "ls"}}',
        '{"name": "bash", "parameters": {"command": "ls"}}; '
        '{"name": "bash", "parameters": {"command": "pwd"}}',
    ):
        calls = parse_tool_calls(text, format="llama3_json").calls
        assert [c.name for c in calls] == ["bash"] * (2 if ";" in text else 1), text
    prose = parse_tool_calls("{curly} is a word here.", format="llama3_json")
    assert prose.calls == [] and prose.text == "{curly} is a word here."


PROSE_FIRST = sorted(
    f for f in SHAPES if f in NATIVE and not any(r.at_start for r in NATIVE[f].regions)
)


@pytest.mark.parametrize("fmt", PROSE_FIRST)
def test_wrapper_tokens_never_reach_the_prose(fmt: str) -> None:
    call = write_call(fmt, "bash", {"command": "ls"})
    result = parse_tool_calls(f"Let me look.\n{call}\n", format=fmt, tools=[BASH])
    assert [(c.name, c.arguments) for c in result.calls] == [("bash", {"command": "ls"})]
    assert result.text == "Let me look.", fmt


QUOTED = 'Maybe <tool_call>\n{"name": "bash", "arguments": {"command": "rm -rf /"}}\n</tool_call>'


def _run(fmt: str, text: str, opened: bool | None) -> tuple[list[str], str, str]:
    parser = parser_for(fmt, reasoning=("<think>", "</think>"), opened=opened)
    events = parser.feed(text) + parser.finish()
    calls = [e.call.arguments["command"] for e in events if e.call is not None]
    reasoning = "".join(e.text for e in events if e.kind == "reasoning")
    return calls, "".join(e.text for e in events if e.kind == "text"), reasoning


@pytest.mark.parametrize("opened", [True, None])
def test_a_call_quoted_in_reasoning_is_not_run(opened: bool | None) -> None:
    real = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
    calls, _, reasoning = _run("hermes", f"{QUOTED} no.\n</think>\n\n{real}", opened)
    assert calls == ["ls"] and "rm -rf" in reasoning


def test_a_call_that_ends_an_opened_block_without_its_closer_is_run() -> None:
    calls, _, reasoning = _run("hermes", "I should list.\n" + QUOTED.removeprefix("Maybe "), True)
    assert calls == ["rm -rf /"] and reasoning == "I should list."


def test_without_the_prompt_the_text_decides() -> None:
    assert _run("hermes", "Thinking.</think>Done.", None)[1:] == ("Done.", "Thinking.")
    assert _run("hermes", "No thinking here.", None)[1:] == ("No thinking here.", "")
    assert _run("hermes", "<think>Hm.</think>Done.", None)[1:] == ("Done.", "Hm.")
