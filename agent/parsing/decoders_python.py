"""Calls written as Python: Llama 3.2 and Llama 4 pythonic lists, Olmo 3's one call per
line, LFM2's list inside its own tags.

`[get_weather(city='SF', days=3), get_time(tz="PST")]`: the names and the keyword
structure are split by hand (a scan that knows strings and brackets, so a tool named
with a dash or a keyword such as `from=` still reads), and each value is parsed alone
by `ast.parse(mode="eval")` and read by `ast.literal_eval`: never evaluated, so model
text cannot run code. Models of these families also write JSON's `true`, `false` and
`null` (Olmo 3's own template prints them), at any depth: those names become constants
before the literal is read. Input is bounded: nesting by `untrusted.check_depth`, one
call's text by `MAX_CALL`, and the number of lists one reply is searched for by
`MAX_LISTS`, so a hostile reply costs time linear in its length. None raises.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any

from agent import untrusted
from agent.parsing.native import Item, Prose, Schemas

MAX_CALL = 1_000_000  # characters of one call's arguments; a longer one is refused
MAX_LISTS = 16  # candidate `[name(` lists one reply is searched for; the rest is prose

_JSON_NAMES = {"true": True, "false": False, "null": None}
_CALL_NAME = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*\(")
_HEAD_SO_FAR = re.compile(r"\s*(?:[A-Za-z_][\w.\-]*\s*)?")
_KEY = re.compile(r"\s*([A-Za-z_][\w\-]*)\s*=(?!=)")
_CUT = "your tool call was cut off before its closing bracket; it was not run"


def call_head(text: str) -> bool | None:
    """Whether `text` (what follows a `[`) starts a call `name(`: True, False, or None
    while it is whitespace and a name so far (more text decides)."""
    if _CALL_NAME.match(text):
        return True
    return None if _HEAD_SO_FAR.fullmatch(text) else False


class _JsonNames(ast.NodeTransformer):
    """`true`/`false`/`null` as the constants they spell; every other name stays a name,
    which `literal_eval` refuses."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in _JSON_NAMES:
            return ast.copy_location(ast.Constant(_JSON_NAMES[node.id]), node)
        return node


def literal(source: str) -> Any:
    """One Python (or JSON-spelled) literal; ValueError, SyntaxError, … for anything
    else. Never evaluates: `literal_eval` accepts constants and containers only."""
    untrusted.check_depth(source)
    tree = ast.parse(source.strip(), mode="eval")
    return untrusted.clean(ast.literal_eval(_JsonNames().visit(tree.body)))


def _structure(text: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """(index, character, depth after it) for every character of `text` from `start`
    that stands outside a quoted string: one scanner for splitting Python-like calls."""
    depth, quote, j = 0, "", start
    while j < len(text):
        c = text[j]
        if quote:
            if c == "\\":
                j += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        else:
            depth += (c in "([{") - (c in ")]}")
            yield j, c, depth
        j += 1


def _top_level(text: str, sep: str) -> list[str]:
    """`text` split at `sep` where it stands outside strings and brackets."""
    parts, start = [], 0
    for j, c, depth in _structure(text):
        if c == sep and depth == 0:
            parts.append(text[start:j])
            start = j + 1
    parts.append(text[start:])
    return parts


def keywords(text: str) -> dict[str, Any] | None:
    """`a=1, b="x"` -> {"a": 1, "b": "x"}: keys read by hand (so `as=` or `from=` work),
    values as Python (or JSON) literals; None for anything else."""
    if len(text) > MAX_CALL:
        return None
    out: dict[str, Any] = {}
    for part in _top_level(text, ","):
        if not part.strip():
            continue
        m = _KEY.match(part)
        if m is None:
            return None
        try:
            out[m.group(1)] = literal(part[m.end() :])
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
            return None
    return out


class _Cut(Exception):
    """A call's brackets never closed: the text ended inside it."""


def _calls_from(text: str, i: int) -> tuple[list[tuple[str, str]], int]:
    """The calls `name(…)` from `i` on, separated by commas or whitespace, and the index
    after the last; `_Cut` when one never closes."""
    out: list[tuple[str, str]] = []
    while True:
        m = _CALL_NAME.match(text, i)
        if m is None:
            return out, i
        start = m.end() - 1
        end = next((j for j, c, depth in _structure(text, start) if c in ")]}" and not depth), -1)
        if end < 0:
            raise _Cut
        out.append((m.group(1), text[start + 1 : end]))
        i = end + 1
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1


def _list_at(text: str, at: int) -> tuple[list[tuple[str, str]], int] | None:
    """The calls of the list `[f(…), g(…)]` opening at `at` and the index after its `]`;
    None where no such list stands there; `_Cut` where it never closes."""
    calls, i = _calls_from(text, at + 1)
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    if i >= len(text) and calls:
        raise _Cut
    return (calls, i + 1) if calls and text.startswith("]", i) else None


def _read(calls: list[tuple[str, str]]) -> list[Item]:
    items: list[Item] = []
    for name, source in calls:
        args = keywords(source)
        items.append(
            (name, args)
            if args is not None
            else f"your call to {name} must be name(arg=value, …) with literal values"
        )
    return items


def _looks_called(calls: list[tuple[str, str]]) -> bool:
    """A list of calls with keyword arguments (or none): what a model writes to call
    tools, where `[len(x)]` in prose is not."""
    return any(not src.strip() or _KEY.match(src) for _, src in calls)


def pythonic(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """A body that is all calls: `[f(a=1), g(b="x")]`, brackets optional (inside LFM2's
    tags or Llama 4's `<|python_start|>`)."""
    text = body.strip()
    if not text.startswith("["):
        text = f"[{text}]"
    try:
        found = _list_at(text, 0)
    except _Cut:
        found = None
    if found is None or text[found[1] :].strip():
        if not closed:
            return [_CUT]
        return ["your tool call must be a list of calls: [name(arg=value), …]"]
    return _read(found[0])


def pythonic_reply(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """From a `[name(` in the reply to its end (Llama 3.2 / 4 with vLLM's pythonic
    templates): each list of calls in it, and the text around them as prose, so prose
    before or after a list, or a `[link(…)]` that is no call, stays the model's words."""
    items: list[Item] = []
    done = 0  # body[:done] is accounted for
    at = 0 if body.startswith("[") else -1
    for _ in range(MAX_LISTS):
        if at < 0:
            break
        try:
            found = _list_at(body, at)
        except _Cut:
            if body[done:at]:
                items.append(Prose(body[done:at]))
            return [*items, _CUT]
        if found is not None and _looks_called(found[0]):
            if body[done:at]:
                items.append(Prose(body[done:at]))
            items += _read(found[0])
            done = found[1]
        at = _next_list(body, max(at + 1, done))
    if body[done:]:
        items.append(Prose(body[done:]))
    return items


def _next_list(text: str, start: int) -> int:
    """Where the next `[` that opens a call stands, or -1."""
    at = text.find("[", start)
    while at >= 0 and not _CALL_NAME.match(text, at + 1):
        at = text.find("[", at + 1)
    return at


def python_lines(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """Olmo 3, inside `<function_calls>`: one `name(arg=value, …)` per line (a list
    `[…]` of them, as Llama writes, is read too)."""
    text = body.strip()
    if text.startswith("["):
        return pythonic(text, closed)
    try:
        calls, end = _calls_from(text, 0)
    except _Cut:
        return [_CUT]
    items = _read(calls)
    if text[end:].strip():
        items.append("your tool call must be one name(arg=value, …) per line")
    return items or ["your <function_calls> block has no call in it"]
