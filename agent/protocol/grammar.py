"""GBNF grammars that make a model's reply either a final answer or a well-formed call.

A 135M model cannot reliably type `<tool_call>{"name": …}` from instructions alone; with
this grammar the sampler can only produce a call whose name is one of the tools and whose
arguments match that tool's JSON schema, or an answer that does not start with "<".
The converter covers the schema subset bosun's tools are built from (objects with
required/optional properties, strings, integers, numbers, booleans, enums, arrays);
anything else falls back to generic JSON for that value, never to an invalid grammar.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from agent.markup import TOOL_CALL_CLOSE, TOOL_CALL_OPEN

_PRIMITIVES = {
    "ws": '" "?',
    "char": r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "string": '"\\"" char* "\\""',
    "integer": '"-"? ("0" | [1-9] [0-9]{0,15})',
    "number": 'integer ("." [0-9]+)? ([eE] [-+]? [0-9]+)?',
    "boolean": '"true" | "false"',
    "null": '"null"',
    "value": "object | array | string | number | boolean | null",
    "object": '"{" ws ( string ":" ws value ("," ws string ":" ws value)* )? ws "}"',
    "array": '"[" ws ( value ("," ws value)* )? ws "]"',
}

_ANSWER = "[^<\\x00] [^\\x00]*"  # prose: anything that does not open a tag


def _literal(text: str) -> str:
    """A GBNF string literal for `text`."""
    return json.dumps(text, ensure_ascii=False)


def _rule_name(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9-]+", "-", text).strip("-").lower() or "x"


class _Builder:
    def __init__(self) -> None:
        self.rules: dict[str, str] = {}

    def add(self, name: str, body: str) -> str:
        base, n = name, 1
        while name in self.rules and self.rules[name] != body:
            n += 1
            name = f"{base}-{n}"
        self.rules[name] = body
        return name

    def value(self, schema: Any, name: str) -> str:
        """The rule (name or inline expression) for a value matching `schema`."""
        if not isinstance(schema, dict):
            return "value"
        if "enum" in schema and all(isinstance(v, str | int | bool) for v in schema["enum"]):
            alts = " | ".join(_literal(json.dumps(v, ensure_ascii=False)) for v in schema["enum"])
            return self.add(name, alts)
        if "const" in schema:
            return self.add(name, _literal(json.dumps(schema["const"], ensure_ascii=False)))
        kind = schema.get("type")
        if kind in ("string", "integer", "number", "boolean", "null"):
            return str(kind)
        if kind == "array":
            item = self.value(schema.get("items"), f"{name}-item")
            return self.add(name, f'"[" ws ( {item} ("," ws {item})* )? ws "]"')
        if kind == "object" and isinstance(schema.get("properties"), dict):
            return self.obj(schema, name)
        return "value"

    def obj(self, schema: dict[str, Any], name: str) -> str:
        props: dict[str, Any] = schema["properties"]
        required = [k for k in props if k in set(schema.get("required", []))]
        optional = [k for k in props if k not in required]

        def kv(key: str) -> str:
            rule = self.value(props[key], f"{name}-{_rule_name(key)}")
            return f'{_literal(json.dumps(key))} ":" ws {rule}'

        tail = " ".join(f'("," ws {kv(k)})?' for k in optional)
        if required:
            body = ' "," ws '.join(kv(k) for k in required) + (f" {tail}" if tail else "")
        elif optional:
            alts = []
            for i, key in enumerate(optional):
                rest = " ".join(f'("," ws {kv(k)})?' for k in optional[i + 1 :])
                alts.append(f"{kv(key)} {rest}".strip())
            body = "( " + " | ".join(f"( {a} )" for a in alts) + " )?"
        else:
            body = ""
        return self.add(name, f'"{{" ws {body} ws "}}"')

    def render(self, root: str) -> str:
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self.rules.items()]
        lines += [f"{name} ::= {body}" for name, body in _PRIMITIVES.items()]
        return "\n".join(lines) + "\n"


def tool_call_grammar(
    tools: Sequence[dict[str, Any]],
    require_call: bool = False,
    *,
    open_tag: str = TOOL_CALL_OPEN,
    close_tag: str = TOOL_CALL_CLOSE,
    parallel: bool = False,
) -> str:
    """Either a plain answer (first character not "<") or one canonical tool call;
    only the call when `require_call`.

    The call is rendered exactly as the system prompt shows it, so the model's trained
    habits and the grammar agree:  <tool_call>\\n{"name": "X", "arguments": {…}}\\n</tool_call>
    """
    b = _Builder()
    alts = []
    for spec in tools:
        fn = spec.get("function", spec)
        name = fn["name"]
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        args_rule = b.value(params, f"args-{_rule_name(name)}")
        if args_rule not in b.rules:
            args_rule = "object"  # arguments must be an object whatever the schema says
        head = _literal(f'{{"name": {json.dumps(name)}, "arguments": ')
        alts.append(b.add(f"call-{_rule_name(name)}", f'{head} {args_rule} "}}"'))
    if not alts:
        return b.render("answer") + "answer ::= [^\\x00]*\n"
    b.add(
        "call",
        f'{_literal(open_tag + chr(10))} ( {" | ".join(alts)} ) "\\n"? {_literal(close_tag)}',
    )
    # Several calls in one reply are Hermes too, but a grammar that admits them makes a
    # small model chain call after call until the token limit (SmolLM2: 19 of 20 first
    # replies valid with one call, 8 of 20 with several), so only `parallel` allows it.
    b.add("calls", 'call ( "\\n"? call )*' if parallel else "call")
    if require_call:
        return b.render("calls")
    b.add("answer", _ANSWER)
    return b.render('"\\n"? ( calls | answer )')


def answer_grammar() -> str:
    """A plain answer, no tool call: for a turn where another call cannot help."""
    return f'root ::= "\\n"? answer\nanswer ::= {_ANSWER}\n'
