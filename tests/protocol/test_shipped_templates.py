"""bosun's own templates: exact bytes, one tool block, and a prefix that never moves."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.history import System, User
from agent.protocol.render import render, tool_block
from agent.run.system_prompt import system_prompt
from tests.protocol.prefix_check import broken_turns
from tests.protocol.prompt_cases import (
    AGENT_TURNS,
    CANONICAL,
    CHAT_TURNS,
    RESULT,
    SHIPPED,
    SHIPPED_CHAT_TEMPLATES,
    SYSTEM,
    TOOLS,
)

TEMPLATES = [SHIPPED / f"{name}.jinja" for name in SHIPPED_CHAT_TEMPLATES]
_ids = [p.stem for p in TEMPLATES]


@pytest.mark.parametrize("path", TEMPLATES, ids=_ids)
@pytest.mark.parametrize("tools", [TOOLS, []], ids=["tools", "no-tools"])
@pytest.mark.parametrize("turns", [AGENT_TURNS, CHAT_TURNS], ids=["agent", "chat"])
def test_prefix_stable_including_the_generation_prompt(path: Path, tools: list, turns: list):
    assert broken_turns(turns, tools, template=path, strict=True) == []


@pytest.mark.parametrize("path", TEMPLATES, ids=_ids)
def test_whole_tool_turn_and_tools_exactly_once(path: Path) -> None:
    text = render(CANONICAL, TOOLS, template=path)
    assert SYSTEM.content in text and RESULT in text and "notes.txt" in text
    for spec in TOOLS:
        assert text.count(spec["function"]["description"]) == 1
    assert "### Continue" not in text


@pytest.mark.parametrize("path", TEMPLATES, ids=_ids)
def test_no_tools_no_tool_block(path: Path) -> None:
    text = render(CANONICAL[:2], [], template=path)
    assert "# Tools" not in text and "functions" not in text


@pytest.mark.parametrize(
    ("model", "marker"),
    [
        ("smollm2-135m", "<|im_start|>assistant\n"),
        ("Meta-Llama-3.1-8B-Instruct", "<|start_header_id|>assistant<|end_header_id|>\n\n"),
        ("gemma-3-4b-it", "<start_of_turn>model\n"),
        ("gpt-oss-20b", "<|start|>assistant"),
    ],
)
def test_models_get_their_family_template(model: str, marker: str) -> None:
    assert render(CANONICAL[:2], TOOLS, model=model).endswith(marker)


def test_chatml_exact_bytes() -> None:
    text = render(CANONICAL[:4], TOOLS[:1], template=SHIPPED / "chatml.jinja")
    assert text == (
        "<|im_start|>system\nYou are bosun, a coding agent."
        + tool_block(TOOLS[:1])
        + "<|im_end|>\n"
        "<|im_start|>user\nWhat is in notes.txt?<|im_end|>\n"
        "<|im_start|>assistant\n<tool_call>\n"
        '{"name": "read_file", "arguments": {"path": "notes.txt"}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_result>\nalpha beta gamma\n</tool_result><|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_tool_block_is_the_shared_one() -> None:
    block = tool_block(TOOLS)
    assert block.startswith("\n\n# Tools\n\n")
    assert "<tool_call>" in block and "<tool_result>" in block
    for name in ("chatml", "llama3", "gemma"):
        assert block in render(CANONICAL[:2], TOOLS, template=SHIPPED / f"{name}.jinja")


def test_llama3_results_in_the_ipython_role() -> None:
    text = render(CANONICAL, TOOLS, template=SHIPPED / "llama3.jinja")
    assert (
        "<|start_header_id|>ipython<|end_header_id|>\n\n<tool_result>\nalpha beta gamma\n" in text
    )


def test_gemma_has_no_system_turn() -> None:
    text = render(CANONICAL, TOOLS, template=SHIPPED / "gemma.jinja")
    assert "system" not in text.replace(SYSTEM.content, "")
    assert text.startswith("<start_of_turn>user\nYou are bosun, a coding agent.\n\n# Tools")
    assert "\n\nWhat is in notes.txt?<end_of_turn>\n<start_of_turn>model\n<tool_call>" in text


def test_harmony_tool_namespace_and_channels() -> None:
    spec = {
        "type": "function",
        "function": {
            "name": "edit",
            "description": "Edit a file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Where."},
                    "mode": {"type": "string", "enum": ["replace", "append"]},
                    "lines": {"type": "array", "items": {"type": "integer"}},
                    "dry_run": {"type": "boolean"},
                    "meta": {"type": "object", "properties": {"tag": {"type": "string"}}},
                },
                "required": ["path", "mode"],
            },
        },
    }
    noargs = {"type": "function", "function": {"name": "now", "description": "Clock."}}
    text = render(CANONICAL, [spec, noargs], template=SHIPPED / "harmony.jinja")
    assert (
        "namespace functions {\n\n// Edit a file.\ntype edit = (_: {\n// Where.\npath: string,\n"
        'mode: "replace" | "append",\nlines?: number[],\ndry_run?: boolean,\n'
        "meta?: {\n    tag?: string,\n    },\n}) => any;\n\n// Clock.\ntype now = () => any;\n\n"
        "} // namespace functions<|end|>"
    ) in text
    assert "<|start|>developer<|message|># Instructions\n\nYou are bosun, a coding agent." in text
    assert (
        "<|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json"
        '<|message|>{"path": "notes.txt"}<|call|>'
        "<|start|>functions.read_file to=assistant<|channel|>commentary"
        "<|message|>alpha beta gamma<|end|>"
        "<|start|>assistant<|channel|>final<|message|>notes.txt lists three Greek letters.<|end|>"
    ) in text


def test_system_prompt_is_fixed_per_session() -> None:
    first = system_prompt("/work/proj")
    assert first == system_prompt("/work/proj")
    assert "/work/proj" in first and "Project instructions" not in first
    source = (SHIPPED / "system.jinja").read_text(encoding="utf-8")
    assert "strftime_now" not in source and "now(" not in source


def test_system_prompt_carries_agents_md() -> None:
    text = system_prompt("/w", "Run `make test` before you finish.", "AGENTS.md")
    assert "# Project instructions (AGENTS.md)\n\nRun `make test` before you finish." in text


def test_system_prompt_through_a_template_without_tools() -> None:
    history = [System(system_prompt("/w")), User("hi")]
    text = render(history, [], template=SHIPPED / "chatml.jinja")
    assert text.startswith("<|im_start|>system\nYou are bosun, a coding agent working in")
