"""How one call looks in each format, as data: what writes a call and what constrains one.

A shape is the text before the arguments (`head`, with `{name}`), how the arguments are
written (a JSON object; key/value pairs between tags; Python keywords; Gemma 4's own
syntax) and the text after (`tail`). The same description renders a call in the model's
own format (`write_call`: the tool block's example, calls written into a template that
never prints them, every parser's round-trip test) and builds the grammar for
constrained decoding (`agent.protocol.grammar`), so the two cannot disagree. Each
format's shape is written in its record (`agent.parsing.record.Format.shape`); this
module writes calls from it.
"""

from __future__ import annotations

import json
from typing import Any

from agent.parsing.formats import REGISTRY
from agent.parsing.record import Shape

# The shape of every format bosun can write, from its record (`agent.parsing.formats`).
SHAPES: dict[str, Shape] = {name: f.shape for name, f in REGISTRY.items() if f.shape is not None}

_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return _JSON_TYPES.get(type(value), "string")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def python_literal(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(python_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        items = (f"{_json(str(k))}: {python_literal(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    return _json(value)


def gemma_literal(value: Any) -> str:
    if isinstance(value, str):
        return f'<|"|>{value}<|"|>'
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{gemma_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(gemma_literal(v) for v in value) + "]"
    return _json(value)


def _pair(shape: Shape, key: str, value: Any) -> str:
    text = value if isinstance(value, str) else _json(value)
    opener = (
        shape.key_open.replace("{key}", key)
        .replace("{type}", json_type(value))
        .replace("{string}", "true" if isinstance(value, str) else "false")
    )
    return opener + text + shape.key_close.replace("{key}", key)


def write_call(tool_format: str, name: str, arguments: dict[str, Any]) -> str | None:
    """`name(arguments)` written as a model of `tool_format` writes it, or None where
    bosun knows no shape for the format."""
    return write_calls(tool_format, [(name, arguments)])


def write_calls(tool_format: str, calls: list[tuple[str, dict[str, Any]]]) -> str | None:
    """Several calls in one reply, in the format's own section where it has one."""
    shape = SHAPES.get(tool_format)
    if shape is None:
        return None
    body = shape.join.join(_one(shape, name, args, i) for i, (name, args) in enumerate(calls))
    return shape.section[0] + body + shape.section[1]


def _one(shape: Shape, name: str, arguments: dict[str, Any], index: int) -> str:
    if shape.args == "json":
        body = _json(arguments)
    elif shape.args == "kv":
        body = "".join(_pair(shape, k, v) for k, v in arguments.items())
    elif shape.args == "python":
        body = shape.sep.join(f"{k}={python_literal(v)}" for k, v in arguments.items())
    else:
        body = shape.sep.join(f"{k}:{gemma_literal(v)}" for k, v in arguments.items())
    return shape.head_for(name, index) + body + shape.tail_for(index)
