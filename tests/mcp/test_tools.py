"""A server's listing and results are untrusted: names, schemas, content."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agent.mcp.tools import MAX_RESULT_CHARS, result_text, schema_problem, tool_name
from agent.protocol.grammar import tool_call_grammar


def test_names_are_namespaced_sanitised_short_and_unique() -> None:
    taken = {"read_file"}
    assert tool_name("git", "git_status", taken) == "git__git_status"
    assert tool_name("web", "fetch.page/v2", taken) == "web__fetch_page_v2"
    assert tool_name("web", "fetch page v2", taken) == "web__fetch_page_v2_2"
    long = tool_name("s", "x" * 200, taken)
    assert len(long) == 64 and long.startswith("s__x")
    assert tool_name("s", "..", taken) == "s__tool"
    assert tool_name("my-server", "get-time", taken) == "my_server__get_time"
    assert tool_name("1st", "x", taken) == "mcp_1st__x"
    assert all(name.isidentifier() for name in taken)


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "object", "properties": {"x": {"type": "no-such-type"}}}, "not valid JSON"),
        ({"type": "array"}, "not 'object'"),
        ("object", "not an object"),
        ({"type": "object", "properties": {"x": {"$ref": "https://evil/s.json"}}}, "$ref"),
        ({"type": "object", "properties": {"x": {"enum": ["a" * 40_000]}}}, "characters"),
    ],
)
def test_bad_schemas_are_named(schema: object, problem: str) -> None:
    reason = schema_problem(schema)
    assert reason is not None and problem in reason


def test_a_deep_schema_is_refused_before_anything_recurses_into_it() -> None:
    schema: dict[str, object] = {"type": "string"}
    for _ in range(3000):
        schema = {"type": "array", "items": schema}
    reason = schema_problem({"type": "object", "properties": {"x": schema}})
    assert reason is not None and "nested deeper" in reason


def test_real_schemas_pass_and_build_a_grammar() -> None:
    schema = {
        "type": "object",
        "properties": {
            "timezone": {"type": "string", "title": "Timezone"},
            "when": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
        },
        "required": ["timezone"],
        "$defs": {"tag": {"type": "string"}},
        "title": "get_current_timeArguments",
    }
    assert schema_problem(schema) is None
    spec = {"type": "function", "function": {"name": "t__x", "parameters": schema}}
    assert "t__x" in tool_call_grammar([spec], open_tag="<tool_call>", close_tag="</tool_call>")


def content(kind: str, **fields: object) -> SimpleNamespace:
    return SimpleNamespace(type=kind, **fields)


def test_results_text_as_is_other_content_described() -> None:
    text = result_text(
        [
            content("text", text="line one"),
            content("image", data="iVBORw0KGgo=", mime_type="image/png"),
            content("resource", resource=SimpleNamespace(text="inside", uri="file:///a")),
            content("resource", resource=SimpleNamespace(blob="AA==", uri="file:///b")),
            content("resource_link", uri="file:///c"),
        ],
        None,
    )
    assert text.splitlines() == [
        "line one",
        "[image content: image/png, 9 bytes]",
        "inside",
        "[resource file:///b]",
        "[resource link file:///c]",
    ]
    assert result_text([], {"a": 1}) == '{"a": 1}'


def test_huge_results_are_capped_with_a_note() -> None:
    text = result_text([content("text", text="x" * (MAX_RESULT_CHARS + 500))], None)
    assert len(text) < MAX_RESULT_CHARS + 100 and "500 more characters" in text
