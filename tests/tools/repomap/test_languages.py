"""Each language's definitions come out of its fixture with the right kind and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.tools.repomap.extract import extract
from agent.tools.repomap.languages import LANGUAGES, language_of

FIXTURES = Path(__file__).parent / "fixtures"

# file -> definitions that must be found, as (name, kind, line)
EXPECTED: dict[str, set[tuple[str, str, int]]] = {
    "shapes.py": {("LIMIT", "constant", 3), ("Shape", "class", 6), ("area", "method", 7),
                  ("name", "method", 11), ("total_area", "function", 15)},
    "shapes.js": {("LIMIT", "constant", 1), ("Shape", "class", 3), ("area", "method", 4),
                  ("totalArea", "function", 9), ("double", "function", 13)},
    "shapes.ts": {("LIMIT", "constant", 1), ("Sized", "interface", 3), ("Id", "type", 7),
                  ("Color", "enum", 9), ("Shape", "class", 11), ("size", "method", 12),
                  ("totalArea", "function", 17)},
    "widget.tsx": {("Props", "interface", 1), ("Button", "function", 5),
                   ("Panel", "function", 9)},
    "shapes.go": {("Limit", "constant", 3), ("Shape", "struct", 5), ("Sized", "interface", 9),
                  ("ID", "type", 13), ("Size", "method", 15), ("TotalArea", "function", 19)},
    "shapes.rs": {("LIMIT", "constant", 1), ("Shape", "struct", 3), ("Color", "enum", 7),
                  ("Sized", "trait", 11), ("size", "method", 12), ("area", "method", 16),
                  ("total_area", "function", 21), ("square", "macro", 25),
                  ("inner", "module", 29)},
    "Shapes.java": {("Sized", "interface", 3), ("Color", "enum", 7), ("Shapes", "class", 9),
                    ("size", "method", 12), ("totalArea", "method", 16)},
    "shapes.c": {("LIMIT", "macro", 3), ("shape", "struct", 5), ("shape_t", "type", 9),
                 ("color", "enum", 11), ("shape_area", "function", 13),
                 ("shape_name", "function", 17)},
    "shapes.cpp": {("geo", "module", 1), ("Shape", "class", 3), ("area", "method", 8),
                   ("total_area", "function", 12)},
    "shapes.rb": {("LIMIT", "constant", 1), ("Geo", "module", 3), ("Shape", "class", 4),
                  ("area", "method", 5), ("unit", "method", 9), ("total_area", "method", 15)},
}  # fmt: skip


def test_every_language_has_a_fixture() -> None:
    covered = {language_of(name) for name in EXPECTED}
    assert covered == set(LANGUAGES)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_definitions_of_each_language(name: str) -> None:
    lang = language_of(name)
    assert lang is not None
    symbols = extract((FIXTURES / name).read_bytes(), lang)
    found = {(d.name, d.kind, d.line) for d in symbols.definitions}
    assert EXPECTED[name] <= found, EXPECTED[name] - found
    assert not symbols.note


def test_a_definition_carries_its_first_line_and_uses_are_references() -> None:
    symbols = extract((FIXTURES / "shapes.py").read_bytes(), "python")
    total = next(d for d in symbols.definitions if d.name == "total_area")
    assert total.signature == "def total_area(shapes):"
    assert symbols.references["area"] == 1  # s.area() in total_area
    assert "total_area" not in symbols.references  # its definition is not a use


def test_a_file_that_does_not_parse_still_gives_what_it_can() -> None:
    symbols = extract(b"def good():\n    pass\n\ndef broken(:\n  ))))\n", "python")
    assert "good" in {d.name for d in symbols.definitions}


def test_a_parse_out_of_time_is_a_note_not_an_error(monkeypatch) -> None:
    from agent.tools.repomap import extract as module

    monkeypatch.setattr(module, "PARSE_TIMEOUT_US", 1_000)
    module._parser_and_queries.cache_clear()
    try:
        deep = b"def f():\n    pass\ny = " + b"(" * 300_000 + b")" * 300_000
        symbols = module.extract(deep, "python")
    finally:
        module._parser_and_queries.cache_clear()
    assert symbols.note == "parse timed out" and symbols.definitions == []
