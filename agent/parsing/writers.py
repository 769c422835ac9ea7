"""A tool call written the way a model writes it, for each format bosun can write.

Where a model's own template prints calls, the template writes them. These writers are
for the rest: a template that knows the model's tools but never prints past calls
(LFM2, Granite 3.3), and bosun's tool block, which shows the model one call in its own
format. They are also the other half of every parser's round-trip test: a call written
here parses back to the same call.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agent.markup import TOOL_CALL_CLOSE, TOOL_CALL_OPEN

Writer = Callable[[str, dict[str, Any]], str]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _python(value: Any) -> str:
    """A Python literal for a JSON value (pythonic calls)."""
    if value is None:
        return "None"
    if value is True or value is False:
        return repr(value)
    if isinstance(value, str):
        return _json(value)
    if isinstance(value, list):
        return "[" + ", ".join(_python(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_json(str(k))}: {_python(v)}" for k, v in value.items()) + "}"
    return _json(value)


def _text(value: Any) -> str:
    """A parameter value as XML-ish formats carry it: strings raw, the rest as JSON."""
    return value if isinstance(value, str) else _json(value)


def hermes(name: str, arguments: dict[str, Any]) -> str:
    return f"{TOOL_CALL_OPEN}\n{_json({'name': name, 'arguments': arguments})}\n{TOOL_CALL_CLOSE}"


def pythonic(name: str, arguments: dict[str, Any]) -> str:
    args = ", ".join(f"{k}={_python(v)}" for k, v in arguments.items())
    return f"[{name}({args})]"


def qwen3_coder_xml(name: str, arguments: dict[str, Any]) -> str:
    params = "".join(f"<parameter={k}>\n{_text(v)}\n</parameter>\n" for k, v in arguments.items())
    return f"{TOOL_CALL_OPEN}\n<function={name}>\n{params}</function>\n{TOOL_CALL_CLOSE}"


def glm45(name: str, arguments: dict[str, Any]) -> str:
    params = "".join(
        f"<arg_key>{k}</arg_key><arg_value>{_text(v)}</arg_value>" for k, v in arguments.items()
    )
    return f"{TOOL_CALL_OPEN}{name}{params}{TOOL_CALL_CLOSE}"


WRITERS: dict[str, Writer] = {
    "hermes": hermes,
    "qwen3_coder_xml": qwen3_coder_xml,
    "glm45": glm45,
    "pythonic": pythonic,
    "lfm2": lambda n, a: f"<|tool_call_start|>{pythonic(n, a)}<|tool_call_end|>",
    "llama3_json": lambda n, a: _json({"name": n, "parameters": a}),
    "mistral_v11": lambda n, a: f"[TOOL_CALLS]{n}[ARGS]{_json(a)}",
    "mistral_json": lambda n, a: f"[TOOL_CALLS]{_json([{'name': n, 'arguments': a}])}",
    "granite": lambda n, a: f"<|tool_call|>{_json([{'name': n, 'arguments': a}])}",
    "firefunction_v2": lambda n, a: f" functools{_json([{'name': n, 'arguments': a}])}",
    "apriel": lambda n, a: f"<tool_calls>{_json([{'name': n, 'arguments': a}])}</tool_calls>",
    "nemotron_toolcall": lambda n, a: (
        f"<TOOLCALL>{_json([{'name': n, 'arguments': a}])}</TOOLCALL>"
    ),
    "functionary_v31": lambda n, a: f"<function={n}>{_json(a)}</function>",
    "functionary_v32": lambda n, a: f">>>{n}\n{_json(a)}",
}


def write_call(tool_format: str, name: str, arguments: dict[str, Any]) -> str | None:
    """`name(arguments)` in `tool_format`, or None where bosun has no writer for it."""
    writer = WRITERS.get(tool_format)
    return writer(name, arguments) if writer is not None else None
