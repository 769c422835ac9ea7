"""An MCP server's tools as bosun tools: names, schemas and results a model can take.

A server's listing is untrusted input like a model's output: a schema that is not one,
nests without end or points at the network would break validation, grammar building or
the prompt, so such a tool is left out (with a one-line reason) and the others stay.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import jsonschema

from agent.untrusted import json_line

MAX_NAME = 64  # OpenAI's function-name limit, which most chat templates inherit
MAX_SCHEMA_CHARS = 32_000
MAX_SCHEMA_DEPTH = 32
MAX_DESCRIPTION = 2_000
MAX_RESULT_CHARS = 200_000  # before the context budget cuts it further
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
    bounded in size and depth, valid JSON Schema, with only local `$ref`s (a remote one
    would be fetched while validating a call)."""
    if not isinstance(schema, dict):
        return "its input schema is not an object"
    if schema.get("type", "object") != "object":
        return f"its input schema has type {schema.get('type')!r}, not 'object'"
    depth, refs = _walk(schema)
    if depth > MAX_SCHEMA_DEPTH:
        return f"its input schema is nested deeper than {MAX_SCHEMA_DEPTH} levels"
    text = json_line(schema)
    if len(text) > MAX_SCHEMA_CHARS:
        return f"its input schema is {len(text)} characters (at most {MAX_SCHEMA_CHARS})"
    if any(not ref.startswith("#") for ref in refs):
        return "its input schema refers to another document ($ref)"
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"its input schema is not valid JSON Schema: {exc.message}"
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
