"""The canonical envelope: where a `<tool_call>` body ends, and what it says.

Two body forms are understood: JSON (`{"name": ..., "arguments": ...}`, also several
objects or a list of them) and Qwen3-Coder XML (`<function=NAME><parameter=K>V
</parameter></function>`). Finding the end is the delicate part: a file the model is
writing may well contain `</tool_call>`, so the scanner ends a JSON body only at a
closing tag outside JSON strings, and an XML body only outside parameter values
(vllm #45167 is this bug). Decoding never raises: a malformed body becomes a sentence
the runtime can send back to the model.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agent import untrusted
from agent.markup import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, partial_suffix
from agent.parsing.salvage import CallSpec, decode_arguments, loads_or_none

# A decoded body yields calls and diagnostics, in the order the model wrote them.
Item = CallSpec | str

PROBE, JSON, XML, PLAIN = "probe", "json", "xml", "plain"
# How a body scan ended: MORE (need input), CLOSE (</tool_call>), SPLIT (a new <tool_call>
# outside any string: the previous call simply lacked its closing tag), REOPEN (a plain
# body met a new <tool_call>: the first tag was prose that mentioned it).
MORE, CLOSE, SPLIT, REOPEN = "more", "close", "split", "reopen"

FUNCTION_OPEN = "<function="
FUNCTION_CLOSE = "</function>"
PARAM_OPEN = "<parameter="
PARAM_CLOSE = "</parameter>"

_JSON_OUTSIDE = re.compile(r'["<]')
_JSON_INSIDE = re.compile(r'["\\]')
_WS = re.compile(r"[ \t\r\n]*")


def _held_prefix(buf: str, i: int, *markers: str) -> bool:
    """True when buf[i:] is cut short inside one of `markers` (wait for more input):
    all of it is the partial marker a stream must hold back."""
    left = len(buf) - i
    return left < max(map(len, markers)) and partial_suffix(buf[i:], markers) == left


class EnvelopeScanner:
    """One `<tool_call>` body, scanned once, across however many chunks it arrives in."""

    def __init__(self) -> None:
        self.mode = PROBE
        self._parts: list[str] = []
        self._in_string = False
        self._escaped = False
        self._in_param = False

    def body(self) -> str:
        return "".join(self._parts)

    def fast(self, chunk: str) -> bool:
        """Take `chunk` whole if it cannot end or change anything (most of a long call)."""
        if self.mode == JSON:
            if self._escaped or '"' in chunk or ("\\" if self._in_string else "<") in chunk:
                return False
        elif self.mode == PROBE or "<" in chunk:
            return False
        self._parts.append(chunk)
        return True

    def scan(self, buf: str, i: int, final: bool) -> tuple[int, str]:
        """Consume from `i`; return (position, outcome). On CLOSE the position is past the
        closing tag; on SPLIT/REOPEN it is at the new `<tool_call>`, left for the caller."""
        start = i
        if self.mode == PROBE:
            i = _WS.match(buf, i).end()  # type: ignore[union-attr]
            if i == len(buf):
                self._parts.append(buf[start:i])
                return i, MORE
            c = buf[i]
            if c in "{[":
                self.mode = JSON
            elif buf.startswith(FUNCTION_OPEN, i):
                self.mode = XML
            elif not final and _held_prefix(buf, i, FUNCTION_OPEN):
                self._parts.append(buf[start:i])
                return i, MORE
            else:
                self.mode = PLAIN
        if self.mode == JSON:
            j, outcome = self._scan_json(buf, i, final)
        elif self.mode == XML:
            j, outcome = self._scan_xml(buf, i, final)
        else:
            j, outcome = self._scan_plain(buf, i, final)
        self._parts.append(buf[start:j])
        return j + len(TOOL_CALL_CLOSE) if outcome == CLOSE else j, outcome

    def _at_tag(self, buf: str, i: int, final: bool, split: str) -> str | None:
        """At a "<" outside strings/values: CLOSE, `split` (for a new opener), MORE, or None."""
        if buf.startswith(TOOL_CALL_CLOSE, i):
            return CLOSE
        if buf.startswith(TOOL_CALL_OPEN, i):
            return split
        if not final and _held_prefix(buf, i, TOOL_CALL_CLOSE, TOOL_CALL_OPEN):
            return MORE
        return None

    def _scan_json(self, buf: str, i: int, final: bool) -> tuple[int, str]:
        n = len(buf)
        while i < n:
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                    i += 1
                    continue
                m = _JSON_INSIDE.search(buf, i)
                if m is None:
                    return n, MORE
                i = m.start()
                if buf[i] == '"':
                    self._in_string = False
                else:
                    self._escaped = True
                i += 1
                continue
            m = _JSON_OUTSIDE.search(buf, i)
            if m is None:
                return n, MORE
            i = m.start()
            if buf[i] == '"':
                self._in_string = True
            else:
                outcome = self._at_tag(buf, i, final, SPLIT)
                if outcome is not None:
                    return i, outcome
            i += 1
        return n, MORE

    def _scan_xml(self, buf: str, i: int, final: bool) -> tuple[int, str]:
        n = len(buf)
        while i < n:
            if self._in_param:
                j = buf.find(PARAM_CLOSE, i)
                if j < 0:
                    if final:
                        return n, MORE
                    keep = next(
                        (
                            k
                            for k in range(len(PARAM_CLOSE) - 1, 0, -1)
                            if n - k >= i and buf.endswith(PARAM_CLOSE[:k])
                        ),
                        0,
                    )
                    return n - keep, MORE
                self._in_param = False
                i = j + len(PARAM_CLOSE)
                continue
            j = buf.find("<", i)
            if j < 0:
                return n, MORE
            if buf.startswith(PARAM_OPEN, j):
                self._in_param = True
                i = j + len(PARAM_OPEN)
                continue
            outcome = self._at_tag(buf, j, final, SPLIT)
            if outcome is None and not final and _held_prefix(buf, j, PARAM_OPEN):
                outcome = MORE
            if outcome is not None:
                return j, outcome
            i = j + 1
        return n, MORE

    def _scan_plain(self, buf: str, i: int, final: bool) -> tuple[int, str]:
        n = len(buf)
        while i < n:
            j = buf.find("<", i)
            if j < 0:
                return n, MORE
            outcome = self._at_tag(buf, j, final, REOPEN)
            if outcome is not None:
                return j, outcome
            i = j + 1
        return n, MORE


def _why(exc: json.JSONDecodeError) -> str:
    return f"{exc.msg} (line {exc.lineno} column {exc.colno})"


def _unfence(body: str) -> str:
    """A body wrapped in a Markdown fence inside the tags: use what the fence holds."""
    text = body.strip()
    if not text.startswith(("```", "~~~")):
        return body
    first_nl = text.find("\n")
    if first_nl < 0:
        return ""
    inner = text[first_nl + 1 :].rstrip()
    if inner.endswith(("```", "~~~")):
        inner = inner[:-3]
    return inner


def json_values(text: str) -> tuple[list[Any], str]:
    """Every JSON value in `text`, one after another (separated by whitespace, commas or
    semicolons), and the text left after the last one ("" when all of it was JSON)."""
    decoder = json.JSONDecoder(strict=False)
    values: list[Any] = []
    i, n = 0, len(text)
    try:
        untrusted.check_depth(text)
    except untrusted.TooDeep:
        return [], text
    while i < n:
        i = _WS.match(text, i).end()  # type: ignore[union-attr]
        if i < n and values and text[i] in ",;":
            i += 1
            continue
        if i >= n:
            break
        try:
            value, i = untrusted.raw_decode(decoder, text, i)
        except ValueError:
            return values, text[i:]
        values.append(value)
    return values, ""


def _decode_many(text: str) -> list[Any] | None:
    """Several JSON values one after another (some models batch calls in one envelope)."""
    values, rest = json_values(text)
    return values if not rest and len(values) > 1 else None


def call_fields(value: object) -> Item:
    """(name, arguments) of one envelope object, or why it is not a call."""
    if isinstance(value, dict) and "name" not in value and isinstance(value.get("function"), dict):
        value = value["function"]  # OpenAI style {"type": "function", "function": {...}}
    if not isinstance(value, dict):
        return 'your tool call must be a JSON object: {"name": "<tool>", "arguments": {...}}'
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        return 'your tool call has no string "name": use {"name": "<tool>", "arguments": {...}}'
    key = next((k for k in ("arguments", "input", "parameters") if k in value), None)
    if key is None:
        return f"tool call '{name}' has no \"arguments\" object"
    args = decode_arguments(value[key])
    if args is None:
        return f"tool call '{name}' has \"{key}\" that are not a JSON object"
    return name, args


def decode_json(body: str, closed: bool) -> list[Item]:
    text = _unfence(body)
    if not text.strip():
        return [
            'your tool call was empty: write {"name": "<tool>", "arguments": {...}} '
            "between <tool_call> and </tool_call>"
        ]
    try:
        value = untrusted.loads(text, strict=False)
    except untrusted.TooDeep as exc:
        return [f"your tool call is {exc}; it was not run"]
    except json.JSONDecodeError as exc:
        many = _decode_many(text)
        if many is None:
            if closed:
                return [f"your tool call was not valid JSON: {_why(exc)}"]
            return [
                "your tool call was cut off before </tool_call> and its JSON is incomplete "
                f"({_why(exc)}); it was not run"
            ]
        value = many
    values = value if isinstance(value, list) else [value]
    if not values:
        return ['your tool call held an empty list: write {"name": ..., "arguments": {...}}']
    return [call_fields(v) for v in values]


_FUNCTION = re.compile(r"<function=([^>\n]*)>")
_PARAM = re.compile(
    r"<parameter=([^>\n]*)>(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|\Z)", re.S
)


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def _param_value(raw: str) -> Any:
    """Qwen3-Coder puts values on their own lines; a value that is JSON is decoded."""
    if raw.startswith("\n"):
        raw = raw[1:]
    if raw.endswith("\n"):
        raw = raw[:-1]
    try:
        return untrusted.loads(raw, parse_constant=_reject_constant)  # "NaN" stays a string
    except ValueError:
        return raw


def decode_xml(body: str, closed: bool) -> list[Item]:
    m = _FUNCTION.search(body)
    name = m.group(1).strip() if m else ""
    if m is None or not name:
        return ["your tool call has no <function=NAME> tag: write <function=NAME> first"]
    if not closed and FUNCTION_CLOSE not in body:
        return [f"your tool call '{name}' was cut off before </function>; it was not run"]
    args: dict[str, Any] = {}
    for p in _PARAM.finditer(body, m.end()):
        args[p.group(1).strip()] = _param_value(p.group(2))
    return [(name, args)]


def decode(mode: str, body: str, closed: bool) -> list[Item]:
    """Calls and diagnostics of a finished body; `closed` is False for an unclosed one."""
    if mode == XML:
        return decode_xml(body, closed)
    return decode_json(body, closed)


def plain_calls(body: str) -> list[CallSpec] | None:
    """An unclosed body that is neither JSON nor XML at first sight (usually a fence
    inside the tags): its calls when it decodes cleanly, else None (it was prose)."""
    value = loads_or_none(_unfence(body))
    if value is None:
        return None
    items = [call_fields(v) for v in (value if isinstance(value, list) else [value])]
    calls = [it for it in items if not isinstance(it, str)]
    return calls if calls and len(calls) == len(items) else None
