"""Routing for the call formats of issue #35: from a chat template, and from a name.

A template is probed as every template is (a sample call rendered, its markup matched
against the formats' signatures); tests/data/call-templates/ holds templates written
for these tests that print tools and calls the way the named models' templates do
(vLLM's pythonic, Olmo 3, InternLM 2 and Phi-4-mini example templates). A served model
has no template at hand: its name decides. Each profile's parser then reads a reply its
model writes, and its grammar accepts the calls as the models write them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.protocol.grammar_shapes import shape_grammars
from agent.protocol.profile import profile_for
from tests.protocol.prompt_cases import DATA

TEMPLATES = DATA / "call-templates"


def _tool(name: str, **types: str) -> dict[str, Any]:
    props = {k: {"type": v} for k, v in types.items()}
    return {"type": "function", "function": {"name": name, "parameters": {"properties": props}}}


TOOLS = [
    _tool("get_weather", city="string", days="integer"),
    _tool("read_file", path="string"),
    _tool("list_dir", path="string", recursive="boolean"),
]

# template -> (format, a reply its model writes, the calls in it)
FROM_TEMPLATES: dict[str, tuple[str, str, list[tuple[str, dict[str, Any]]]]] = {
    "llama3.2-pythonic": (
        "pythonic",
        "Checking.\n[get_weather(city='Paris', days=2)]",
        [("get_weather", {"city": "Paris", "days": 2})],
    ),
    "llama4-pythonic": (
        "pythonic",
        '<|python_start|>[get_weather(city="Paris"), read_file(path="a")]<|python_end|><|eot|>',
        [("get_weather", {"city": "Paris"}), ("read_file", {"path": "a"})],
    ),
    "olmo3": (
        "olmo3",
        "<function_calls>\nread_file(path='a')\nlist_dir(path='.', recursive=true)\n"
        "</function_calls><|im_end|>",
        [("read_file", {"path": "a"}), ("list_dir", {"path": ".", "recursive": True})],
    ),
    "internlm2": (
        "internlm2",
        '<|action_start|><|plugin|>\n{"name": "read_file", "parameters": {"path": "a"}}'
        "<|action_end|><|im_end|>",
        [("read_file", {"path": "a"})],
    ),
    "phi4-mini": (
        "phi4_mini",
        'functools[{"name": "get_weather", "arguments": {"city": "Lima", "days": 1}}]<|end|>',
        [("get_weather", {"city": "Lima", "days": 1})],
    ),
}


def _calls(profile: Any, text: str) -> list[tuple[str, dict[str, Any]]]:
    parser = profile.parser(TOOLS)
    events = [e for c in (text[:7], text[7:]) for e in parser.feed(c)] + parser.finish()
    return [(e.call.name, e.call.arguments) for e in events if e.call is not None]


def test_every_template_here_is_checked() -> None:
    assert {p.stem for p in TEMPLATES.glob("*.jinja")} == set(FROM_TEMPLATES)


@pytest.mark.parametrize("stem", sorted(FROM_TEMPLATES))
def test_the_template_routes_to_its_format(stem: str) -> None:
    fmt, reply, calls = FROM_TEMPLATES[stem]
    source = (TEMPLATES / f"{stem}.jinja").read_text(encoding="utf-8")
    profile = profile_for("some-model", chat_template=source)  # a name that says nothing
    assert profile.tool_format == fmt
    assert profile.template_origin == "given" and profile.dialect.native_calls
    assert _calls(profile, reply) == calls


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("DeepSeek-V3-0324", "deepseek_v3_r1"),
        ("deepseek-r1", "deepseek_v3_r1"),
        ("DeepSeek-V3.1-Terminus", "deepseek_v31"),
        ("DeepSeek-V3.2-Exp", "deepseek_dsml"),
        ("Llama-4-Scout-17B-16E-Instruct", "pythonic"),
        ("openai:http://127.0.0.1:8000/v1#Llama-4-Maverick-17B-128E-Instruct", "pythonic"),
        ("Olmo-3-7B-Instruct", "olmo3"),
        ("internlm2_5-7b-chat", "internlm2"),
        ("granite-3.1-8b-instruct", "granite"),
        ("granite-4.0-h-tiny", "hermes"),  # Granite 4 writes Hermes
        ("Phi-4-mini-instruct", "phi4_mini"),
        ("Llama-3.2-3B-Instruct", "llama3_json"),
        ("openai:http://127.0.0.1:8000/v1#llama-3.2-3b-instruct-pythonic", "pythonic"),
        ("qwen3-8b", "hermes"),  # an existing name route, kept
    ],
)
def test_a_served_model_is_routed_by_its_name(name: str, fmt: str) -> None:
    assert profile_for(name).tool_format == fmt


def test_the_name_does_not_outvote_the_template() -> None:
    """A Llama 3.2 named so but served with the pythonic template writes pythonic."""
    source = (TEMPLATES / "llama3.2-pythonic.jinja").read_text(encoding="utf-8")
    assert profile_for("Llama-3.2-3B-Instruct", chat_template=source).tool_format == "pythonic"


# Calls as the models write them, which each format's constrained grammar must accept.
GRAMMAR_CASES = [
    ("pythonic", "[get_weather(city='Paris', days=2), read_file(path=\"a.txt\")]"),
    ("pythonic", '<|python_start|>[get_weather(city="Paris")]<|python_end|>'),
    ("olmo3", "<function_calls>\nread_file(path='a')\nlist_dir(path='.', recursive=true)\n"
              "</function_calls>"),
    ("internlm2", '<|action_start|><|plugin|>\n{"name": "read_file", "parameters": {"path": "a"}}'
                  "<|action_end|>"),
    ("granite", '<|tool_call|>[{"name": "read_file", "arguments": {"path": "a"}}, '
                '{"name": "get_weather", "arguments": {"city": "Rome"}}]'),
    ("llama3_json", '{"name": "get_weather", "parameters": {"city": "Tokyo", "days": 3}}'),
    ("phi4_mini", 'functools[{"name": "get_weather", "arguments": {"city": "Lima"}}]'),
    ("phi4_mini", '<|tool_call|>[{"name": "read_file", "arguments": {"path": "a"}}]<|/tool_call|>'),
]  # fmt: skip


@pytest.mark.parametrize(("fmt", "text"), GRAMMAR_CASES, ids=lambda v: str(v)[:30])
def test_the_grammar_accepts_the_calls_models_write(fmt: str, text: str) -> None:
    pytest.importorskip("llama_cpp")
    from tests.gbnf_check import grammar_accepts

    grammars = shape_grammars(fmt, TOOLS, parallel=True)
    assert grammars is not None
    assert grammar_accepts(grammars[0], text)
    assert not grammar_accepts(
        grammars[0], text.replace("read_file", "rm_rf").replace("get_weather", "rm_rf")
    )


def test_the_template_data_is_described() -> None:
    readme = (Path(DATA) / "README.md").read_text(encoding="utf-8")
    assert "call-templates/" in readme
