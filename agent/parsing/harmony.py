"""The Harmony parser (gpt-oss): channels and recipients -> reasoning, text, tool calls.

gpt-oss writes `<|start|>ROLE<|channel|>CHANNEL[ to=functions.NAME][ <|constrain|>json]
<|message|>BODY` closed by `<|end|>`, `<|call|>` or `<|return|>`. Read as plain text, the
markers and calls leak into the answer; here, in one forward pass, `analysis` becomes
reasoning, `final` and recipient-less `commentary` (a preamble) become text, and a
message with a recipient becomes one tool call, handed on as data.

Decisions the format does not make for us:
- A call is closed by `<|call|>` (or `<|end|>`, which separates parallel calls in some
  renderings). Generation usually stops on `<|call|>` itself, so a body the text leaves
  open with complete JSON is a call too, reported by `finish()` (the runtime runs such a
  call only when no token limit cut the reply); closed by anything else, or cut off
  inside its JSON, it is a diagnostic.
- A call body is scanned JSON-string-aware: `{"s": "<|call|>"}` is an argument.
- The prompt ends with `<|start|>assistant`, so a completion may start inside a header
  (" to=functions.x<|channel|>…") or inside a body. Text before the first marker is a
  header only if a header marker follows; it is held only while it still looks like
  one (short, one line, header characters), so ordinary prose streams at once.
- A message in another role (`<|start|>functions.x to=assistant`) means the model ran
  past its turn: it and everything after it are dropped.
- Text and reasoning are trimmed per message and joined by a blank line / a newline.

Held between chunks: a possible partial marker (under 13 characters), trailing
whitespace, the undecided leading text, the header being read. O(n) per completion.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent.history import ToolCall
from agent.parsing.base import (
    Blocks,
    Event,
    ParseResult,
    coalesce,
    result_from_events,
)
from agent.parsing.harmony_header import (
    CALL,
    CHANNEL,
    CONSTRAIN,
    END,
    FUNCTIONS,
    MARKERS,
    MESSAGE,
    RETURN,
    START,
    Header,
    decode_arguments,
    parse_header,
)

_LONGEST = max(map(len, MARKERS))
OUTSIDE, HEADER, TEXT, REASONING, TOOL, IGNORE = range(6)

# Leading text stays a header candidate while it could be the rest of a role header
# (" to=functions.read_file") and no longer; anything else is body text.
_LEAD_CHARS = re.compile(r"[\w .:=/\-]*")
_LEAD_MAX = 96
# A "header" longer than this, or spanning lines, is prose after a stray marker.
_HEADER_MAX = 256
_OUT_OF_STRING = re.compile(r'["<]')
_IN_STRING = re.compile(r'["\\]')


class HarmonyStreamParser:
    """`feed(chunk)` -> the events the text so far decides; `finish()` -> the rest.

    Same interface and event kinds as `GenericStreamParser`. Tool calls come only from
    `feed()` (a closed `<|call|>`); `finish()` yields text, reasoning and diagnostics.
    `tool_names` is accepted for that parity and not used: a harmony call names its
    recipient explicitly, so an unknown name is the runtime's "no such tool" answer to
    the model, not a parsing question.
    """

    # The tags a reply could be cut inside (an interrupted stream, a token limit): what a
    # caller trims, half-written, from the end of such a reply before keeping its prose.
    OPENERS: tuple[str, ...] = (START, CHANNEL, MESSAGE, CONSTRAIN, CALL, END)

    def __init__(self, tool_names: Iterable[str] | None = None) -> None:
        self._out: list[Event] = []
        self._text = Blocks(self._out, "text", "\n\n")
        self._reasoning = Blocks(self._out, "reasoning", "\n")
        self._state, self._final, self._calls = OUTSIDE, False, 0
        self._held = ""  # a possible partial marker
        self._lead: list[str] = []  # OUTSIDE: text that may still be a header
        self._head: list[str] = []  # HEADER: its text and channel/constrain markers
        self._lead_len = self._head_len = 0
        self._after_start = False
        self._header = Header()
        self._body: list[str] = []  # TOOL: the raw arguments
        self._in_string = self._escaped = False

    # -- public -------------------------------------------------------------------------

    def feed(self, chunk: str) -> list[Event]:
        if self._final or not chunk:
            return []
        buf, self._held = self._held + chunk, ""
        self._scan(buf)
        return self._drain()

    def finish(self) -> list[Event]:
        if self._final:
            return []
        self._final = True
        buf, self._held = self._held, ""
        self._scan(buf)  # final: a partial marker is literal text now
        state = self._state
        if state == OUTSIDE:
            self._flush_lead()
        elif state == HEADER:
            self._drop_header()
        elif state in (TEXT, REASONING):
            self._close_block()
        elif state == TOOL:
            self._cut_off_call()
        self._state = IGNORE
        return self._drain()

    # -- scanning -----------------------------------------------------------------------

    def _drain(self) -> list[Event]:
        events, self._out[:] = coalesce(self._out), []
        return events

    def _marker_at(self, buf: str, j: int) -> str | None:
        """The marker at buf[j] (a "<"), "" for a literal "<", None while undecided."""
        if j + 1 < len(buf) and buf[j + 1] != "|":
            return ""
        for m in MARKERS:
            if buf.startswith(m, j):
                return m
        rest = buf[j : j + _LONGEST]
        if not self._final and len(rest) < _LONGEST and any(m.startswith(rest) for m in MARKERS):
            return None
        return ""

    def _scan(self, buf: str) -> None:
        i, n = 0, len(buf)
        while i < n:
            if self._state == TOOL:
                i = self._scan_tool(buf, i)
                if self._state == TOOL and i < n:  # holding a partial marker
                    break
                continue
            j = buf.find("<", i)
            if j < 0:
                self._take(buf[i:])
                i = n
                break
            if j > i:
                self._take(buf[i:j])
            mk = self._marker_at(buf, j)
            if mk is None:
                i = j
                break
            if mk:
                self._on_marker(mk)
                i = j + len(mk)
            else:
                self._take("<")
                i = j + 1
        self._held = buf[i:]

    def _scan_tool(self, buf: str, i: int) -> int:
        """Consume a call body up to its boundary marker, outside JSON strings only."""
        body, n = self._body, len(buf)
        while i < n:
            if self._escaped:
                body.append(buf[i])
                self._escaped = False
                i += 1
            elif self._in_string:
                m = _IN_STRING.search(buf, i)
                if m is None:
                    body.append(buf[i:])
                    return n
                body.append(buf[i : m.end()])
                i = m.end()
                if m.group() == '"':
                    self._in_string = False
                else:
                    self._escaped = True
            else:
                m = _OUT_OF_STRING.search(buf, i)
                if m is None:
                    body.append(buf[i:])
                    return n
                j = m.start()
                body.append(buf[i:j])
                if buf[j] == '"':
                    body.append('"')
                    self._in_string = True
                    i = j + 1
                    continue
                mk = self._marker_at(buf, j)
                if mk is None:
                    return j
                if mk in (CALL, END, RETURN, START, CHANNEL):
                    self._on_marker(mk)
                    return j + len(mk)
                body.append(mk or "<")  # "<|message|>" and the like: the JSON's problem
                i = j + max(len(mk), 1)
        return n

    def _take(self, s: str) -> None:
        """Text that is not a marker, for whatever the current state reads."""
        state = self._state
        if state == TEXT:
            self._text.push(s)
        elif state == REASONING:
            self._reasoning.push(s)
        elif state == OUTSIDE:
            self._take_lead(s)
        elif state == HEADER:
            self._take_head(s)

    # -- states -------------------------------------------------------------------------

    def _on_marker(self, mk: str) -> None:
        state = self._state
        if state == IGNORE:
            return
        if state == OUTSIDE:
            if mk in (CHANNEL, CONSTRAIN, MESSAGE):  # the lead was the rest of a header
                self._head, self._head_len = self._lead, self._lead_len
                self._lead, self._lead_len = [], 0
                self._after_start = False
                self._state = HEADER
                self._on_marker(mk)
                return
            self._flush_lead()
        elif state == HEADER:
            if mk in (CHANNEL, CONSTRAIN):
                self._head.append(mk)
                return
            if mk == MESSAGE:
                self._open_body()
                return
            self._drop_header()
        elif state in (TEXT, REASONING):
            if mk in (MESSAGE, CONSTRAIN):  # stray inside a body: not text, not a boundary
                return
            self._close_block()
        elif state == TOOL:
            self._close_tool(mk)
        self._state = OUTSIDE
        if mk in (START, CHANNEL):  # CHANNEL: a new message with no <|end|><|start|> before
            self._head, self._head_len = ([] if mk == START else [CHANNEL]), 0
            self._after_start = mk == START
            self._state = HEADER

    def _take_lead(self, s: str) -> None:
        if self._lead_len + len(s) <= _LEAD_MAX and _LEAD_CHARS.fullmatch(s):
            self._lead.append(s)
            self._lead_len += len(s)
            return
        text = "".join(self._lead) + s
        self._lead, self._lead_len = [], 0
        self._open_block(TEXT)
        self._text.push(text)

    def _flush_lead(self) -> None:
        """Leading text that no header marker followed: a final-channel body."""
        if self._lead:
            self._open_block(TEXT)
            self._text.push("".join(self._lead))
            self._close_block()
            self._lead, self._lead_len = [], 0

    def _take_head(self, s: str) -> None:
        self._head.append(s)
        self._head_len += len(s)
        if self._head_len > _HEADER_MAX or "\n" in s:  # prose after a stray marker
            text = "".join(p for p in self._head if p not in (CHANNEL, CONSTRAIN))
            self._head, self._head_len = [], 0
            self._open_block(TEXT)
            self._text.push(text)

    def _drop_header(self) -> None:
        """A header that never reached <|message|>: nothing to show, maybe a lost call."""
        h = parse_header("".join(self._head), self._after_start)
        self._head, self._head_len = [], 0
        if h.recipient and h.role == "assistant":
            self._header = h
            why = "its header never reached <|message|>"
            self._diagnose(f"your tool call '{self._name()}' was not run: {why}")

    def _open_body(self) -> None:
        h = parse_header("".join(self._head), self._after_start)
        self._head, self._head_len = [], 0
        self._header = h
        if h.role != "assistant":
            self._state = IGNORE
        elif h.recipient:
            self._body = []
            self._in_string = self._escaped = False
            self._state = TOOL
        else:
            self._open_block(REASONING if h.channel == "analysis" else TEXT)

    def _open_block(self, state: int) -> None:
        self._state = state
        (self._reasoning if state == REASONING else self._text).open()

    def _close_block(self) -> None:
        (self._reasoning if self._state == REASONING else self._text).close()

    def _close_tool(self, mk: str) -> None:
        name, body = self._name(), "".join(self._body)
        self._body = []
        arguments, why = decode_arguments(body)
        if mk not in (CALL, END):  # <|end|> separates parallel calls in some renderings
            why = f"it ended with {mk}, not <|call|>"
        elif not self._header.recipient.startswith(FUNCTIONS) or not name:
            why = "tools are called as functions.NAME"
        elif arguments is None:
            why = f"it was not valid JSON ({why})"
        if why or arguments is None:
            self._diagnose(f"your tool call '{name}' was not run: {why}")
            return
        self._calls += 1
        self._out.append(Event("tool_call", call=ToolCall(f"call_{self._calls}", name, arguments)))

    def _cut_off_call(self) -> None:
        """The completion ended inside a call body. Generation stops on <|call|> itself
        (a stop token the text does not show), so a body whose JSON is complete is a
        call; it comes from finish(), which tells the runtime it may have been cut off by
        a token limit (then it is not run). An incomplete body is reported."""
        body = "".join(self._body)
        arguments, _ = decode_arguments(body)
        name = self._name()
        if arguments is not None and self._header.recipient.startswith(FUNCTIONS) and name:
            self._calls += 1
            call = ToolCall(f"call_{self._calls}", name, arguments)
            self._out.append(Event("tool_call", call=call))
            return
        why = (
            "its JSON has an unterminated string before <|call|>"
            if CALL in body
            else "it was cut off before <|call|>"
        )
        self._diagnose(f"your tool call '{name}' was not run: {why}")

    def _name(self) -> str:
        r = self._header.recipient
        return r[len(FUNCTIONS) :] if r.startswith(FUNCTIONS) else r

    def _diagnose(self, message: str) -> None:
        self._out.append(Event("diagnostic", message))


def parse_harmony(text: str, tool_names: Iterable[str] | None = None) -> ParseResult:
    """One completion at once: the stream parser fed everything, so the two cannot differ."""
    parser = HarmonyStreamParser(tool_names)
    return result_from_events(parser.feed(text) + parser.finish())
