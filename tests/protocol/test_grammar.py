"""Grammar-constrained tool calls on the real model: well-formed or an answer, never junk."""

from __future__ import annotations

import pytest

from agent.history import AssistantToolUse, System, ToolCall, ToolResult, User
from agent.loop.constraint import constraint_for
from agent.parsing import parse_tool_calls
from agent.protocol.grammar import answer_grammar, tool_call_grammar
from agent.protocol.profile import profile_for
from agent.protocol.render import render
from agent.run.system_prompt import system_prompt
from agent.tools import default_registry
from drivers.base import DriverError, Request, collect

pytest.importorskip("llama_cpp")
pytestmark = pytest.mark.model

RICH_SCHEMA = {
    "type": "function",
    "function": {
        "name": "search-things",
        "description": "x",
        "parameters": {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "limits": {
                    "type": "object",
                    "properties": {"n": {"type": "integer"}, "ratio": {"type": "number"}},
                },
                "flag": {"type": "boolean"},
                "anything": {},
            },
        },
    },
}

# The workspace named in the system prompt, fixed: greedy replies follow the prompt's
# every token, and a tmp_path (pytest-1383/…) made them differ from run to run.
WORKSPACE = "/home/user/project"

TASKS = [
    "List the files in this folder.",
    "Read notes.txt and tell me what it says.",
    "What is in the README?",
    "Find out which Python files exist here.",
    "Show me the first lines of main.py.",
]


@pytest.fixture(scope="module")
def driver():
    from drivers.llama_cpp import open_llama

    d = open_llama("smollm2-135m")
    yield d
    d.close()


@pytest.mark.parametrize("require_call", [False, True])
def test_llama_cpp_accepts_the_grammars(driver, require_call: bool) -> None:
    specs = [*default_registry().specs(), RICH_SCHEMA]
    driver.check_grammar(tool_call_grammar(specs, require_call=require_call))
    driver.check_grammar(tool_call_grammar([], require_call=require_call))


def test_a_grammar_llama_cpp_cannot_parse_is_refused(driver) -> None:
    with pytest.raises(DriverError, match="rejected"):
        driver.check_grammar("root ::= undefined-rule")


@pytest.mark.parametrize("require_call", [True, False])
def test_every_constrained_reply_is_a_valid_call_or_an_answer(driver, require_call: bool) -> None:
    registry = default_registry()
    grammar = tool_call_grammar(registry.specs(), require_call=require_call)
    for task in TASKS:
        prompt = render([System(system_prompt(WORKSPACE)), User(task)], registry.specs())
        done = collect(driver.stream(Request(prompt, max_tokens=96, grammar=grammar)))
        parsed = parse_tool_calls(done.text, registry.names)
        assert not parsed.diagnostics, (task, done.text)
        if require_call or done.text.lstrip().startswith("<"):
            assert done.finish_reason == "stop", (task, done.text)
            assert len(parsed.calls) == 1, (task, done.text)
            assert registry.validate(parsed.calls[0]) is None, (task, done.text)
            assert not parsed.calls[0].salvaged
        else:
            assert parsed.calls == []


def test_llama_cpp_accepts_the_answer_grammar(driver) -> None:
    driver.check_grammar(answer_grammar())


def test_a_repeated_read_is_followed_by_an_answer(driver) -> None:
    """After the model repeats a read whose result it already has, the next call may
    only answer: on the real model, with the grammar the constraint picks."""
    registry = default_registry()
    pick = constraint_for("always", driver, registry, profile_for("smollm2-135m"))
    assert pick is not None
    read = ToolCall("call_1", "read_file", {"path": "notes.txt"})
    history = [
        System(system_prompt(WORKSPACE)),
        User("Read notes.txt and tell me what it says."),
        AssistantToolUse(read),
        ToolResult("call_1", "1\tBuy milk."),
    ]
    assert pick(history) == tool_call_grammar(registry.specs())
    history += [
        AssistantToolUse(ToolCall("call_2", "read_file", {"path": "notes.txt"})),
        ToolResult("call_2", "1\tBuy milk."),
    ]
    grammar = pick(history)
    assert grammar == answer_grammar()
    done = collect(
        driver.stream(Request(render(history, registry.specs()), max_tokens=24, grammar=grammar))
    )
    assert done.text.strip() and not done.text.lstrip().startswith("<")
    assert parse_tool_calls(done.text, registry.names).calls == []
