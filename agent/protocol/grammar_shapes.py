"""Constrained decoding in each model's own call format, built from its call shape.

Each format's record says how one call looks in it (`agent.parsing.shapes.SHAPES`); the
grammar here admits exactly that (a call to one of the tools, its arguments typed by the
tool's schema, several calls where the format groups them) or an answer that does not
start like a call. Whitespace in a shape may be any short run of whitespace, so the
layouts models really produce (`{"a":1}` and `{"a": 1}`, tags on one line or on several)
all pass; a value written as text may hold anything but the start of its closing tag;
arguments written as key/value pairs may come in any order. Hermes keeps
`agent.protocol.grammar`'s own grammar, on which the small bundled models were measured.
Building is bounded as there: a tool whose arguments would pass TOOL_BUDGET takes any
arguments in its format (any key, any value), the whole raises GrammarTooLarge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from agent.parsing.formats import FORMAT_STOPS
from agent.parsing.record import Shape
from agent.parsing.shapes import SHAPES
from agent.protocol.grammar import _PRIMITIVES, TOOL_BUDGET, _Builder, _rule_name

_ANY = "[^\\x00]*"
_RULES = {
    **_PRIMITIVES,
    "ws": "[ \\t\\n]{0,16}",
    "py-value": 'string | "\'" [^\'\\\\\\n]* "\'" | number | "True" | "False" | "None" | py-list'
    " | py-dict",
    "py-list": '"[" ws ( py-value ( "," ws py-value )* )? ws "]"',
    "py-dict": '"{" ws ( string ":" ws py-value ( "," ws string ":" ws py-value )* )? ws "}"',
    "gemma-string": '"<|\\"|>" [^<]* "<|\\"|>"',
    "gemma-value": "gemma-string | number | boolean | gemma-object | gemma-array",
    "gemma-object": '"{" ws ( gemma-pair ( "," ws gemma-pair )* )? ws "}"',
    "gemma-pair": '[A-Za-z_] [A-Za-z0-9_]* ":" gemma-value',
    "gemma-array": '"[" ws ( gemma-value ( "," ws gemma-value )* )? ws "]"',
    "harmony-channel": '"commentary" | "analysis"',
}
_ID = "[a-zA-Z0-9]{9}"
# Any argument name, where a tool's arguments are left free: nothing that could end the
# name in any format's markup (a tag, a quote, `=`, `:`, `,`, whitespace).
_ANY_KEY = '[^<>"=:, \\t\\n]{1,128}'


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _lit(text: str) -> str:
    """A GBNF sequence for `text`, every whitespace run in it loosened to `ws`."""
    out = [("ws" if part.isspace() else _quote(part)) for part in re.split(r"(\s+)", text) if part]
    return " ".join(out)


def _fill(template: str, **values: str) -> str:
    """`_lit` of a template whose placeholders stand for GBNF given in `values`."""
    out = []
    for piece in re.split(r"(\{[a-z]+\})", template):
        if piece[1:-1] in values and piece.startswith("{"):
            out.append(values[piece[1:-1]])
        elif piece:
            out.append(_lit(piece))
    return " ".join(out)


def _class(c: str) -> str:
    """One character inside a GBNF character class."""
    return {"]": "\\]", "\\": "\\\\", "^": "\\^", "-": "\\-", "\n": "\\n", "\t": "\\t"}.get(c, c)


def _not_starting_with(prefix: str) -> str:
    """Text that does not begin with `prefix` (nor with whitespace, which the root's
    `ws` takes, so a prefix after a space cannot slip through)."""
    alts = [
        " ".join(
            [*(_quote(c) for c in prefix[:k]), f"[^{_class(c)}{' ' if k == 0 else ''}\\t\\n\\x00]"]
        )
        for k, c in enumerate(prefix)
    ]
    return f"( {' | '.join(alts)} ) {_ANY}"


def _kind(schema: Any) -> str | None:
    kind = schema.get("type") if isinstance(schema, dict) else None
    return kind if isinstance(kind, str) else None


class _ShapeGrammar:
    def __init__(self, fmt: str, shape: Shape) -> None:
        self.fmt, self.shape = fmt, shape
        self.b = _Builder()
        self.loose: list[str] = []  # tools whose arguments are left free
        self._text_body = ""

    def _text(self) -> str:
        """Text that does not contain the value's closing tag: any character but the
        tag's first, or the tag's first characters followed by one that breaks it."""
        if not self._text_body:  # the same for every value: worked out once
            close = re.split(r"\{key\}", self.shape.key_close.strip())[0] or self.shape.key_close
            alts = [
                " ".join([*(_quote(c) for c in close[:k]), f"[^{_class(c)}]"])
                for k, c in enumerate(close)
            ]
            self._text_body = f"( {' | '.join(alts)} )*"
        return self.b.add("text-value", self._text_body)

    def _value(self, schema: Any, name: str) -> str:
        kind, style = _kind(schema), self.shape.args
        if style == "kv":
            if kind in ("integer", "number", "boolean", "null"):
                return str(kind)
            return self.b.value(schema, name) if kind in ("object", "array") else self._text()
        if style == "python":
            if kind in ("integer", "number"):
                return kind
            if kind == "boolean":
                return self.b.add("py-boolean", '"True" | "False" | "true" | "false"')
            if kind == "string":
                return self.b.add("py-string", 'string | "\'" [^\'\\\\\\n]* "\'"')
            return "py-value"
        if kind == "string":
            return "gemma-string"
        return str(kind) if kind in ("integer", "number", "boolean") else "gemma-value"

    def _arguments(self, params: Any, rule: str) -> str:
        shape = self.shape
        if shape.args == "json":
            args = self.b.value(params, f"{rule}-args")
            return args if args in self.b.rules else "object"
        props = params.get("properties") if isinstance(params, dict) else None
        return self._pairs(props.items() if isinstance(props, dict) else (), rule)

    def _free(self, rule: str) -> str:
        """Any arguments: any JSON object, or any number of pairs with any names."""
        if self.shape.args == "json":
            return "object"
        return self._pairs([(None, {})], rule)

    def _pairs(self, props: Any, rule: str) -> str:
        shape = self.shape
        pairs = []
        for key, schema in props:
            kind = _kind(schema)
            name = _ANY_KEY if key is None else _quote(key)
            string = '( "true" | "false" )' if key is None else None
            opener = _fill(
                shape.key_open,
                key=name,
                type="[a-z]+",
                string=string or _quote("true" if kind in (None, "string") else "false"),
            )
            value = self._value(schema, f"{rule}-{_rule_name(key or 'any')}")
            pairs.append(f"{opener} {value} {_fill(shape.key_close, key=name)}".strip())
        if not pairs:
            return ""
        pair = self.b.add(f"{rule}-pair", " | ".join(f"( {p} )" for p in pairs))
        if shape.sep:
            return f"( {pair} ( ws {_lit(shape.sep.strip())} ws {pair} )* )?"
        return f"( ws {pair} )*"

    def _call(self, spec: dict[str, Any]) -> str:
        fn = spec.get("function", spec)
        name = str(fn["name"])
        rule = f"call-{_rule_name(name)}"
        tail = self.shape.tail
        for stop in FORMAT_STOPS.get(self.fmt, ()):
            tail = tail.removesuffix(stop)  # it ends generation: the sampler never sees it
        values = {"name": _quote(name), "index": "[0-9]{1,3}", "id": _ID}
        shape = self.shape
        if shape.gbnf_head:
            head = shape.gbnf_head.replace("{name}", _quote(name))
        else:
            heads = [_fill(h, **values) for h in (shape.head, *shape.alt_heads)]
            head = heads[0] if len(heads) == 1 else "( " + " | ".join(heads) + " )"
        params = fn.get("parameters") or {}
        args = self.b.within(TOOL_BUDGET, lambda: self._arguments(params, rule))
        if args is None:
            self.loose.append(name)
            args = self._free(rule)
        parts = [head, args, _fill(tail, **values)]
        return self.b.add(rule, " ".join(p for p in parts if p))

    def build(self, tools: Sequence[dict[str, Any]], root: str, parallel: bool) -> str:
        shape = self.shape
        any_call = self.b.add("call", " | ".join(self._call(spec) for spec in tools))
        join = _lit(shape.join) if shape.join.strip() else "ws"
        block = f"{any_call} ( {join} {any_call} )*" if parallel else any_call
        sections = [s for s in (shape.section, *shape.alt_sections) if s != ("", "")]
        if sections:
            wrapped = [f"{_lit(a)} {block} {_lit(b)}" for a, b in sections]
            block = wrapped[0] if len(wrapped) == 1 else " | ".join(f"( {w} )" for w in wrapped)
        if shape.trailer:
            block = f"( {block} ) ( ws {_lit(shape.trailer)} )?"
        if shape.gbnf_prefix:
            block = f"{shape.gbnf_prefix} ws ( {block} )"
        self.b.add("block", block)
        start = re.split(r"\{(?:name|index)\}", shape.section[0] or shape.head)[0].lstrip()
        # A format whose calls start with the tool's name (functionary v3.2) answers
        # through the recipient "all".
        self.b.add("answer", _not_starting_with(start) if start else f'"all" ws {_ANY}')
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self.b.rules.items()]
        lines += [f"{name} ::= {body}" for name, body in _RULES.items() if name not in self.b.rules]
        return "\n".join(lines) + "\n"


def shape_grammars(
    fmt: str,
    tools: Sequence[dict[str, Any]],
    *,
    parallel: bool = False,
    loose: list[str] | None = None,
) -> tuple[str, str, str] | None:
    """(first call, a call or an answer, an answer only) in `fmt`; None without a shape
    or without tools. One call per reply unless `parallel`: admitting several makes a
    small model chain calls until its token limit (see agent.protocol.grammar). Tools
    whose arguments are left free are appended to `loose` (once each); GrammarTooLarge
    when the grammar would pass GRAMMAR_BUDGET."""
    shape = SHAPES.get(fmt)
    if shape is None or not tools:
        return None

    def build(root: str) -> str:
        grammar = _ShapeGrammar(fmt, shape)
        text = grammar.build(tools, root, parallel)
        if loose is not None:
            loose.extend(name for name in grammar.loose if name not in loose)
        return text

    return build("ws block"), build("ws ( block | answer )"), build("ws answer")
