"""GBNF grammars that make a model's reply either a final answer or a well-formed call.

A 135M model cannot reliably type `<tool_call>{"name": …}` from instructions alone; with
this grammar the sampler can only produce a call whose name is one of the tools and whose
arguments match that tool's JSON schema, or an answer that does not start with "<".
The converter covers the schema subset bosun's tools are built from (objects with
required/optional properties, strings, integers, numbers, booleans, enums, arrays);
anything else falls back to generic JSON for that value, never to an invalid grammar.

A tool's schema may come from an MCP server, so building is bounded: each property's
rule is built once (nested optional objects used to be rebuilt once per order they could
come in: exponential in their depth), one tool's arguments may take TOOL_BUDGET
characters of rules, past which that tool's arguments are left free (any JSON object,
its name still constrained), and a whole grammar GRAMMAR_BUDGET, past which building
stops with GrammarTooLarge and the caller decodes without a grammar.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
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

# A JSON string holding a patch in Codex's format (a string schema with `"format":
# "apply-patch"`): a small model cannot write the format from a description, but under
# this rule every patch it writes parses. A line's characters exclude the newline,
# which the JSON escape backslash-n ends each line with. The bounds (a line, a hunk,
# hunks and files per patch) are what a constrained model, a small one, writes in one
# call; they make a patch end within a reply instead of one line running to the token
# limit, which is what SmolLM2 does without them.
PATCH_FORMAT = "apply-patch"
_PATCH_RULES = {
    "patch": r'"\"*** Begin Patch\\n" patch-op{1,4} "*** End Patch\""',
    "patch-op": (
        r'"*** Add File: " patch-path "\\n" ("+" patch-line "\\n"){1,40}'
        r' | "*** Delete File: " patch-path "\\n"'
        r' | "*** Update File: " patch-path "\\n" patch-hunk{1,6}'
    ),
    "patch-hunk": r'"@@" (" " patch-char patch-line)? "\\n" ([ +-] patch-line "\\n"){1,16}',
    "patch-line": "patch-char{0,160}",
    "patch-path": "[a-zA-Z0-9_.-] [a-zA-Z0-9_./-]{0,200}",
    "patch-char": r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfrt] | "u" [0-9a-fA-F]{4})',
}
_ANSWER = "[^<\\x00] [^\\x00]*"  # prose: anything that does not open a tag
# Characters of rules: bosun's own tools take about 5,000 in the widest format.
GRAMMAR_BUDGET = 256_000
TOOL_BUDGET = 32_000


class GrammarTooLarge(ValueError):
    """The tools' grammar would pass GRAMMAR_BUDGET: decode without one."""


def _literal(text: str) -> str:
    """A GBNF string literal for `text`."""
    return json.dumps(text, ensure_ascii=False)


def _rule_name(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9-]+", "-", text).strip("-").lower() or "x"


class _Builder:
    def __init__(self) -> None:
        self.rules: dict[str, str] = {}
        self.size = 0  # characters of rules so far
        self.limit = GRAMMAR_BUDGET

    def add(self, name: str, body: str) -> str:
        base, n = name, 1
        while name in self.rules and self.rules[name] != body:
            n += 1
            name = f"{base}-{n}"
        if name not in self.rules:
            self.reserve(len(name) + len(body) + 5)
        self.rules[name] = body
        return name

    def reserve(self, size: int) -> None:
        """Count `size` more characters against the limit (before building them)."""
        self.size += size
        if self.size > self.limit:
            raise GrammarTooLarge(f"the grammar would pass {self.limit} characters")

    def within(self, limit: int, build: Callable[[], str]) -> str | None:
        """`build()` with at most `limit` more characters of rules; None, and nothing
        added, when it needs more (the whole grammar's own limit still raises)."""
        kept, size, outer = len(self.rules), self.size, self.limit
        self.limit = min(outer, size + limit)
        try:
            return build()
        except GrammarTooLarge:
            if self.size - size <= limit:  # the whole grammar is full, not this tool
                raise
            for name in list(self.rules)[kept:]:
                del self.rules[name]
            self.size = size
            return None
        finally:
            self.limit = outer

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
        if kind == "string" and schema.get("format") == PATCH_FORMAT:
            for rule, body in _PATCH_RULES.items():
                self.add(rule, body)
            return "patch"
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
        # Each property's rule once, built in the order the rules were always first
        # written in (so the grammars are the same text as before this was bounded).
        kvs: dict[str, str] = {}
        for key in optional + required:
            rule = self.value(props[key], f"{name}-{_rule_name(key)}")
            kvs[key] = f'{_literal(json.dumps(key))} ":" ws {rule}'

        def kv(key: str) -> str:
            return kvs[key]

        tail = " ".join(f'("," ws {kv(k)})?' for k in optional)
        if required:
            body = ' "," ws '.join(kv(k) for k in required) + (f" {tail}" if tail else "")
        elif optional:
            # One alternative per first property, each listing the ones after it:
            # quadratic in their number, so counted before it is built.
            self.reserve(sum((i + 1) * (len(kv(k)) + 12) for i, k in enumerate(optional)))
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
    loose: list[str] | None = None,
) -> str:
    """Either a plain answer (first character not "<") or one canonical tool call;
    only the call when `require_call`.

    The call is rendered exactly as the system prompt shows it, so the model's trained
    habits and the grammar agree:  <tool_call>\\n{"name": "X", "arguments": {…}}\\n</tool_call>

    A tool whose arguments would pass TOOL_BUDGET takes any JSON object, and its name
    is appended to `loose`; GrammarTooLarge when the whole would pass GRAMMAR_BUDGET.
    """
    b = _Builder()
    alts = []
    for spec in tools:
        fn = spec.get("function", spec)
        name = fn["name"]
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        rule = f"args-{_rule_name(name)}"
        args = b.within(TOOL_BUDGET, lambda p=params, r=rule: b.value(p, r))  # type: ignore[misc]
        if args is None and loose is not None and name not in loose:
            loose.append(name)
        args_rule = args or "object"
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
