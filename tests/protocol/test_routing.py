"""Routing: each model resolves to its own protocol from what its model file says.

The embedded chat template is probed first (its call markup, reasoning markers, whether
its generation prompt opens reasoning); architecture and name fill in only what the
template leaves open. Every corpus template is checked against expectations written
independently (tests/protocol/routing_cases.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.history import System, User
from agent.parsing.formats import FORMATS
from agent.protocol.profile import profile_for
from tests.protocol.prompt_cases import CORPUS, TOOLS, corpus_templates
from tests.protocol.routing_cases import NOTES, ROUTES, THINK


def _source(stem: str) -> str:
    return (CORPUS / f"{stem}.jinja").read_text(encoding="utf-8")


def test_the_expectations_cover_the_corpus() -> None:
    assert set(ROUTES) == {p.stem for p in corpus_templates()}
    assert set(NOTES) <= set(ROUTES)
    assert {fmt for fmt, _, _ in ROUTES.values()} <= set(FORMATS)


@pytest.mark.parametrize("path", corpus_templates(), ids=lambda p: p.stem)
def test_every_corpus_template_routes_to_its_own_protocol(path: Path) -> None:
    profile = profile_for(path.stem, chat_template=path.read_text(encoding="utf-8"))
    got = (profile.tool_format, profile.reasoning, profile.reasoning_preopened)
    assert got == ROUTES[path.stem]


def test_deepseek_r1_distill_qwen_is_not_chatml() -> None:
    """Its architecture says qwen2, but its vocabulary has no <|im_start|>: the template
    it ships with decides, and that speaks DeepSeek's markup."""
    profile = profile_for(
        "DeepSeek-R1-Distill-Qwen-32B",
        architecture="qwen2",
        chat_template=_source("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B"),
    )
    assert (profile.tool_format, profile.reasoning) == ("deepseek_v3_r1", THINK)
    assert profile.template_origin == "given"
    text = profile.render([System("S"), User("hi")], TOOLS)
    assert "<｜User｜>hi" in text and "<|im_start|>" not in text


def test_qwen35_writes_xml_although_a_qwen3_rule_names_it() -> None:
    profile = profile_for("Qwen3.5-4B", architecture="qwen35", chat_template=_source("Qwen3.5-4B"))
    assert profile.rule == "qwen3"  # the name matches the family rule…
    assert profile.tool_format == "qwen3_coder_xml"  # …but the template's own markup decides
    assert profile.reasoning == THINK and profile.reasoning_preopened


@pytest.mark.parametrize("stem", ["GLM-4.7-Flash", "MiniMax-M2", "Qwen3.5-4B"])
def test_a_call_quoted_in_preopened_reasoning_is_not_run(stem: str) -> None:
    """These generation prompts open <think>: what the model writes first is reasoning,
    and a call it merely considers there is not a call."""
    profile = profile_for(stem, chat_template=_source(stem))
    prompt = profile.render([System("S"), User("Read a.txt")], TOOLS)
    assert prompt.rstrip().endswith("<think>")
    parser = profile.parser(TOOLS, prompt=prompt)
    quoted = (
        'I could write <tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>'
    )
    events = parser.feed(quoted + " but no.\n</think>\n\nNo call needed.") + parser.finish()
    assert [e.kind for e in events if e.kind == "tool_call"] == []
    assert "".join(e.text for e in events if e.kind == "text").strip() == "No call needed."
    assert "I could write" in "".join(e.text for e in events if e.kind == "reasoning")


@pytest.mark.parametrize(
    ("model", "architecture", "fmt", "reasoning", "template"),
    [
        ("smollm2-135m", None, "hermes", None, "templates/chatml.jinja"),
        (
            "openai:http://127.0.0.1:8080/v1#gpt-oss-20b",
            None,
            "gpt_oss_harmony",
            None,
            "templates/harmony.jinja",
        ),
        (
            "openai:http://127.0.0.1:8080/v1#qwen3-8b",
            None,
            "hermes",
            THINK,
            "templates/chatml.jinja",
        ),
        ("my-finetune", "gpt-oss", "gpt_oss_harmony", None, "templates/harmony.jinja"),
        ("LFM2-1.2B", "lfm2", "lfm2", None, "templates/chatml.jinja"),
        ("scripted:replay.jsonl", None, "hermes", None, "templates/chatml.jinja"),
        ("some-unknown-model", None, "hermes", None, "templates/chatml.jinja"),
    ],
)
def test_without_a_template_architecture_and_name_decide(
    model: str, architecture: str | None, fmt: str, reasoning: object, template: str
) -> None:
    profile = profile_for(model, architecture=architecture)
    assert (profile.tool_format, profile.reasoning, profile.template_origin) == (
        fmt,
        reasoning,
        template,
    )
    assert any(a.what.startswith("shipped template") for a in profile.adaptations)
