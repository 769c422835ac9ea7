"""Argument values that a format carries as text, typed by the tool's JSON schema.

XML-like formats (Qwen3-Coder, GLM, MiniMax, Seed-OSS, Kimi K3, DSML, …) write every
value as text. The schema says what it is: a string parameter stays exactly the text the
model wrote (so `write_file` can write `{"k": 1}` or `"hi"` and `bash` can run `true`),
integers, numbers, booleans, null, objects and arrays are parsed. A value that does not
parse as its declared type is passed on as written, so the tool's own validation reports
it to the model. Without a schema (an unknown tool or parameter) a value that reads as
JSON is taken as JSON, else as text: what llama.cpp does for schema-less parameters.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from agent import untrusted

Schemas = Mapping[str, dict[str, Any]]


def _reject_constant(name: str) -> Any:
    raise ValueError(name)  # NaN and Infinity are not JSON values


def json_or_none(text: str) -> tuple[bool, Any]:
    try:
        return True, untrusted.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return False, None


def _types(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    out: list[str] = []
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key) or []:
            out += _types(sub)
    if not out and "enum" in schema:
        values = schema["enum"]
        if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
            return ["string"]
    return out


def param_schema(schemas: Schemas, tool: str, param: str) -> dict[str, Any] | None:
    props = (schemas.get(tool) or {}).get("properties")
    if isinstance(props, dict) and isinstance(props.get(param), dict):
        return props[param]
    return None


def typed_value(raw: str, schema: dict[str, Any] | None) -> Any:
    """`raw` as the value its schema declares (see the module docstring)."""
    kinds = _types(schema)
    if not kinds:
        ok, value = json_or_none(raw.strip())
        return value if ok else raw
    text = raw.strip()
    for kind in kinds:
        if kind == "string":
            continue
        if kind == "integer":
            try:
                return int(text)
            except ValueError:
                ok, value = json_or_none(text)
                if ok and isinstance(value, float) and value.is_integer():
                    return int(value)
        elif kind == "number":
            ok, value = json_or_none(text)
            if ok and isinstance(value, int | float) and not isinstance(value, bool):
                return value
        elif kind == "boolean":
            if text.lower() in ("true", "false"):
                return text.lower() == "true"
        elif kind == "null":
            if text.lower() in ("null", "none"):
                return None
        elif kind in ("object", "array"):
            ok, value = json_or_none(text)
            if not ok:
                try:  # Python literals ({'a': True}), as some models write them
                    untrusted.check_depth(text)
                    value, ok = untrusted.clean(ast.literal_eval(text)), True
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    ok = False
            if ok and isinstance(value, dict if kind == "object" else list):
                return value
    return raw


def typed_arguments(tool: str, pairs: list[tuple[str, str]], schemas: Schemas) -> dict[str, Any]:
    """Text key/value pairs of one call -> its arguments, each typed by the schema."""
    return {key: typed_value(raw, param_schema(schemas, tool, key)) for key, raw in pairs}
