"""Call bodies whose arguments are JSON: one reader per shape, each total on any text.

Every decoder takes a region's body, whether its region closed, and the tools' schemas,
and returns items in order: (name, arguments) calls, diagnostics (a sentence the runtime
sends back to the model) or `Prose` (the region was not a call after all). None raises.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agent import untrusted
from agent.parsing.envelope import call_fields, decode_json, json_values
from agent.parsing.native import Item, Prose, Schemas
from agent.parsing.salvage import decode_arguments

_NAME = re.compile(r"[A-Za-z_][\w.\-:/]*")


def why(exc: json.JSONDecodeError) -> str:
    return f"{exc.msg} (line {exc.lineno} column {exc.colno})"


def _flatten(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        out.extend(v if isinstance(v, list) else [v])
    return out


def unfence(text: str) -> str:
    """The content of a ```json fence, if `text` is one; else `text`."""
    s = text.strip()
    if not s.startswith(("```", "~~~")):
        return text
    nl = s.find("\n")
    inner = s[nl + 1 :] if nl >= 0 else ""
    inner = inner.rstrip()
    return inner[:-3] if inner.endswith(("```", "~~~")) else inner


def json_calls(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """One JSON object or a list of them, `{"name", "arguments"|"parameters"|"input"}`
    (also OpenAI's `{"function": {...}}`), as Hermes, Nemotron, Apriel, Granite, …"""
    return decode_json(unfence(body), closed)


def json_lines(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """Several objects one after another (MiniMax-M1 writes one per line)."""
    values, rest = json_values(unfence(body))
    if rest.strip() or not values:
        return decode_json(unfence(body), closed)
    return [call_fields(v) for v in _flatten(values)]


def keyed_calls(name_key: str, args_key: str) -> Any:
    """A list of objects naming the tool under `name_key` (Command R's "tool_name")."""

    def decode(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
        values, rest = json_values(unfence(body))
        if not values:
            return decode_json(unfence(body), closed)
        items: list[Item] = []
        for v in _flatten(values):
            if isinstance(v, dict) and name_key in v:
                v = {"name": v.get(name_key), "arguments": v.get(args_key, {})}
            items.append(call_fields(v))
        return items + ([Prose(rest)] if rest.strip() else [])

    return decode


def name_keyed(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """Apertus: `[{"NAME": {arguments}}, …]`."""
    values, _ = json_values(body)
    if not values:
        return decode_json(body, closed)
    items: list[Item] = []
    for v in _flatten(values):
        if isinstance(v, dict) and len(v) == 1:
            ((name, args),) = v.items()
            decoded = decode_arguments(args)
            if isinstance(name, str) and decoded is not None:
                items.append((name, decoded))
                continue
        items.append(call_fields(v))
    return items


PYTHON_TAG = "<|python_tag|>"  # Llama 3.1: what follows is code for the `python` tool


def bare_json(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """A reply that may be a call written as bare JSON (Llama 3.x, xLAM): calls only when
    all of it reads as calls, else it was prose after all."""
    text = body.removeprefix(PYTHON_TAG)
    values, rest = json_values(unfence(text))
    values = _flatten(values)
    if not values or rest.strip():
        return [Prose(body)] if not body.startswith(PYTHON_TAG) else decode_json(text, closed)
    items = [call_fields(v) for v in values]
    if any(isinstance(it, str) for it in items) and not body.startswith(PYTHON_TAG):
        return [Prose(body)]
    return items


_CALL_KEYS = ('"name"', '"type"', '"function"')  # how a bare JSON call object opens
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def json_head(text: str) -> bool | None:
    """Whether `text` (what follows a `{` in prose) opens a call object: its first key
    is "name" (or OpenAI's "type"/"function"). None while too little is written."""
    s = text.lstrip()
    for key in _CALL_KEYS:
        if s.startswith(key):
            rest = s[len(key) :].lstrip()
            return rest.startswith(":") if rest else None
    return None if not s or any(key.startswith(s) for key in _CALL_KEYS) else False


def _unclosed(text: str) -> bool:
    """The JSON that starts `text` is cut off: a string or a bracket never closes (one
    linear pass over strings and brackets)."""
    depth = 0
    for m in _JSON_TOKENS.finditer(text):
        token = m.group()
        if token[0] == '"':
            if not _JSON_STRING.fullmatch(token):  # it ran to the end unterminated
                return depth > 0
            continue
        depth += 1 if token in "[{" else -1
        if depth <= 0:
            return False
    return depth > 0


def json_reply(body: str, closed: bool, schemas: Schemas | None = None) -> list[Item]:
    """Llama 3.x writes a bare `{"name": …, "parameters": …}` with prose before or after
    it in one reply (several calls joined by `;`): from the `{` to the end of the reply,
    the calls, then the rest as prose. JSON that is no call stays prose; a call the
    reply cut off is said, never run."""
    if not body.startswith("{"):
        return bare_json(body, closed, schemas)
    values, rest = json_values(body)
    values = _flatten(values)
    if not values:
        if _unclosed(body) and json_head(body[1:]):
            return ["your tool call was cut off before its JSON ended; it was not run"]
        return [Prose(body)]
    items = [call_fields(v) for v in values]
    if any(isinstance(it, str) for it in items):
        return [Prose(body)]
    return items + ([Prose(rest)] if rest else [])


def python_tag(body: str, closed: bool, schemas: Schemas | None = None) -> list[Item]:
    """Functionary v3.1 / Llama 3.1: code after <|python_tag|> is a call to `python`."""
    code = body.removeprefix(PYTHON_TAG)
    if code.lstrip().startswith("{"):  # a JSON call, perhaps followed by <|eom_id|> or prose
        items = json_reply(code.lstrip(), closed, schemas)
        return decode_json(code, closed) if all(isinstance(i, Prose) for i in items) else items
    return [("python", {"code": code})]


def _cut(name: str) -> str:
    return f"your call to {name} was cut off before its arguments ended; it was not run"


def _args(text: str, name: str, closed: bool) -> Item:
    """The JSON arguments of a call whose name was written outside them."""
    text = unfence(text).strip()
    if not text:  # nothing yet: only a closed call may have left its arguments out
        return (name, {}) if closed else _cut(name)
    try:
        value = untrusted.loads(text, strict=False)
    except untrusted.TooDeep as exc:
        return f"the arguments of your call to {name} are {exc}"
    except json.JSONDecodeError as exc:
        if not closed:
            return _cut(name)
        return f"the arguments of your call to {name} are not valid JSON: {why(exc)}"
    args = decode_arguments(value)
    if args is None:
        return f"the arguments of your call to {name} are not a JSON object"
    return (name, args)


def split_calls(body: str, begin: str, end: str | None, read: Any, closed: bool) -> list[Item]:
    """Calls marked `begin … end` inside a section; `read(text, closed)` reads one."""
    items: list[Item] = []
    parts = body.split(begin)
    for k, part in enumerate(parts[1:], start=1):
        last = k == len(parts) - 1
        if end is not None and end in part:
            items.append(read(part[: part.index(end)], True))
        else:
            items.append(read(part, closed and (end is None or not last)))
    if len(parts) == 1 and parts[0].strip():
        items.append(read(parts[0], closed))
    return items


def deepseek_v3(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """R1 / V3: `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME` then the arguments in a
    ```json fence, then `<｜tool▁call▁end｜>`."""

    def read(text: str, ok: bool) -> Item:
        _, sep, rest = text.partition("<｜tool▁sep｜>")
        if not sep:
            return "your tool call has no <｜tool▁sep｜> between its type and its name"
        name, _, args = rest.partition("\n")
        return _args(args, name.strip(), ok)

    return split_calls(body, "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", read, closed)


def deepseek_v31(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """V3.1: `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>`."""

    def read(text: str, ok: bool) -> Item:
        name, sep, args = text.partition("<｜tool▁sep｜>")
        if not sep:
            return "your tool call has no <｜tool▁sep｜> between its name and its arguments"
        name = name.strip().removeprefix("function").strip() or name.strip()
        return _args(args, name, ok)

    return split_calls(body, "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", read, closed)


def kimi_k2(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """`<|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}<|tool_call_end|>`."""

    def read(text: str, ok: bool) -> Item:
        head, sep, args = text.partition("<|tool_call_argument_begin|>")
        if not sep:
            return "your tool call has no <|tool_call_argument_begin|>"
        name = head.strip().removeprefix("functions.")
        name = name.rsplit(":", 1)[0] if ":" in name else name
        return _args(args, name, ok)

    return split_calls(body, "<|tool_call_begin|>", "<|tool_call_end|>", read, closed)


def solar_open(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """`<|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{…}<|tool_call:end|>`."""

    def read(text: str, ok: bool) -> Item:
        _, _, rest = text.partition("<|tool_call:name|>")
        name, sep, args = rest.partition("<|tool_call:args|>")
        if not sep:
            return "your tool call has no <|tool_call:name|>…<|tool_call:args|>"
        return _args(args, name.strip(), ok)

    return split_calls(body, "<|tool_call:begin|>", "<|tool_call:end|>", read, closed)


def mistral_v11(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """`NAME[ARGS]{…}` after each [TOOL_CALLS] (Mistral Small 3.2 puts `[CALL_ID]id`
    before [ARGS]); the body runs to the end of the reply."""
    items: list[Item] = []
    for part in body.split("[TOOL_CALLS]"):
        if not part.strip():
            continue
        head, sep, args = part.partition("[ARGS]")
        if not sep:  # the older JSON-list form after the same marker
            items += keyed_list(part, closed)
            continue
        name = head.split("[CALL_ID]", 1)[0].strip()
        values, rest = json_values(args)
        if not values:
            items.append(_args(args, name, closed))
            continue
        decoded = decode_arguments(values[0])
        items.append(
            (name, decoded)
            if decoded is not None
            else f"the arguments of your call to {name} are not a JSON object"
        )
        tail = args[len(args) - len(rest) :] if rest else ""
        if tail.strip():
            items.append(Prose(tail))
    return items


def keyed_list(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """A JSON list of calls, and any prose after it (Mistral's JSON form, firefunction)."""
    values, rest = json_values(unfence(body))
    if not values:
        return decode_json(body, closed)
    items: list[Item] = [call_fields(v) for v in _flatten(values)]
    return items + ([Prose(rest)] if rest.strip() else [])


def functionary_v31(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """`<function=NAME>{…}</function>` (the opener is kept in the body)."""
    m = re.match(r"<function=([^>]*)>", body)
    if m is None:
        return ["your tool call has no <function=NAME> tag"]
    inner = body[m.end() :].removesuffix("</function>")
    return [_args(inner, m.group(1).strip(), closed)]


def functionary_v32(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """The whole reply: segments `RECIPIENT\\nBODY` separated by `>>>`; the recipient
    `all` is text to the user, any other names a tool and its body is JSON."""
    items: list[Item] = []
    for k, part in enumerate(body.split(">>>")):
        if not part.strip() and k == 0:
            continue
        recipient, nl, rest = part.partition("\n")
        recipient = recipient.strip()
        if not nl and k == 0 and not _NAME.fullmatch(recipient):
            items.append(Prose(part))
        elif recipient == "all":
            items.append(Prose(rest))
        elif _NAME.fullmatch(recipient):
            items.append(_args(rest, recipient, closed))
        else:
            items.append(Prose(part))
    return items


_GIGACHAT_HEADERS = re.compile(r"<\|message_sep\|>|function call<\|role_sep\|>|<\|function_call\|>")


def gigachat3(body: str, closed: bool, _schemas: Schemas | None = None) -> list[Item]:
    """`{"name", "arguments"}` objects after GigaChat's function-call headers."""
    text = _GIGACHAT_HEADERS.sub(" ", body)
    values, rest = json_values(text)
    if not values or rest.strip():
        return decode_json(text.strip(), closed)
    return [call_fields(v) for v in _flatten(values)]
