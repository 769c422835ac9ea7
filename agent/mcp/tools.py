"""An MCP server's tools as bosun tools: names, schemas and results a model can take.

A server's listing is untrusted input like a model's output: a schema that is not one,
nests without end, points at the network, loops through its `$ref`s or holds a pattern
no linear-time engine can match would break validation, grammar building or the prompt,
so such a tool is left out (with a one-line reason) and the others stay. A listing too
long for any prompt (more than MAX_TOOLS tools, or MAX_LISTING_CHARS of them together)
is refused whole: which of its tools would matter is not bosun's guess to make.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

import jsonschema

from agent.mcp.schemas import has_pattern, reference_problem
from agent.untrusted import json_line

MAX_NAME = 64  # OpenAI's function-name limit, which most chat templates inherit
MAX_SCHEMA_CHARS = 32_000
MAX_SCHEMA_DEPTH = 32
MAX_DESCRIPTION = 2_000
MAX_RESULT_CHARS = 200_000  # before the context budget cuts it further
# One server's tools, and their names, descriptions and schemas together: the largest
# real servers (GitHub's, about a hundred tools) fit; 5,000 tools made every turn fail.
MAX_TOOLS = 200
MAX_LISTING_CHARS = 400_000
_UNSAFE = re.compile(r"[^A-Za-z0-9_]+")


def tool_name(server: str, tool: str, taken: set[str]) -> str:
    """`server__tool` as an identifier (pythonic call formats, Llama 3's and Gemma's,
    parse names as Python would; JSON ones take anything): other characters become
    `_`, a leading digit gets `mcp_` before it; at most 64 characters, made unique
    among `taken` (which it joins)."""
    base = f"{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool).strip('_') or 'tool'}"
    base = ("mcp_" + base if base[0].isdigit() else base)[:MAX_NAME]
    name, n = base, 1
    while name in taken:
        n += 1
        suffix = f"_{n}"
        name = base[: MAX_NAME - len(suffix)] + suffix
    taken.add(name)
    return name


def schema_problem(schema: Any) -> str | None:
    """Why a tool's input schema cannot be used, or None. Checked: an object schema,
    bounded in size and depth, valid JSON Schema (as declared, and as bosun checks
    arguments: 2020-12, its `$schema` dropped), with only local `$ref`s (a remote one
    would be fetched while validating a call) that never loop, and patterns RE2 takes."""
    if not isinstance(schema, dict):
        return "its input schema is not an object"
    if schema.get("type", "object") != "object":
        return f"its input schema has type {schema.get('type')!r}, not 'object'"
    return _general_problem(schema, "input")


def output_schema_problem(schema: Any) -> str | None:
    """Why a tool's output schema would break a call, or None (no schema is fine). The
    MCP SDK checks each structured result against it with jsonschema, on the hub's
    thread, where bosun cannot bound it: so no loops, and no pattern at all (jsonschema
    matches with Python's backtracking `re`)."""
    if schema is None:
        return None
    if not isinstance(schema, dict):
        return "its output schema is not an object"
    problem = _general_problem(schema, "output")
    if problem is None and has_pattern(schema):
        problem = "its output schema has a pattern, which the MCP SDK matches without a time limit"
    return problem


def _general_problem(schema: dict[str, Any], which: str) -> str | None:
    depth, refs = _walk(schema)
    if depth > MAX_SCHEMA_DEPTH:
        return f"its {which} schema is nested deeper than {MAX_SCHEMA_DEPTH} levels"
    text = json_line(schema)
    if len(text) > MAX_SCHEMA_CHARS:
        return f"its {which} schema is {len(text)} characters (at most {MAX_SCHEMA_CHARS})"
    if any(not ref.startswith("#") for ref in refs):
        return f"its {which} schema refers to another document ($ref)"
    # arguments are checked as 2020-12 (input_schema drops `$schema`), results as declared
    for checked in (schema, input_schema(schema)) if which == "input" else (schema,):
        default = jsonschema.Draft202012Validator
        validator = jsonschema.validators.validator_for(checked, default=default)
        try:
            validator.check_schema(checked)
        except jsonschema.SchemaError as exc:
            return f"its {which} schema is not valid JSON Schema: {exc.message}"
    problem = reference_problem(schema)
    return f"in its {which} schema, {problem}" if problem else None


def listing_problem(listing: Sequence[Any], server: str) -> str | None:
    """Why a server's listing is too large for a session, or None: counted before any
    schema is checked, so checking is bounded too (names, descriptions as bosun cuts
    them, and schemas as JSON, which is how they reach every prompt)."""
    if len(listing) > MAX_TOOLS:
        return f"it offers {len(listing)} tools (at most {MAX_TOOLS})"
    chars = sum(
        len(str(t.name)) + len(description(t.description, server)) + len(json_line(t.input_schema))
        for t in listing
    )
    if chars > MAX_LISTING_CHARS:
        return f"its tools are {chars} characters together (at most {MAX_LISTING_CHARS})"
    return None


def _walk(value: Any) -> tuple[int, list[str]]:
    """How deep a decoded JSON value nests, and its `$ref` strings; iterative, and it
    stops one level past the limit, so no depth makes it recurse or run long."""
    deepest, refs = 0, []
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_SCHEMA_DEPTH:
            break
        if isinstance(item, dict):
            for key, child in item.items():
                if key == "$ref" and isinstance(child, str):
                    refs.append(child)
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return deepest, refs


def input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as bosun's tools carry it: an object with properties."""
    out = {k: v for k, v in schema.items() if k not in ("$schema", "title")}
    out["type"] = "object"
    out.setdefault("properties", {})
    return out


def description(text: str | None, server: str) -> str:
    text = " ".join((text or "").split())
    if len(text) > MAX_DESCRIPTION:
        text = text[: MAX_DESCRIPTION - 1] + "…"
    return f"{text} (MCP server {server})" if text else f"A tool of the MCP server {server}."


def result_text(content: Iterable[Any], structured: Any) -> str:
    """A call's result as text: text content as it is, other content described in one
    line each (a model reading text cannot see a picture), structured content as JSON
    when there is nothing else; at most MAX_RESULT_CHARS."""
    parts: list[str] = []
    for item in content:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(str(getattr(item, "text", "")))
        elif kind in ("image", "audio"):
            data = str(getattr(item, "data", ""))
            size = len(data) * 3 // 4
            parts.append(f"[{kind} content: {getattr(item, 'mime_type', '?')}, {size} bytes]")
        elif kind == "resource":
            resource = getattr(item, "resource", None)
            text = getattr(resource, "text", None)
            uri = getattr(resource, "uri", "?")
            parts.append(str(text) if isinstance(text, str) else f"[resource {uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource link {getattr(item, 'uri', '?')}]")
        else:
            parts.append(f"[{kind or 'unknown'} content]")
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    text = "\n".join(parts)
    if len(text) > MAX_RESULT_CHARS:
        cut = len(text) - MAX_RESULT_CHARS
        text = text[:MAX_RESULT_CHARS] + f"\n[… {cut} more characters of this result left out]"
    return text
