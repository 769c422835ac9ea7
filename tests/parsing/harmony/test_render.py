"""Render -> parse round trip: what bosun shows gpt-oss of past turns is what it parses.

The shipped templates/harmony.jinja is what a served gpt-oss gets; the model's own
template (tests/data/chat-templates) must agree on the shapes that matter: calls as
commentary messages with a recipient ending in <|call|>, results from `functions.NAME
to=assistant`, and no <|return|> in past turns (llama.cpp issue 15417).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent.history import Assistant, AssistantToolUse, Message, System, ToolCall, ToolResult, User
from agent.parsing.harmony import parse_harmony
from agent.protocol.profile import profile_for
from agent.protocol.render import render
from tests.parsing.harmony.support import REALISTIC_ARGS
from tests.protocol.prompt_cases import CORPUS

MODEL = "gpt-oss-20b"
OFFICIAL = CORPUS / "openai-gpt-oss-120b.jinja"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "note": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]
RESULT = (
    "<|start|>functions.read_file to=assistant<|channel|>commentary<|message|>hello world<|end|>"
)
# gpt-oss's Hugging Face template JSON-quotes a result; OpenAI's Harmony library, and bosun's
# template after it, write it verbatim (tests/parsing/harmony/test_oracle.py).
OFFICIAL_RESULT = RESULT.replace("hello world", '"hello world"')
NASTY_ARGS = {"path": "a.txt", "note": '<|call|> <|end|> <|return|> </tool_call> ``` "\\'}


def history(arguments: dict[str, object]) -> list[Message]:
    return [
        System("You are bosun."),
        User("Read a.txt"),
        Assistant("Let me look."),
        AssistantToolUse(ToolCall("call_1", "read_file", arguments)),
        ToolResult("call_1", "hello world"),
        Assistant("It says hello world."),
        User("Thanks"),
    ]


def assistant_messages(prompt: str) -> str:
    """The assistant's past messages, as the model would have written them."""
    parts = prompt.split("<|start|>")
    return "".join(
        "<|start|>" + p for p in parts if p.startswith("assistant") and "<|message|>" in p
    )


def test_a_served_gpt_oss_gets_the_shipped_harmony_template() -> None:
    profile = profile_for(MODEL)  # no model file, so no template of its own
    assert (profile.template_origin, profile.tool_format) == (
        "templates/harmony.jinja",
        "gpt_oss_harmony",
    )


@pytest.mark.parametrize("arguments", [{"path": "a.txt"}, NASTY_ARGS, REALISTIC_ARGS])
def test_shipped_template_renders_calls_results_and_no_return(arguments: dict[str, object]) -> None:
    prompt = render(history(arguments), TOOLS, model=MODEL)
    body = json.dumps(arguments, ensure_ascii=False)
    call = re.escape("<|start|>assistant<|channel|>commentary to=functions.read_file")
    call += r"(?: ?<\|constrain\|>json| json)?" + re.escape(f"<|message|>{body}<|call|>")
    assert re.search(call, prompt), prompt
    assert RESULT in prompt
    assert "<|return|>" not in prompt.replace(body, "")  # the arguments may mention it
    assert prompt.endswith("<|start|>assistant")
    last = render(history(arguments)[:-1], TOOLS, model=MODEL, add_generation_prompt=False)
    assert "<|return|>" not in last.replace(body, "") and last.endswith(
        "It says hello world.<|end|>"
    )


@pytest.mark.parametrize("arguments", [{"path": "a.txt"}, NASTY_ARGS])
def test_rendered_history_parses_back_to_the_same_turns(arguments: dict[str, object]) -> None:
    r = parse_harmony(assistant_messages(render(history(arguments), TOOLS, model=MODEL)))
    assert r.calls == [ToolCall("call_1", "read_file", arguments)]
    assert (r.text, r.reasoning, r.diagnostics) == ("Let me look.\n\nIt says hello world.", "", [])


def test_a_canonical_model_call_rerenders_byte_for_byte() -> None:
    """The prompt of the next turn starts with this prompt plus the model's own call, so
    the KV cache covers the whole call (prompts are prefix-stable)."""
    before = [System("You are bosun."), User("Read a.txt")]
    prompt = render(before, TOOLS, model=MODEL)
    completion = (
        "<|channel|>commentary to=functions.read_file <|constrain|>json"
        '<|message|>{"path": "a.txt"}<|call|>'
    )
    (call,) = parse_harmony(completion).calls
    after = [*before, AssistantToolUse(call), ToolResult(call.id, "hello world")]
    assert render(after, TOOLS, model=MODEL).startswith(prompt + completion)


@pytest.mark.parametrize("arguments", [{"path": "a.txt"}, NASTY_ARGS])
def test_official_template_round_trips(arguments: dict[str, object]) -> None:
    prompt = render(history(arguments), TOOLS, model=MODEL, template=Path(OFFICIAL))
    body = json.dumps(arguments, ensure_ascii=False)
    # gpt-oss's own template puts the recipient in the role header.
    call = "<|start|>assistant to=functions.read_file<|channel|>commentary json"
    call += f"<|message|>{body}<|call|>"
    assert call in prompt
    assert OFFICIAL_RESULT in prompt
    assert "<|return|>" not in prompt.replace(body, "")  # the arguments may mention it
    r = parse_harmony(assistant_messages(prompt))
    assert r.calls == [ToolCall("call_1", "read_file", arguments)] and r.diagnostics == []
    # gpt-oss's own template shows the prose of a calling turn as analysis, and drops
    # analysis once the user speaks again: fidelity over prefix stability (README).
    assert "It says hello world." in r.text and "Let me look." not in prompt
    current = render(history(arguments)[:5], TOOLS, model=MODEL, template=Path(OFFICIAL))
    assert "<|channel|>analysis<|message|>Let me look.<|end|>" in current
