"""Constrained decoding in every format, judged by llama.cpp's own grammar engine.

For each format: the grammars bosun builds parse in llama.cpp; the parallel grammar
accepts every call of every corpus fixture of that format (tests/data/tool-calls)
and the calls bosun writes; the runtime's one-call grammar accepts a single call; and
malformed variants (an unknown tool, a cut-off call, a word where the schema wants an
integer) are rejected.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest

from agent.parsing.formats import FORMAT_REASONING, FORMAT_STOPS, THINK_PAIR
from agent.parsing.native_formats import NATIVE
from agent.parsing.shapes import SHAPES, write_calls
from agent.protocol.grammar import tool_call_grammar
from agent.protocol.grammar_shapes import shape_grammars
from tests.parsing.test_native_corpus import CASES_FILE, TOOLS

pytest.importorskip("llama_cpp")
from tests.gbnf_check import grammar_accepts, grammar_parses


def _grammars(fmt: str, parallel: bool) -> tuple[str, str, str]:
    if fmt == "hermes":
        first = tool_call_grammar(TOOLS, require_call=True, parallel=parallel)
        later = tool_call_grammar(TOOLS, parallel=parallel)
        return first, later, later
    grammars = shape_grammars(fmt, TOOLS, parallel=parallel)
    assert grammars is not None
    return grammars


def _written(fmt: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
    text = write_calls(fmt, calls) or ""
    for stop in FORMAT_STOPS.get(fmt, ()):
        text = text.replace(stop, "")  # it ends generation; the sampler never sees it
    return text


def _fixture_calls() -> dict[str, list[tuple[str, str]]]:
    """format -> (case id, the calls of the fixture: its text from the first call on,
    after any reasoning)."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for line in CASES_FILE.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        fmt, text = case["family"], case["text"]
        if not case["expected_calls"] or fmt not in SHAPES:
            continue
        pair = FORMAT_REASONING.get(fmt, THINK_PAIR)
        if pair and pair[1] in text:
            text = text[text.index(pair[1]) + len(pair[1]) :]
        shape = SHAPES[fmt]
        openers = [r.opener for r in NATIVE[fmt].regions if r.opener] if fmt in NATIVE else []
        openers += [shape.section[0].strip(), shape.head.split("{")[0].strip(), "<|channel|>"]
        openers += [h.split("{")[0].strip() for h in shape.alt_heads]
        found = [text.find(o) for o in openers if o and o in text]
        harmony = fmt == "gpt_oss_harmony"  # its calls open the reply, headers and all
        start = min(found) if found and not harmony else 0
        out[fmt].append((case["id"], text[start:].strip()))
    return out


FIXTURES = _fixture_calls()


@pytest.mark.parametrize("fmt", sorted(SHAPES))
def test_every_grammar_parses_in_llama_cpp(fmt: str) -> None:
    for parallel in (False, True):
        for grammar in _grammars(fmt, parallel):
            assert grammar_parses(grammar), fmt


@pytest.mark.parametrize("fmt", sorted(SHAPES))
def test_the_format_grammar_accepts_every_fixture_and_written_call(fmt: str) -> None:
    first, _, _ = _grammars(fmt, parallel=True)
    for case_id, calls in FIXTURES.get(fmt, []):
        assert grammar_accepts(first, calls), case_id
    two = _written(fmt, [("special_function", {"arg1": 1}), ("get_time", {"city": "Paris"})])
    assert grammar_accepts(first, two), two


@pytest.mark.parametrize("fmt", sorted(SHAPES))
def test_the_runtime_grammar_takes_one_call_or_an_answer(fmt: str) -> None:
    first, later, answer = _grammars(fmt, parallel=False)
    one = _written(fmt, [("special_function", {"arg1": 1})])
    assert grammar_accepts(first, one) and grammar_accepts(later, one), one
    two = _written(fmt, [("special_function", {"arg1": 1}), ("get_time", {"city": "Paris"})])
    assert not grammar_accepts(first, two)
    prose = "all\nThe file is empty." if fmt == "functionary_v32" else "The file is empty."
    assert grammar_accepts(later, prose)
    if fmt != "hermes":
        assert grammar_accepts(answer, prose) and not grammar_accepts(answer, one)


@pytest.mark.parametrize("fmt", sorted(SHAPES))
def test_malformed_calls_are_rejected(fmt: str) -> None:
    first, _, _ = _grammars(fmt, parallel=True)
    one = _written(fmt, [("special_function", {"arg1": 1})])
    assert not grammar_accepts(first, one.replace("special_function", "no_such_tool"))
    assert not grammar_accepts(first, one[: len(one) - 1 - len(one) // 3])  # cut off
    word = _written(fmt, [("special_function", {"arg1": "one"})])
    assert not grammar_accepts(first, word), word


def test_fixtures_cover_most_formats() -> None:
    assert len(FIXTURES) >= 24
    assert sum(len(v) for v in FIXTURES.values()) >= 90
