"""The driver seam: prompt text in, text chunks out, usage at the end.

A driver knows nothing about tools or history. Everything model-independent (templates,
parsing, tool execution) happens in `agent`, so a new backend is one small file.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


def partial_suffix(text: str, markers: Sequence[str]) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of a marker: what a
    streaming reader (a stop string in a driver, a tag in a parser) must hold back until
    the next chunk settles it."""
    keep = 0
    for marker in markers:
        for k in range(min(len(marker) - 1, len(text)), keep, -1):
            if text.endswith(marker[:k]):
                keep = k
                break
    return keep


class DriverError(RuntimeError):
    """The backend failed (server down, model file unreadable): a harness-side error."""


class UsageError(DriverError):
    """The user asked for something that cannot work (missing file, unknown model)."""


@dataclass
class Usage:
    prompt_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens the backend did not have to evaluate again
    completion_tokens: int = 0
    ms: float = 0.0


@dataclass(frozen=True)
class Chunk:
    """A piece of streamed completion. The last chunk of a stream carries `usage` and
    `finish_reason` ("stop", "length" or "interrupted") and may have empty text.

    `stopped_by` names the stop string or end-of-generation token that ended the stream
    (not part of `text`): Harmony's `<|call|>` is both an end token and the marker that
    makes a message a tool call, so the parser needs to know it was there.
    """

    text: str
    usage: Usage | None = None
    finish_reason: str | None = None
    stopped_by: str | None = None


@dataclass
class Completion:
    text: str
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"


@runtime_checkable
class Driver(Protocol):
    """What the runtime needs from a backend.

    `model` names what is loaded, for events and traces. `supports_grammar` tells the
    runtime whether passing a GBNF grammar has any effect. A driver that tokenizes the
    prompt itself sets `takes_data_spans` and accepts `data=[(start, end), …]`: ranges
    of the prompt that are message text, where special-token look-alikes are plain text.
    """

    model: str
    supports_grammar: bool

    def stream(
        self,
        prompt: str,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 1024,
        grammar: str | None = None,
    ) -> Iterator[Chunk]: ...

    def close(self) -> None: ...


def collect(chunks: Iterator[Chunk]) -> Completion:
    """Drain a stream into one Completion (for callers that do not stream)."""
    start = time.perf_counter()
    parts: list[str] = []
    usage: Usage | None = None
    finish = "stop"
    for chunk in chunks:
        parts.append(chunk.text)
        if chunk.usage is not None:
            usage = chunk.usage
        if chunk.finish_reason is not None:
            finish = chunk.finish_reason
    if usage is None:
        usage = Usage(ms=(time.perf_counter() - start) * 1000)
    return Completion("".join(parts), usage, finish)
