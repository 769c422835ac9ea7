"""Low-level scanning of model text: where tool-call markup starts and ends.

This module imports nothing from bosun's agent package so that both `history` (which
must strip residue) and `parsing` (which must extract calls) can share one definition of
"where does this span end". Everything here is a single forward pass; nothing re-scans
the buffer.
"""

from __future__ import annotations

from drivers.base import partial_suffix as partial_suffix  # one helper for drivers and parsers

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
TOOL_RESULT_OPEN = "<tool_result>"
TOOL_RESULT_CLOSE = "</tool_result>"
# Wire form used for models whose tokenizer reserves "<tool_call>" (see agent.protocol.render).
WIRE_CALL_OPEN = "[[CALL]]"
WIRE_CALL_CLOSE = "[[/CALL]]"

# Opening marker -> closing marker. Order matters only for readability.
SPANS: dict[str, str] = {
    TOOL_CALL_OPEN: TOOL_CALL_CLOSE,
    TOOL_RESULT_OPEN: TOOL_RESULT_CLOSE,
    WIRE_CALL_OPEN: WIRE_CALL_CLOSE,
}
STRAY_CLOSERS: tuple[str, ...] = (TOOL_CALL_CLOSE, TOOL_RESULT_CLOSE, WIRE_CALL_CLOSE)


def find_close(text: str, start: int, close: str) -> int:
    """Index of `close` ending a span whose body starts at `start`, or -1.

    When the body is JSON (first non-space char is "{"), a closing tag that sits inside a
    JSON string does not end the span: a model writing a file whose content mentions
    `</tool_call>` must not have its call cut in half (vllm #45167). If the JSON never
    balances (malformed), fall back to the first literal occurrence so a broken call is
    still delimited.
    """
    n = len(text)
    i = start
    while i < n and text[i] in " \t\r\n":
        i += 1
    if i < n and text[i] == "{":
        in_string = False
        escaped = False
        first = close[0]
        while i < n:
            c = text[i]
            if in_string:
                if escaped:
                    escaped = False
                elif c == "\\":
                    escaped = True
                elif c == '"':
                    in_string = False
            elif c == '"':
                in_string = True
            elif c == first and text.startswith(close, i):
                return i
            i += 1
    return text.find(close, start)


def fence_at(text: str, i: int) -> tuple[str, int] | None:
    """If a Markdown code fence opens at line start `i`, return (fence chars, indent).

    CommonMark: up to three spaces of indent, then three or more backticks or tildes.
    """
    j = i
    n = len(text)
    while j < n and j - i < 3 and text[j] == " ":
        j += 1
    if j >= n or text[j] not in "`~":
        return None
    ch = text[j]
    k = j
    while k < n and text[k] == ch:
        k += 1
    if k - j < 3:
        return None
    if ch == "`" and "`" in text[k : _line_end(text, k)]:
        return None  # an info string may not contain backticks
    return text[j:k], j - i


def closes_fence(text: str, i: int, fence: str) -> bool:
    """True when the line starting at `i` closes a fence opened with `fence`."""
    found = fence_at(text, i)
    if found is None:
        return False
    chars, _ = found
    if chars[0] != fence[0] or len(chars) < len(fence):
        return False
    j = i + (len(text[i:]) - len(text[i:].lstrip(" ")))  # skip indent
    rest = text[j + len(chars) : _line_end(text, j)]
    return rest.strip() == ""


def _line_end(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end


class InlineCode:
    """Finds the end of inline code spans without rescanning on unmatched backticks.

    A backtick run of length k opens a code span only if a run of exactly k backticks
    follows. Once a search for length k from some position fails, every later search for
    k fails too, so the failure is remembered: total work stays linear.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._no_closer_after: dict[int, int] = {}

    def span_end(self, i: int) -> int:
        """Given a backtick run starting at `i`, return the index after its closing run,
        or the index after the opening run itself when it is unmatched (literal)."""
        text = self.text
        n = len(text)
        k = i
        while k < n and text[k] == "`":
            k += 1
        length = k - i
        failed_from = self._no_closer_after.get(length)
        if failed_from is not None and failed_from <= k:
            return k
        j = k
        while True:
            j = text.find("`" * length, j)
            if j < 0:
                self._no_closer_after[length] = k
                return k
            end = j + length
            if (j > 0 and text[j - 1] == "`") or (end < n and text[end] == "`"):
                # part of a longer run: skip the whole run
                while end < n and text[end] == "`":
                    end += 1
                j = end
                continue
            return end


def strip_markup(text: str) -> tuple[str, bool]:
    """Remove tool-call/tool-result spans outside code; return (text, removed_any).

    Whitespace right after a removed span is removed with it, so "A.\\n<tool_call>…
    </tool_call>\\nB." becomes "A.\\nB.". Prose is otherwise kept byte-for-byte.
    """
    out: list[str] = []
    n = len(text)
    i = 0
    seg_start = 0
    fence: str | None = None
    inline = InlineCode(text)
    removed = False

    def skip_ws(j: int) -> int:
        while j < n and text[j] in " \t\r\n":
            j += 1
        return j

    while i < n:
        if i == 0 or text[i - 1] == "\n":
            if fence is not None:
                if closes_fence(text, i, fence):
                    fence = None
                i = _line_end(text, i) + 1
                continue
            opened = fence_at(text, i)
            if opened is not None:
                fence = opened[0]
                i = _line_end(text, i) + 1
                continue
        c = text[i]
        if c == "`":
            i = inline.span_end(i)
            continue
        if c == "<" or c == "[":
            matched = False
            for opener, closer in SPANS.items():
                if text.startswith(opener, i):
                    close_at = find_close(text, i + len(opener), closer)
                    out.append(text[seg_start:i])
                    end = n if close_at < 0 else close_at + len(closer)
                    i = seg_start = skip_ws(end)
                    removed = matched = True
                    break
            if matched:
                continue
            for closer in STRAY_CLOSERS:
                if text.startswith(closer, i):
                    out.append(text[seg_start:i])
                    i = seg_start = skip_ws(i + len(closer))
                    removed = matched = True
                    break
            if matched:
                continue
        i += 1
    if not removed:
        return text, False
    out.append(text[seg_start:])
    return "".join(out).strip(), True
