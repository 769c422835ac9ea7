"""The model outputs llama.cpp's own tests feed its tool-call parsers, through bosun.

tests/data/tool-calls/llama.cpp-cases.jsonl (source in tests/data/README.md): 112
completions in the formats people run locally. Each goes through the parser that the
model's profile picks (`profile_for(name, architecture=…, chat_template=<the corpus
template>)`), whole, in random chunks and a character at a time; the calls, and the
prose and reasoning where the case states them, must be the expected ones. A case marked
`think_prefilled` was produced after a generation prompt that opened the reasoning
block: the parser is told so by the prompt's end, as the runtime tells it.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from agent.parsing import coalesce
from agent.protocol.profile import profile_for
from tests.protocol.prompt_cases import CORPUS as TEMPLATES
from tests.protocol.prompt_cases import DATA

CASES_FILE = DATA / "tool-calls" / "llama.cpp-cases.jsonl"


def _cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASES_FILE.read_text(encoding="utf-8").splitlines()]


def _tool(tool: str, required: tuple[str, ...] = (), **types: Any) -> dict[str, Any]:
    props = {k: (v if isinstance(v, dict) else {"type": v}) for k, v in types.items()}
    return {
        "type": "function",
        "function": {
            "name": tool,
            "parameters": {"type": "object", "properties": props, "required": list(required)},
        },
    }


# The parameter types of the tools the cases call (as the peer's tests declare them).
TOOLS = [
    _tool("special_function", ("arg1",), arg1="integer"),
    _tool("special_function_with_opt", ("arg1",), arg1="integer", arg2="integer"),
    _tool("python", ("code",), code="string"),
    _tool("html", ("markup",), markup="string"),
    _tool("get_time", ("city",), city="string"),
    _tool("get_weather", ("city",), city="string"),
    _tool("empty_args"),
    _tool("edit", filename="string", oldString="string", newString="string", replaceAll="boolean"),
    _tool("run_in_terminal", ("command",), command="string"),
    _tool("magic", ("name", "ref"), name="string", ref="string"),
    _tool("magic_int", ("ref",), ref="integer", name="string"),
    _tool("quoted_unquoted", quoted="string", unquoted="string"),
    _tool("amount", ("orig",), orig="number"),
    _tool("toggle", ("enabled",), enabled="boolean"),
    _tool("set_config", ("config",), config="object"),
    _tool("set_nullable_str", ("name",), name={"type": ["string", "null"]}),
    _tool(
        "set_union", value={"type": ["string", "object"]}, amount={"type": ["string", "integer"]}
    ),
    _tool("string_param", text="string"),
    _tool("todo_list", ("todos",), todos="array"),
    _tool("imaginary_number", ("number",), number="object"),
    _tool(
        "nested_args",
        ("tags", "entries"),
        tags={"type": "array", "items": {"type": "string"}},
        entries={"type": "array", "items": {"type": "object"}},
    ),
    _tool("read_file_diff_md", review_id="string", file_id="string"),
    _tool(
        "tool_2req_4opt",
        ("req1", "req2"),
        req1="string",
        req2="integer",
        opt1="string",
        opt2="integer",
        opt3="string",
        opt4="integer",
    ),
]


def _template(case: dict[str, Any]) -> str | None:
    m = re.search(r"\[([^\]]*?\.jinja)", case["source"])
    path = TEMPLATES / m.group(1) if m else None
    return path.read_text(encoding="utf-8") if path is not None and path.is_file() else None


def _run(case: dict[str, Any], chunks: list[str]) -> tuple[list[dict[str, Any]], str, str]:
    profile = profile_for(
        case["model"]["name"],
        architecture=case["model"].get("architecture"),
        chat_template=_template(case),
    )
    opened = case.get("think_prefilled") and profile.reasoning is not None
    parser = profile.parser(TOOLS, prompt=profile.reasoning[0] if opened else None)
    events = coalesce([e for c in chunks for e in parser.feed(c)] + parser.finish())
    calls = [{"name": e.call.name, "arguments": e.call.arguments} for e in events if e.call]
    text = "".join(e.text for e in events if e.kind == "text")
    reasoning = "".join(e.text for e in events if e.kind == "reasoning")
    return calls, text, reasoning


def _chunkings(text: str, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(len(text) + 1), min(6, len(text) + 1)))
    return [
        [text],
        [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)],
        list(text),
    ]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["id"])
def test_the_profile_parser_recovers_the_expected_calls(case: dict[str, Any]) -> None:
    text = case["text"]
    for n, chunks in enumerate(_chunkings(text, seed=len(text))):
        calls, prose, reasoning = _run(case, chunks)
        assert calls == case["expected_calls"], n
        if case.get("expected_content") is not None:
            assert prose.strip() == case["expected_content"].strip(), n
        if case.get("expected_reasoning") is not None:
            assert reasoning.strip() == case["expected_reasoning"].strip(), n
    stop = case.get("stop_token")
    if stop:  # the token that stopped generation, fed or not: the same calls
        assert _run(case, [text, stop])[0] == case["expected_calls"]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["id"])
def test_the_profile_names_the_cases_format(case: dict[str, Any]) -> None:
    profile = profile_for(
        case["model"]["name"],
        architecture=case["model"].get("architecture"),
        chat_template=_template(case),
    )
    assert profile.tool_format == case["family"]


def test_the_corpus_is_the_expected_one() -> None:
    cases = _cases()
    assert len(cases) == 112
    assert len({c["family"] for c in cases}) >= 26
    assert Path(CASES_FILE).stat().st_size > 0
