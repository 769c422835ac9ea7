"""The OpenAI wire formats, apart from transport: history -> chat messages, and streamed
chat/completion events -> bosun's chunks, tool calls and usage.

Split from openai_http.py so the formats can be read (and tested) without the retry and
error-reporting machinery around them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent import untrusted
from agent.dialect import REASONING_KEYS, Dialect, to_template_messages
from agent.history import Message, ToolCall
from drivers.base import Usage


@dataclass(frozen=True)
class ChatChunk:
    """A piece of a streamed chat completion.

    `calls` holds tool calls whose arguments are complete (a call is never handed out
    half-assembled); `diagnostics` reports calls that could not be used (bad JSON, cut
    off by max_tokens). The last chunk carries `usage` and `finish_reason`.
    """

    text: str = ""
    reasoning: str = ""
    calls: tuple[ToolCall, ...] = ()
    diagnostics: tuple[str, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = None


# --- history -> OpenAI chat messages -------------------------------------------------


def chat_messages(history: Sequence[Message]) -> list[dict[str, Any]]:
    """Structured history -> the `messages` of a chat-completions request.

    The same shaping as a local template gets (one assistant message per turn, with its
    reasoning and calls), in the API's own terms: arguments as JSON strings, reasoning
    only as `reasoning_content` (what llama.cpp and vLLM read back), and tool messages
    without the `name` that only some local templates print. Errors need no flag: their
    content already says "Error: …".
    """
    out = to_template_messages(history, Dialect(arguments_as_string=True))
    for message in out:
        for key in (*REASONING_KEYS[1:], "name"):
            message.pop(key, None)
    return out


# --- errors ------------------------------------------------------------------------


class CallAssembler:
    """Streamed tool-call deltas -> whole ToolCalls.

    Servers send a call as an `index`, then its id and name, then the arguments in
    fragments. A call is complete when a later index starts or the stream finishes;
    only a finish by max_tokens leaves the last one unfinished (a truncated call is
    never run: contract native-formats-v1).
    """

    def __init__(self) -> None:
        self._open: dict[int, dict[str, Any]] = {}
        self._count = 0

    def feed(self, part: Any) -> tuple[tuple[ToolCall, ...], tuple[str, ...]]:
        index = getattr(part, "index", None)
        if not isinstance(index, int):
            index = max(self._open, default=0)
        done: tuple[ToolCall, ...] = ()
        notes: tuple[str, ...] = ()
        if index not in self._open:
            for earlier in sorted(i for i in self._open if i < index):
                call, note = self._build(self._open.pop(earlier))
                done, notes = done + call, notes + note
            self._open[index] = {"id": "", "name": "", "arguments": []}
        slot = self._open[index]
        if getattr(part, "id", None):
            slot["id"] = part.id
        function = getattr(part, "function", None)
        if function is not None:
            if getattr(function, "name", None):
                slot["name"] += function.name
            if getattr(function, "arguments", None):
                slot["arguments"].append(function.arguments)
        return done, notes

    def finish(self, *, truncated: bool) -> tuple[tuple[ToolCall, ...], tuple[str, ...]]:
        done: tuple[ToolCall, ...] = ()
        notes: tuple[str, ...] = ()
        last = max(self._open, default=None)
        for index in sorted(self._open):
            slot = self._open[index]
            if truncated and index == last:
                name = slot["name"] or "a tool"
                notes += (
                    f"your call to {name} was cut off by the token limit and was not run;"
                    " make it shorter",
                )
                continue
            call, note = self._build(slot)
            done, notes = done + call, notes + note
        self._open.clear()
        return done, notes

    def _build(self, slot: dict[str, Any]) -> tuple[tuple[ToolCall, ...], tuple[str, ...]]:
        self._count += 1
        name = slot["name"]
        raw = "".join(slot["arguments"]).strip()
        if not name:
            return (), ("the server sent a tool call without a name; it was not run",)
        try:
            arguments = untrusted.loads(raw) if raw else {}
        except ValueError as exc:
            return (), (f"the arguments of your call to {name} were not valid JSON ({exc})",)
        if not isinstance(arguments, dict):
            return (), (f"the arguments of your call to {name} must be a JSON object",)
        return (ToolCall(slot["id"] or f"call_{self._count}", name, arguments),), ()


# --- usage --------------------------------------------------------------------------


def extra_field(obj: Any, key: str) -> Any:
    """A field the OpenAI schema lacks but a server sent (llama.cpp's `timings`,
    `reasoning_content`); the client keeps those as pydantic extras."""
    extra = getattr(obj, "model_extra", None)
    if isinstance(extra, dict) and key in extra:
        return extra[key]
    return getattr(obj, key, None)


def usage_of(event: Any) -> Usage | None:
    """Usage from a stream event: `usage` (with `prompt_tokens_details.cached_tokens`
    where the server reports the cache, as vLLM and OpenAI do) or llama.cpp's `timings`,
    whose `prompt_n` counts only the prompt tokens it had to evaluate."""
    usage = getattr(event, "usage", None)
    timings = extra_field(event, "timings")
    if usage is None and not isinstance(timings, dict):
        return None
    out = Usage()
    if usage is not None:
        out.prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        out.completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None) if details is not None else None
        if cached is not None:
            out.cached_tokens = int(cached)
    if isinstance(timings, dict):
        evaluated = timings.get("prompt_n")
        cache_n = timings.get("cache_n")
        if not out.prompt_tokens and isinstance(evaluated, int):
            out.prompt_tokens = evaluated + (cache_n if isinstance(cache_n, int) else 0)
        if not out.completion_tokens and isinstance(timings.get("predicted_n"), int):
            out.completion_tokens = timings["predicted_n"]
        if not out.cached_tokens:
            if isinstance(cache_n, int):
                out.cached_tokens = cache_n
            elif isinstance(evaluated, int):
                out.cached_tokens = max(0, out.prompt_tokens - evaluated)
    return out


def finish_usage(usage: Usage | None, pieces: int, started: float) -> Usage:
    """The stream's usage, or an estimate when the server sent none (llama-cpp-python
    does not stream usage): one streamed piece is one token on llama.cpp servers."""
    out = usage if usage is not None else Usage(completion_tokens=pieces)
    out.ms = (time.perf_counter() - started) * 1000
    return out


def finish_reason_of(reason: str) -> str:
    """The runtime only distinguishes a cut-off ("length") from a normal end."""
    return "length" if reason == "length" else "stop"
