"""Recovering tool calls written without the envelope, conservatively.

Small models often drop the `<tool_call>` tags and write the call as a bare JSON object
or a fenced block. Recovering those is worth it only if prose that merely contains JSON
is never mistaken for a call, so the rule is strict: a JSON object with a string `name`
and an explicit `arguments`/`input` object (or a JSON string holding one), or a list
made only of such objects, nothing else, and with a known tool name when the caller
knows the tools.

The stream parser decides *where* a candidate starts and ends (`JsonPrefix` finds the end
of a bare object in one forward pass, and gives up at the first character that cannot
belong to JSON, so an ordinary `{` in prose costs almost nothing); this module decides
*whether* a complete candidate is a call.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from agent import untrusted
from agent.history import ToolCall
from agent.parsing.base import Event, TextChannel

CallSpec = tuple[str, dict[str, Any]]

MORE, ABORT, DONE = "more", "abort", "done"
# Only these spell "arguments" for salvage; the envelope also accepts "parameters".
ARGUMENT_KEYS = ("arguments", "input")


def decode_arguments(value: object) -> dict[str, Any] | None:
    """An arguments object, or one double-encoded as a JSON string (a common model slip)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = untrusted.loads(value)
        except ValueError:
            return None
        if isinstance(decoded, dict):
            return decoded
    return None


def salvage_call(value: object, tool_names: Collection[str] | None = None) -> CallSpec | None:
    """(name, arguments) when `value` is unmistakably a tool call, else None."""
    if not isinstance(value, dict):
        return None
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    key = next((k for k in ARGUMENT_KEYS if k in value), None)
    args = decode_arguments(value[key]) if key is not None else None
    if args is None:
        return None
    if tool_names is not None and name not in tool_names:
        return None
    return name, args


def salvage_calls(value: object, tool_names: Collection[str] | None = None) -> list[CallSpec]:
    """The calls a whole JSON value amounts to: one object, or a list made only of calls
    (a model batching its calls); [] when it is anything else."""
    if isinstance(value, list):
        calls = [salvage_call(v, tool_names) for v in value]
        return [c for c in calls if c is not None] if calls and None not in calls else []
    one = salvage_call(value, tool_names)
    return [] if one is None else [one]


def loads_or_none(text: str) -> object:
    """JSON value of `text`, or None; raw newlines inside strings are tolerated."""
    try:
        return untrusted.loads(text, strict=False)
    except ValueError:
        return None


def salvage_message(name: str) -> str:
    return (
        f"tool call '{name}' was written without <tool_call> tags and was recovered; "
        'always write calls as <tool_call>{"name": ..., "arguments": {...}}</tool_call>'
    )


class ProseSink:
    """Prose on its way to the text channel, held while a salvaged call is pending.

    Salvage is decided only at the end (an envelope call anywhere wins), but a salvaged
    call must leave the text like any envelope. So from the first candidate that is a
    call, prose is queued instead of streamed; `release` replays the queue with the
    candidates either removed (salvaged) or put back as the prose they then were.
    """

    def __init__(self, channel: TextChannel, out: list[Event]) -> None:
        self._channel = channel
        self._out = out
        self._held: list[tuple[str, str, list[CallSpec]]] | None = None
        self._salvaged = 0

    @property
    def holding(self) -> bool:
        return self._held is not None

    def push(self, s: str) -> None:
        if self._held is None:
            self._channel.push(s)
        else:
            self._held.append(("text", s, []))

    def removed(self, skip_ws: bool = True) -> None:
        if self._held is None:
            self._channel.removed(skip_ws)
        else:
            self._held.append(("removed" if skip_ws else "removed-keep-ws", "", []))

    def hold(self, raw: str, calls: list[CallSpec]) -> None:
        if self._held is None:
            self._held = []
        self._held.append(("candidate", raw, calls))

    def release(self, recover: bool) -> None:
        held, self._held = self._held, None
        for kind, raw, calls in held or ():
            if kind == "text":
                self._channel.push(raw)
            elif kind != "candidate":
                self._channel.removed(kind == "removed")
            elif not recover or not calls:
                self._channel.push(raw)
            else:
                for name, args in calls:
                    self._salvaged += 1
                    tool_call = ToolCall(f"salvage-{self._salvaged}", name, args, salvaged=True)
                    self._out.append(Event("tool_call", call=tool_call))
                    self._out.append(Event("diagnostic", salvage_message(name)))
                self._channel.removed()


# Expectations between JSON tokens.
_VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE, _COLON, _AFTER = range(6)
_STRING_STOP = re.compile(r'["\\\x00-\x1f]')
_SCALAR_CHARS = frozenset("0123456789+-.eEtrufalsn")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


class JsonPrefix:
    """Incremental check that the text so far can still begin a JSON object or array.

    `scan(buf, i, final)` consumes from `i` and returns (position, status): MORE (all of
    it fits, send more), DONE (the value closed just before `position`) or ABORT (the
    character at `position` cannot continue it). Raw control characters inside strings
    abort, as strict JSON requires; that also bounds how far a stray quote in prose can
    drag a candidate (to the end of its line).
    """

    def __init__(self) -> None:
        self._stack: list[str] = []
        self._expect = _VALUE
        self._in_string = False
        self._is_key = False
        self._escaped = False
        self._token: str | None = None

    def scan(self, buf: str, i: int, final: bool) -> tuple[int, str]:
        n = len(buf)
        while i < n:
            if self._in_string:
                if self._escaped:
                    if buf[i] < " ":
                        return i, ABORT
                    self._escaped = False
                    i += 1
                    continue
                m = _STRING_STOP.search(buf, i)
                if m is None:
                    return n, MORE if not final else ABORT
                i = m.start()
                c = buf[i]
                if c == '"':
                    self._in_string = False
                    self._expect = _COLON if self._is_key else _AFTER
                elif c == "\\":
                    self._escaped = True
                else:
                    return i, ABORT
                i += 1
                continue
            c = buf[i]
            if self._token is not None:
                if c in _SCALAR_CHARS:
                    self._token += c
                    i += 1
                    continue
                if not _SCALAR.fullmatch(self._token):
                    return i, ABORT
                self._token = None
                self._expect = _AFTER
            if c in " \t\r\n":
                i += 1
                continue
            e = self._expect
            if c == '"' and e in (_VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE):
                self._in_string = True
                self._is_key = e in (_KEY, _KEY_OR_CLOSE)
            elif c in "{[" and e in (_VALUE, _VALUE_OR_CLOSE):
                self._stack.append(c)
                self._expect = _KEY_OR_CLOSE if c == "{" else _VALUE_OR_CLOSE
            elif c in "-0123456789tfn" and e in (_VALUE, _VALUE_OR_CLOSE):
                self._token = c
            elif c == ":" and e == _COLON:
                self._expect = _VALUE
            elif c == "," and e == _AFTER and self._stack:
                self._expect = _KEY if self._stack[-1] == "{" else _VALUE
            elif c in "}]" and self._closes(c, e):
                self._stack.pop()
                self._expect = _AFTER
                if not self._stack:
                    return i + 1, DONE
            else:
                return i, ABORT
            i += 1
        return n, ABORT if final else MORE

    def _closes(self, c: str, e: int) -> bool:
        if not self._stack or self._stack[-1] != ("{" if c == "}" else "["):
            return False
        return e == _AFTER or e == (_KEY_OR_CLOSE if c == "}" else _VALUE_OR_CLOSE)
