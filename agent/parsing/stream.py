"""The generic parser: one forward scan over model text, fed in chunks of any size.

`parse_tool_calls` is this parser fed the whole text at once, so streaming and one-shot
parsing cannot disagree: every decision below depends only on the text, and wherever
the text so far does not decide (a chunk ending in "<tool_" or in a fence opener line)
the undecided part stays in the buffer until it does. Work is O(n) per completion.

What can be held back, and for how long:
- a possible partial marker ("<thi", "</tool_ca") or fence line ("``"): until it resolves;
- an inline code span: until its closing backticks or the end of its line;
- trailing whitespace: until non-space prose (or `finish`) decides it (see TextChannel);
- while salvage is still possible (no envelope call yet): a bare JSON object or array
  until it closes or stops looking like JSON, and a fence whose body starts with "{" or
  "[" until it closes; and, once one of those has turned out to be a tool call, the prose after it,
  until an envelope call (salvage is off: the candidate was prose after all) or
  `finish` (the candidate is salvaged and leaves the text, like any envelope).
Reasoning deltas, diagnostics and envelope calls are never held.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from agent.history import ToolCall
from agent.markup import (
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    TOOL_RESULT_CLOSE,
    TOOL_RESULT_OPEN,
    partial_suffix,
)
from agent.parsing import envelope as env
from agent.parsing import salvage
from agent.parsing.base import (
    WS,
    Event,
    ParseResult,
    ReasoningChannel,
    TextChannel,
    coalesce,
    result_from_events,
)
from agent.parsing.fences import FenceState, closer_at, inline_code_at, opener_at
from agent.parsing.salvage import DONE, MORE, JsonPrefix, loads_or_none

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
_MARKERS = (
    TOOL_CALL_OPEN,
    THINK_OPEN,
    TOOL_RESULT_OPEN,
    TOOL_CALL_CLOSE,
    THINK_CLOSE,
    TOOL_RESULT_CLOSE,
)
_SPECIAL = re.compile(r"[<`\n]")
_SPECIAL_SALVAGE = re.compile(r"[<`\n{[]")
_LONGEST = max(map(len, _MARKERS))
PROSE, THINK, RESULT, CALL, FENCE, CANDIDATE = range(6)


class GenericStreamParser:
    """`<tool_call>` JSON/XML envelopes, ```json fences, `<think>` and salvage, streamed.

    `feed(chunk)` returns the events the text so far decides; `finish()` returns the rest.
    A tool_call from `feed()` closed; one from `finish()` was unclosed or salvaged.
    `think_open=True` is for templates that prefill "<think>" in the prompt.
    """

    def __init__(
        self,
        tool_names: Iterable[str] | None = None,
        *,
        think_open: bool = False,
        salvage_bare_json: bool = True,
    ):
        self._tools: Collection[str] | None = None if tool_names is None else set(tool_names)
        # buf[0] is the character before the unconsumed text ("\n" at the start), so
        # "am I at a line start" is always buf[i - 1] == "\n".
        self._buf = "\n"
        self._i = 1
        self._base = -1  # absolute offset of buf[0]; only caches use it
        self._final = False
        self._out: list[Event] = []
        self._text = TextChannel(self._out)
        self._reasoning = ReasoningChannel(self._out)
        self._state = PROSE
        self._sink = salvage.ProseSink(self._text, self._out)
        self._push = self._sink.push
        self._removed = self._sink.removed
        self._salvage_ok = salvage_bare_json  # False only for the evaluation's no-salvage ablation
        self._calls = 0
        self._checked_at = -1  # absolute position of the last line-start fence check
        self._tick_scan: tuple[int, int] | None = None  # (opener, resume) for a held span
        self._env = env.EnvelopeScanner()
        self._fence = FenceState("", False)
        self._json = JsonPrefix()
        self._json_parts: list[str] = []
        if think_open:
            self._reasoning.open_block()
            self._state = THINK
        self._handlers = {
            PROSE: self._prose,
            THINK: self._think,
            RESULT: self._result,
            CALL: self._call,
            FENCE: self._fence_line,
            CANDIDATE: self._candidate,
        }

    # -- public -------------------------------------------------------------------------

    def feed(self, chunk: str) -> list[Event]:
        if self._final or not chunk:
            return []
        buf, i = self._buf, self._i
        if i == len(buf) and buf[-1] != "\n" and "\n" not in chunk and self._fast(chunk):
            self._base += i + len(chunk) - 1
            self._buf = chunk[-1]
            self._i = 1
        else:
            self._base += i - 1
            self._buf = buf[i - 1 :] + chunk
            self._i = 1
            self._pump()
        return self._drain()

    def finish(self) -> list[Event]:
        if self._final:
            return []
        self._final = True
        while True:
            self._pump()
            if self._state == PROSE:
                break
            self._close_open_state()
        self._sink.release(recover=True)
        self._text.finish()
        return self._drain()

    # -- machinery ----------------------------------------------------------------------

    def _fast(self, chunk: str) -> bool:
        """Take a whole chunk that holds nothing the current state must decide on (the
        common case, one token of prose, code or string): the same as the general
        path, without its per-chunk overhead. Only called with nothing held back and
        no line start in sight."""
        state = self._state
        if state == PROSE:
            if (_SPECIAL_SALVAGE if self._salvage_ok else _SPECIAL).search(chunk):
                return False
            if self._sink.holding:
                self._sink.push(chunk)
            else:
                self._text.push(chunk)
        elif state == THINK:
            if "<" in chunk:
                return False
            self._reasoning.push(chunk)
        elif state == FENCE:
            self._fence_content(chunk)
        elif state == CALL:
            return self._env.fast(chunk)
        else:
            return False
        return True

    def _pump(self) -> None:
        handlers = self._handlers
        while self._i < len(self._buf) and handlers[self._state]():
            pass
        if self._final and self._i < len(self._buf):  # a handler refused final input
            self._push(self._buf[self._i :])
            self._i = len(self._buf)

    def _drain(self) -> list[Event]:
        out = self._out
        if not out:
            return []
        events = coalesce(out) if len(out) > 1 else out[:]
        out.clear()
        return events

    def _replay(self, text: str) -> None:
        """Scan `text` again as prose, ahead of the unconsumed input.

        `text` is always what was consumed just before (a call body that turned out to
        be prose), so when it is still in the buffer this is a rewind, not a copy."""
        self._state = PROSE
        self._tick_scan = None
        start = self._i - len(text)
        if start >= 1 and self._buf.startswith(text, start):
            self._i = start
            return
        self._buf = ">" + text + self._buf[self._i :]
        self._i = 1
        self._base = -(1 << 40) - len(self._buf)  # positions are new: caches restart
        self._checked_at = -1

    def _emit_items(self, items: list[env.Item]) -> None:
        """Envelope results in order; the first real call turns salvage off for good."""
        if any(not isinstance(it, str) for it in items):
            self._salvage_ok = False
            self._sink.release(recover=False)
        for it in items:
            if isinstance(it, str):
                self._out.append(Event("diagnostic", it))
            else:
                self._calls += 1
                self._out.append(Event("tool_call", call=ToolCall(f"call_{self._calls}", *it)))

    # -- states -------------------------------------------------------------------------

    def _prose(self) -> bool:
        buf, i = self._buf, self._i
        if buf[i - 1] == "\n" and self._checked_at != self._base + i:
            fence = opener_at(buf, i, self._final)
            if fence is None:
                return False
            self._checked_at = self._base + i
            if fence is not False:
                self._fence = fence
                self._i = i + len(fence.opener)
                self._state = FENCE
                return True
        m = (_SPECIAL_SALVAGE if self._salvage_ok else _SPECIAL).search(buf, i)
        j = m.start() if m else len(buf)
        if j > i:
            self._push(buf[i:j])
            self._i = j
            return True
        c = buf[i]
        if c == "\n":
            self._push("\n")
            self._i = i + 1
            return True
        if c == "`":
            return self._inline_code(buf, i)
        if c in "{[":
            self._json = JsonPrefix()
            self._json_parts = []
            self._state = CANDIDATE
            return True
        return self._marker(buf, i)

    def _marker(self, buf: str, i: int) -> bool:
        mk = next((m for m in _MARKERS if buf.startswith(m, i)), None)
        if mk is None:
            short = len(buf) - i < _LONGEST
            if short and not self._final and any(m.startswith(buf[i:]) for m in _MARKERS):
                return False
            self._push("<")
            self._i = i + 1
            return True
        self._i = i + len(mk)
        if mk == TOOL_CALL_OPEN:
            self._env = env.EnvelopeScanner()
            self._state = CALL
        elif mk == THINK_OPEN:
            self._reasoning.open_block()
            self._state = THINK
        elif mk == TOOL_RESULT_OPEN:
            self._state = RESULT
        else:  # a stray closer; "</think>" keeps the spacing (its opener was prefilled)
            self._removed(skip_ws=mk != THINK_CLOSE)
        return True

    def _inline_code(self, buf: str, i: int) -> bool:
        resume = 0
        if self._tick_scan is not None and self._tick_scan[0] == self._base + i:
            resume = self._tick_scan[1] - self._base
        end, span = inline_code_at(buf, i, self._final, resume)
        if span is None:  # undecided: remember how far the search got
            self._tick_scan = (self._base + i, self._base + end)
            return False
        self._tick_scan = None
        self._push(buf[i:end])  # a whole code span, or a literal backtick run
        self._i = end
        return True

    def _think(self) -> bool:
        return self._until(THINK_CLOSE, self._reasoning.push)

    def _result(self) -> bool:
        return self._until(TOOL_RESULT_CLOSE, lambda s: None)

    def _until(self, close: str, sink: object) -> bool:
        buf, i = self._buf, self._i
        j = buf.find(close, i)
        if j < 0:
            keep = (
                0 if self._final else partial_suffix(buf[max(i, len(buf) - len(close)) :], (close,))
            )
            sink(buf[i : len(buf) - keep])  # type: ignore[operator]
            self._i = len(buf) - keep
            return False
        sink(buf[i:j])  # type: ignore[operator]
        self._i = j + len(close)
        self._end_span()
        return True

    def _end_span(self) -> None:
        if self._state == THINK:
            self._reasoning.close_block()
        self._state = PROSE
        self._removed()

    def _call(self) -> bool:
        j, outcome = self._env.scan(self._buf, self._i, self._final)
        self._i = j
        if outcome == env.MORE:
            return False
        self._state = PROSE
        if outcome == env.REOPEN:  # the first "<tool_call>" was prose mentioning the tag
            self._push(TOOL_CALL_OPEN)
            self._replay(self._env.body())
            return True
        self._emit_items(env.decode(self._env.mode, self._env.body(), closed=True))
        self._removed()
        return True

    def _fence_line(self) -> bool:
        buf, i, fence = self._buf, self._i, self._fence
        if buf[i - 1] == "\n" and self._checked_at != self._base + i:
            end = closer_at(buf, i, fence.chars, self._final)
            if end is None:
                return False
            self._checked_at = self._base + i
            if end is not False:
                self._close_fence(buf[i:end])
                self._i = end
                self._state = PROSE
                return True
        nl = buf.find("\n", i)
        end = len(buf) if nl < 0 else nl + 1
        self._i = end
        self._fence_content(buf[i:end])
        return True

    def _fence_content(self, seg: str) -> None:
        fence = self._fence
        if fence.mode == "probe":
            first = seg.lstrip(WS)
            if not first:
                fence.body.append(seg)
            elif first[0] in "{[" and (fence.is_json or self._salvage_ok):
                fence.mode = "held"
                fence.body.append(seg)
            else:
                fence.mode = "stream"
                self._push(fence.opener + "".join(fence.body) + seg)
                fence.body.clear()
        elif fence.mode == "held":
            fence.body.append(seg)
        else:
            self._push(seg)

    def _close_fence(self, closer: str) -> None:
        fence = self._fence
        if fence.mode == "stream":
            self._push(closer)
            return
        body = "".join(fence.body)
        raw = fence.opener + body + closer
        held = fence.mode == "held"
        calls = salvage.salvage_calls(loads_or_none(body), self._tools) if held else []
        if calls and fence.is_json:
            self._emit_items(list(calls))  # a ```json fence holding calls is an envelope
            self._removed()
        elif calls and self._salvage_ok:
            self._sink.hold(raw, calls)
        else:
            self._push(raw)

    def _candidate(self) -> bool:
        i = self._i
        j, status = self._json.scan(self._buf, i, self._final)
        self._json_parts.append(self._buf[i:j])
        self._i = j
        if status == MORE:
            return False
        self._state = PROSE
        raw = "".join(self._json_parts)
        calls = salvage.salvage_calls(loads_or_none(raw), self._tools) if status == DONE else []
        if calls:
            self._sink.hold(raw, calls)
        else:
            self._push(raw)
        return True

    def _close_open_state(self) -> None:
        """At finish: settle whatever span the text ended inside."""
        state = self._state
        self._state = PROSE
        if state in (THINK, RESULT):
            self._state = state
            self._end_span()
        elif state == FENCE:
            fence = self._fence
            if fence.mode != "stream":
                self._push(fence.opener + "".join(fence.body))
        elif state == CANDIDATE:
            self._push("".join(self._json_parts))
        elif state == CALL:
            self._close_unclosed_call()

    def _close_unclosed_call(self) -> None:
        mode, body = self._env.mode, self._env.body()
        cut = body.find(TOOL_CALL_CLOSE) if mode in (env.JSON, env.XML) else -1
        if cut >= 0:  # a stray quote hid the closing tag inside a "string": split there
            self._emit_items(env.decode(mode, body[:cut], closed=True))
            self._removed()
            self._replay(body[cut + len(TOOL_CALL_CLOSE) :])
            return
        if mode == env.PLAIN:
            calls = env.plain_calls(body)
            if calls is None:
                self._push(TOOL_CALL_OPEN)
                self._replay(body)
                return
            self._emit_items(list(calls))
        else:
            self._emit_items(env.decode(mode, body, closed=False))
        self._removed()


def parse_tool_calls(
    text: str, tool_names: Iterable[str] | None = None, *, think_open: bool = False
) -> ParseResult:
    """Prose, reasoning, tool calls and diagnostics of one completion. Never raises.

    Envelope first; salvage only when the envelope found no call. Same answer as
    `GenericStreamParser` on any chunking of `text`, because it is that parser.
    """
    parser = GenericStreamParser(tool_names, think_open=think_open)
    streamed = parser.feed(text)
    finished = parser.finish()
    unclosed = [e.call.id for e in finished if e.call is not None and not e.call.salvaged]
    return result_from_events(streamed + finished, unclosed)
