"""Every real chat template in the corpus, rendered through bosun.

The corpus ships with the tests (tests/data/chat-templates; sources and licences in
tests/data/README.md). What is pinned here: how many templates render, that each rendering
carries the whole tool turn, and which templates cannot keep the prompt prefix-stable, and
why.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.protocol.render import TemplateRenderError, render
from tests.protocol.prefix_check import as_the_model_replies, broken_in, render_turns
from tests.protocol.prompt_cases import (
    AGENT_TURNS,
    CANONICAL,
    CHAT_TURNS,
    CORPUS,
    RESULT,
    SYSTEM,
    TOOLS,
    corpus_templates,
)

# Templates that cannot render the canonical conversation, and why.
EXPECTED_FAILURES = {
    "fireworks-ai-llama-3-firefunction-v2": (
        "needs caller-supplied `functions` and `datetime` variables that HF's "
        "apply_chat_template never passes"
    ),
}

# Templates whose own structure breaks prefix stability, by scenario, with the turns that
# break (1-based: turn N's prompt is not kept by turn N+1).
_LAST_TOOL_TURN = "renders the last tool message differently while it is the last message"
PREFIX_EXCEPTIONS_AGENT = {
    # 'loop.last' quirks: the end of a tool turn depends on what follows it.
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": ([2], _LAST_TOOL_TURN),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": ([2], _LAST_TOOL_TURN),
    "Bielik-11B-v3.0-Instruct": (
        [2],
        "looks ahead with messages[loop.index0 + 1] while looping over the messages "
        "without the system one, so a tool turn's end marker depends on what follows",
    ),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": (
        [2],
        "closes the tool-outputs block lazily, inside whatever message comes next",
    ),
    "CohereForAI-c4ai-command-r-plus-tool_use": (
        [1, 2],
        "appends a per-turn instruction turn ('Write Action:') after the last message",
    ),
}
_R7B_ANSWER = (
    "always appends the generation prompt with an empty thinking block; a re-rendered "
    "answer opens with <|START_RESPONSE|> instead"
)
_DROPS_THINK = (
    "drops past reasoning: shows the reasoning of the turns after the last user "
    "message, and removes it once the user speaks again"
)
_TOOLS_BEFORE_LAST_USER = (
    "Mistral format: [AVAILABLE_TOOLS] sits right before the last user message, so it "
    "moves every time the user speaks"
)
_AGENT_WHY = {name: why for name, (_, why) in PREFIX_EXCEPTIONS_AGENT.items()}
PREFIX_EXCEPTIONS_CHAT = {
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": ([2, 3], _LAST_TOOL_TURN),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": ([2, 3], _LAST_TOOL_TURN),
    "Bielik-11B-v3.0-Instruct": ([2, 3], _AGENT_WHY["Bielik-11B-v3.0-Instruct"]),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": (
        [2],
        _AGENT_WHY["deepseek-ai-DeepSeek-R1-Distill-Qwen-32B"],
    ),
    "CohereForAI-c4ai-command-r-plus-tool_use": (
        [1, 2, 3, 4],
        _AGENT_WHY["CohereForAI-c4ai-command-r-plus-tool_use"],
    ),
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use": ([3], _R7B_ANSWER),
    "Qwen3.5-4B": ([3], _DROPS_THINK),
    "StepFun3.5-Flash": ([3], _DROPS_THINK),
    "GLM-4.7-Flash": ([3], _DROPS_THINK),
    "MiniMax-M2": ([3], _DROPS_THINK),
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ([3], _DROPS_THINK),
    "openai-gpt-oss-120b": ([3], _DROPS_THINK),
    "Mistral-Small-3.2-24B-Instruct-2506": ([3], _TOOLS_BEFORE_LAST_USER),
    "mistralai-Mistral-Nemo-Instruct-2407": ([3], _TOOLS_BEFORE_LAST_USER),
}
# The literal reading: turn N's whole prompt, generation prompt included, starts
# turn N+1's. In an agent run (where prefix stability allows only the six above) these
# also fail it, by construction: their generation prompt prints something they never
# print for a past turn.
_EMPTY_THINK = (
    "thinking off by default: the generation prompt prints an empty reasoning block "
    "({}) that the template never prints for a past turn"
)
_NO_PAST_REASONING = (
    "the generation prompt opens {}, but the template strips reasoning from every past "
    "turn and reads no reasoning_content, so the reply's reasoning cannot be re-rendered"
)
LITERAL_EXCEPTIONS_AGENT = {
    **PREFIX_EXCEPTIONS_AGENT,
    "Apertus-8B-Instruct": (
        [2],
        "prints <|assistant_start|> after a tool result only while it is the last message",
    ),
    "Apriel-1.6-15b-Thinker-fixed": (
        [1, 2],
        _NO_PAST_REASONING.format("'Here are my reasoning steps:'"),
    ),
    "NVIDIA-Nemotron-Nano-v2": ([1, 2], _NO_PAST_REASONING.format("<think>")),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": ([1], _NO_PAST_REASONING.format("<think>")),
    "llama-cpp-deepseek-r1": ([1, 2], _NO_PAST_REASONING.format("<think>")),
    "Qwen-QwQ-32B": ([1, 2], _EMPTY_THINK.format("<think>\\n</think>")),
    "deepseek-ai-DeepSeek-V3.2": ([1, 2], _EMPTY_THINK.format("<think></think>")),
    "google-gemma-4-31B-it": ([1], _EMPTY_THINK.format("<|channel>thought<channel|>")),
    "google-gemma-4-31B-it-interleaved": (
        [1, 2],
        _EMPTY_THINK.format("<|channel>thought<channel|>"),
    ),
}
LITERAL_EXCEPTIONS_AGENT["deepseek-ai-DeepSeek-R1-Distill-Qwen-32B"] = (
    [1, 2],
    _AGENT_WHY["deepseek-ai-DeepSeek-R1-Distill-Qwen-32B"]
    + "; and "
    + _EMPTY_THINK.format("<think>\\n</think>"),
)
FALLBACK_HEADER = "You may call one or more tools."


def _renderable() -> list[Path]:
    return [p for p in corpus_templates() if p.stem not in EXPECTED_FAILURES]


def test_corpus_is_the_expected_one() -> None:
    names = {p.stem for p in corpus_templates()}
    assert len(names) == 70
    assert set(EXPECTED_FAILURES) <= names
    assert set(PREFIX_EXCEPTIONS_CHAT) <= names


def test_at_least_62_of_70_templates_render() -> None:
    rendered, failed = [], {}
    for path in corpus_templates():
        try:
            render(CANONICAL, TOOLS, template=path)
            rendered.append(path.stem)
        except TemplateRenderError as exc:
            failed[path.stem] = str(exc)
    assert set(failed) == set(EXPECTED_FAILURES), failed
    assert len(rendered) >= 62


@pytest.mark.parametrize("path", _renderable(), ids=lambda p: p.stem)
def test_rendering_carries_the_whole_tool_turn(path: Path) -> None:
    text = render(CANONICAL, TOOLS, template=path)
    assert SYSTEM.content in text
    for spec in TOOLS:
        assert spec["function"]["name"] in text
    assert "notes.txt" in text  # the call's argument
    assert RESULT in text
    assert "### Continue" not in text


@pytest.mark.parametrize("path", _renderable(), ids=lambda p: p.stem)
def test_tools_reach_the_model_exactly_once(path: Path) -> None:
    text = render(CANONICAL, TOOLS, template=path)
    # functionary v3.1 itself names each tool twice: in prose and in its JSON.
    per_tool = 2 if path.stem == "meetkai-functionary-medium-v3.1" else 1
    for spec in TOOLS:
        assert text.count(spec["function"]["description"]) == per_tool
    assert text.count(FALLBACK_HEADER) <= 1


def test_errors_are_one_line_template_render_errors() -> None:
    path = CORPUS / "fireworks-ai-llama-3-firefunction-v2.jinja"
    with pytest.raises(TemplateRenderError) as info:
        render(CANONICAL, TOOLS, template=path)
    assert "\n" not in str(info.value)
    assert "functions" in str(info.value)


@pytest.fixture(scope="module")
def chat_renders() -> dict[str, list[tuple[str, str]]]:
    """Every renderable template's prompts for every chat turn, rendered once, on the
    history its own generation prompt leads to (reasoning kept where it asks for it)."""
    return {
        path.stem: render_turns(as_the_model_replies(CHAT_TURNS, TOOLS, path), TOOLS, template=path)
        for path in _renderable()
    }


def test_prefix_stability_in_an_agent_run(chat_renders: dict) -> None:
    assert CHAT_TURNS[: len(AGENT_TURNS)] == AGENT_TURNS
    broken = {}
    for name, rendered in chat_renders.items():
        if turns := broken_in(rendered[: len(AGENT_TURNS)]):
            broken[name] = turns
    assert broken == {name: turns for name, (turns, _) in PREFIX_EXCEPTIONS_AGENT.items()}
    assert (len(chat_renders) - len(broken)) / len(chat_renders) >= 0.90


def test_prefix_stability_in_a_chat(chat_renders: dict) -> None:
    broken = {name: turns for name, r in chat_renders.items() if (turns := broken_in(r))}
    assert broken == {name: turns for name, (turns, _) in PREFIX_EXCEPTIONS_CHAT.items()}
    # Seven of the breaks are templates that drop old reasoning when the user speaks
    # again; bosun renders what the model was trained on, so fidelity wins there.
    assert (len(chat_renders) - len(broken)) / len(chat_renders) >= 0.79


def test_prefix_stability_with_the_generation_prompt(chat_renders: dict) -> None:
    broken = {}
    for name, rendered in chat_renders.items():
        if turns := broken_in(rendered[: len(AGENT_TURNS)], strict=True):
            broken[name] = turns
    assert broken == {name: turns for name, (turns, _) in LITERAL_EXCEPTIONS_AGENT.items()}
    assert len(chat_renders) - len(broken) >= 54  # of 69


def test_system_prompt_stays_in_every_turn(chat_renders: dict) -> None:
    # Mistral Nemo, left alone, prints the system prompt only in the last user turn.
    for name, rendered in chat_renders.items():
        for text, _ in rendered:
            assert SYSTEM.content in text, name
