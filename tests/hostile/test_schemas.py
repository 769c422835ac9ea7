"""An MCP server's tool list is untrusted input, like a model's output: its schemas must
never hang argument validation (a backtracking `pattern`) nor recurse without end (a
`$ref` that loops). Every case here either leaves the tool out with one line, or keeps
it and bounds the work; the elapsed-time checks are hang detectors, not benchmarks.
Grammars and control tokens: test_schema_grammar.py; how much a server may add and the
whole class through `bosun run`: test_schema_listing.py."""

from __future__ import annotations

from typing import Any

import pytest

from agent.mcp.tools import input_schema, output_schema_problem, schema_problem
from tests.hostile.schema_helpers import (
    BACKTRACKING,
    NO_MATCH,
    check,
    registry_with,
)

# -- (a) patterns --------------------------------------------------------------------

PATTERNED = {
    "pattern": ({"properties": {"x": {"type": "string", "pattern": BACKTRACKING}}}, "x"),
    "patternProperties": (
        {"patternProperties": {BACKTRACKING: {"type": "integer"}}, "additionalProperties": False},
        None,
    ),
    "propertyNames": ({"propertyNames": {"pattern": BACKTRACKING}}, None),
    "ref": (
        {"properties": {"x": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"pattern": BACKTRACKING}}},
        "x",
    ),
    "anyOf": (
        {"properties": {"x": {"anyOf": [{"type": "integer"}, {"pattern": BACKTRACKING}]}}},
        "x",
    ),
}


@pytest.mark.parametrize("case", PATTERNED)
def test_backtracking_patterns_are_checked_in_linear_time(case: str) -> None:
    body, key = PATTERNED[case]
    schema = {"type": "object", **body}
    assert schema_problem(schema) is None  # a pattern RE2 takes: the tool is kept
    registry = registry_with(schema)
    bad = {key: NO_MATCH} if key else {NO_MATCH: 1}
    good = {key: "a" * 40} if key else {"a" * 40: 1}
    problem = check(registry, bad)
    assert problem is not None and problem.startswith("invalid arguments for srv__t")
    assert check(registry, good) is None


@pytest.mark.parametrize(
    "pattern",
    [
        "^(?=a)(a|a)*$",  # look-ahead: no linear-time engine has it
        "^(a)\\1$",  # a back-reference
        "(?:a{1000}){1000}",  # a program too large for RE2's memory bound
        "(",  # not a regex at all
    ],
    ids=["lookahead", "backreference", "too-large", "not-a-regex"],
)
def test_a_pattern_that_cannot_be_checked_in_linear_time_leaves_the_tool_out(
    pattern: str,
) -> None:
    as_pattern = {"type": "object", "properties": {"x": {"type": "string", "pattern": pattern}}}
    as_key = {"type": "object", "patternProperties": {pattern: {}}}
    for schema in (as_pattern, as_key):
        reason = schema_problem(schema)
        assert reason is not None and ("pattern" in reason or "regex" in reason), schema


def test_a_pattern_in_an_output_schema_leaves_the_tool_out() -> None:
    """The MCP SDK checks a tool's structured result against its output schema with
    Python's backtracking `re`, on the hub's thread: no pattern may reach it."""
    out = {"type": "object", "properties": {"x": {"type": "string", "pattern": BACKTRACKING}}}
    reason = output_schema_problem(out)
    assert reason is not None and "pattern" in reason
    assert output_schema_problem({"$ref": "#"}) is not None
    assert output_schema_problem({"type": "object", "properties": {"x": {}}}) is None
    assert output_schema_problem(None) is None


def test_pattern_text_that_is_data_is_not_read_as_a_pattern() -> None:
    """A property named "pattern", or a default that holds one, is not a regex."""
    schema = {
        "type": "object",
        "properties": {"pattern": {"type": "string", "default": "(?=x)"}},
        "examples": [{"pattern": "(?=x)"}],
    }
    assert schema_problem(schema) is None


# -- (b) $ref --------------------------------------------------------------------------

LOOPS: dict[str, dict[str, Any]] = {
    "root": {"$ref": "#"},
    "pair": {
        "$ref": "#/$defs/a",
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
    },
    "allOf": {"allOf": [{"$ref": "#"}]},
    "property": {"properties": {"x": {"$ref": "#/properties/x"}}},
    "anchor": {
        "properties": {"x": {"$ref": "#here"}},
        "$defs": {"a": {"$anchor": "here", "anyOf": [{"$ref": "#here"}]}},
    },
    "not": {"not": {"$ref": "#"}},
    "if": {"if": {"$ref": "#"}},
    "dynamic": {"$dynamicAnchor": "d", "allOf": [{"$dynamicRef": "#d"}]},
    "escaped": {"$defs": {"a/b": {"$ref": "#/$defs/a~1b"}}, "$ref": "#/$defs/a~1b"},
}


@pytest.mark.parametrize("case", LOOPS)
def test_a_ref_that_loops_leaves_the_tool_out(case: str) -> None:
    reason = schema_problem({"type": "object", **LOOPS[case]})
    assert reason is not None and "$ref" in reason, reason


@pytest.mark.parametrize("case", LOOPS)
def test_validation_never_raises_on_a_looping_ref(case: str) -> None:
    """Defence in depth: a schema that got in some other way is an error for the model."""
    problem = check(registry_with({"type": "object", **LOOPS[case]}), {"x": "y"})
    assert problem is not None and "srv__t" in problem


def test_a_long_chain_of_refs_leaves_the_tool_out() -> None:
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(200)}
    defs["d200"] = {"type": "string"}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}
    reason = schema_problem(schema)
    assert reason is not None and "$ref" in reason


def test_a_nested_id_cannot_turn_a_local_ref_into_a_remote_one() -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"$id": "http://127.0.0.1:9/s.json", "$ref": "#/$defs/y"}},
    }
    reason = schema_problem(schema)
    assert reason is not None and "$id" in reason
    problem = check(registry_with(schema), {"x": 1})
    assert problem is not None  # unresolvable: an error for the model, nothing fetched


def test_a_schema_valid_only_in_its_own_draft_is_left_out_and_never_raises() -> None:
    """Arguments are checked as 2020-12 (the listing's `$schema` is dropped): a draft-07
    tuple is not a 2020-12 schema, and validating against it used to raise."""
    declared = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"x": {"items": [{"type": "string"}]}},
    }
    reason = schema_problem(declared)
    assert reason is not None and "not valid JSON Schema" in reason
    problem = check(registry_with(input_schema(declared)), {"x": [1]})
    assert problem is not None and "not valid JSON Schema" in problem


def test_a_recursive_schema_that_descends_is_kept_and_bounded() -> None:
    """A tree (a node whose children are nodes) is legitimate: each $ref steps into
    the arguments, so the arguments' own depth bounds it; no depth makes it raise."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "kids": {"type": "array", "items": {"$ref": "#"}},
        },
    }
    assert schema_problem(schema) is None
    registry = registry_with(schema)
    tree: dict[str, Any] = {"name": "leaf"}
    for _ in range(5):
        tree = {"name": "n", "kids": [tree]}
    assert check(registry, tree) is None
    deep: dict[str, Any] = {"name": 1}
    for _ in range(5000):
        deep = {"kids": [deep]}
    problem = check(registry, deep)
    assert problem is not None and "srv__t" in problem
