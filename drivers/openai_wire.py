"""The OpenAI wire formats, apart from transport: streamed chat/completion events ->
bosun's chunks, tool calls and usage.

Split from openai_http.py so the formats can be read (and tested) without the retry and
error-reporting machinery around them.
"""

from __future__ import annotations

import time
from typing import Any

from drivers.base import RawCall, Usage

# --- streamed tool calls ------------------------------------------------------------


class CallAssembler:
    """Streamed tool-call deltas -> whole calls.

    Servers send a call as an `index`, then its id and name, then the arguments in
    fragments. A call is complete when a later index starts or the stream finishes;
    only a finish by max_tokens leaves the last one unfinished (`cut_off`: the agent
    never runs it). The arguments stay text: the agent decodes them.
    """

    def __init__(self) -> None:
        self._open: dict[int, dict[str, Any]] = {}
        self._count = 0

    def feed(self, part: Any) -> tuple[RawCall, ...]:
        index = getattr(part, "index", None)
        if not isinstance(index, int):
            index = max(self._open, default=0)
        done: tuple[RawCall, ...] = ()
        if index not in self._open:
            done = tuple(self._build(self._open.pop(i)) for i in sorted(self._open) if i < index)
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
        return done

    def finish(self, *, truncated: bool) -> tuple[RawCall, ...]:
        last = max(self._open, default=None)
        done = tuple(
            self._build(self._open[i], cut_off=truncated and i == last) for i in sorted(self._open)
        )
        self._open.clear()
        return done

    def _build(self, slot: dict[str, Any], cut_off: bool = False) -> RawCall:
        self._count += 1
        raw = "".join(slot["arguments"]).strip()
        return RawCall(slot["id"] or f"call_{self._count}", slot["name"], raw, cut_off)


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


def progress_of(event: Any) -> tuple[int, int] | None:
    """llama-server's prefill report, `prompt_progress` (sent where a streamed request
    asked with `return_progress`), as (prompt tokens read, cached ones included; of how
    many). Anything else a server sends under that name tells nothing."""
    report = extra_field(event, "prompt_progress")
    if not isinstance(report, dict):
        return None
    processed, total = report.get("processed"), report.get("total")
    if type(processed) is not int or type(total) is not int or total <= 0:
        return None
    return max(0, min(processed, total)), total


def finish_usage(usage: Usage | None, pieces: int, started: float) -> Usage:
    """The stream's usage, or an estimate when the server sent none (llama-cpp-python
    does not stream usage): one streamed piece is one token on llama.cpp servers."""
    out = usage if usage is not None else Usage(completion_tokens=pieces)
    out.ms = (time.perf_counter() - started) * 1000
    return out


def finish_reason_of(reason: str) -> str:
    """The runtime only distinguishes a cut-off ("length") from a normal end."""
    return "length" if reason == "length" else "stop"
