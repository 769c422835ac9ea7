"""The driver seam: prompt text in, text chunks out, usage at the end.

A driver knows nothing about tools or history. Everything model-independent (templates,
parsing, tool execution) happens in `agent`, so a new backend is one small file. The
contract is explicit: `TextDriver` (every backend) and `ChatDriver` (a server that
applies its own template), with `DriverInfo` for what a backend may or may not offer.
`drivers` imports nothing of `agent`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

_C = TypeVar("_C")


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


def common_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many leading items two sequences share: tokens a KV cache holds, characters
    a prompt repeats."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class HarnessError(RuntimeError):
    """bosun cannot go on with what it was asked: the harness's side or the user's, never
    the model's (a model's mistake goes back to it as a result). The run ends."""


class DriverError(HarnessError):
    """The backend failed (server down, model file unreadable, the prompt too long)."""


class ContextOverflow(DriverError):
    """The server refused the prompt as longer than its context (llama-server's
    "exceeds the available context size", vLLM's "maximum context length"): the agent
    compacts and asks once more before this ends the run."""


class UsageError(HarnessError):
    """The user asked for something that cannot work (a bad flag, a missing file, an
    unknown model): not a backend's failure, and exit 2 rather than 1."""


@dataclass
class Usage:
    prompt_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens the backend did not have to evaluate again
    completion_tokens: int = 0
    ms: float = 0.0

    def add(self, other: Usage) -> None:
        """Sum another call's usage into this one: the one place totals are kept."""
        self.prompt_tokens += other.prompt_tokens
        self.cached_tokens += other.cached_tokens
        self.completion_tokens += other.completion_tokens
        self.ms += other.ms


@dataclass(frozen=True)
class Chunk:
    """A piece of streamed completion. The last chunk of a stream carries `usage` and
    `finish_reason` ("stop", "length" or "interrupted") and may have empty text.

    `stopped_by` names the stop string or end-of-generation token that ended the stream
    (not part of `text`): Harmony's `<|call|>` is both an end token and the marker that
    makes a message a tool call, so the parser needs to know it was there.

    `progress` (prompt tokens read, of how many) comes on empty chunks before the first
    token, where a server reports its prefill: a long prompt is then visibly read, not
    a hang, and a stop is heard between two reports rather than after the last.

    `notices` (on the last chunk) are warnings for the person, never the model: a fault
    the driver worked around (a prompt cache it could not save or read), so the reply
    stands and the run goes on, but whoever runs it should know why it was slower.
    """

    text: str
    usage: Usage | None = None
    finish_reason: str | None = None
    stopped_by: str | None = None
    progress: tuple[int, int] | None = None
    notices: tuple[str, ...] = ()


@dataclass
class Completion:
    text: str
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"


Halt = Callable[[], bool]  # asked between tokens: True ends the stream early


@dataclass(frozen=True)
class Request:
    """One model call as a text driver gets it, whole: the prompt (wire form, exactly
    the bytes to complete), where to stop, how much to write, the grammar to hold it to,
    `data` ([start, end) ranges of the prompt that are message text, where a special
    token's look-alike must stay plain text) and `head` (how many characters at the start
    every session with the same system prompt and tools shares: a driver with
    `info.prefix_cache` may save that much for a later session; others ignore it).

    Recorded as it is by the scripted driver, so tests see what a backend was asked."""

    prompt: str
    stop: tuple[str, ...] = ()
    max_tokens: int = 1024
    grammar: str | None = None
    data: tuple[tuple[int, int], ...] = ()
    head: int = 0

    def __post_init__(self) -> None:  # sequences given as lists still compare as sent
        object.__setattr__(self, "stop", tuple(self.stop))
        object.__setattr__(self, "data", tuple(tuple(span) for span in self.data))


def never() -> bool:
    return False


@dataclass(frozen=True)
class RawCall:
    """A tool call as a server's own parser sent it, arguments still JSON text: the
    agent decodes them, as it decodes everything a model wrote (bounded, typed).
    `cut_off`: the completion ended (max_tokens) before the call did."""

    id: str
    name: str
    arguments: str
    cut_off: bool = False


@dataclass(frozen=True)
class ChatChunk:
    """A piece of a streamed chat completion: text, reasoning, and whole calls (a call
    is handed out once all its argument fragments arrived). The last chunk carries
    `usage` and `finish_reason`; `progress` is as in `Chunk`."""

    text: str = ""
    reasoning: str = ""
    calls: tuple[RawCall, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = None
    progress: tuple[int, int] | None = None


@dataclass(frozen=True)
class DriverInfo:
    """What a backend offers beyond streaming text, stated once when it is opened so
    the agent never has to probe for it.

    `chat`: the backend applies its own chat template and tool parser, so the agent
    calls `chat()` with messages instead of `stream()` with a prompt it rendered.
    `data_spans`: the driver tokenizes the prompt itself and honours `data=`: ranges of
    the prompt that are message text, where special-token look-alikes stay plain text.
    """

    grammar: bool = False  # a GBNF grammar passed to stream() has an effect
    chat: bool = False
    data_spans: bool = False
    n_ctx: int | None = None  # context size in tokens, where known
    context_source: str = ""  # where n_ctx was read ("llama-server /props (per slot)", …)
    server: str = ""  # the kind of server behind it, where known ("llama-server", "vllm", …)
    n_params: int | None = None  # model size, where known (--constrain auto uses it)
    max_concurrency: int = 1  # streams one driver serves at once (1: one KV cache)
    tokenize: Callable[[str], list[int]] | None = None
    prefix_cache: bool = False  # a request's `head` lets a later session start warm
    # usage.prompt_tokens is a server's count of the prompt it received, which may have
    # dropped part of it (Ollama's window does, behind HTTP 200): the agent checks it
    # against what was sent. False: the driver counts the tokens it was handed itself,
    # so a short count says nothing about a lost prompt and is never held against it.
    server_counts: bool = False
    # prompt-lookup speculation in the driver's own decode loop: "auto" or "off"
    # (drivers.llama_speculate); "" where the driver has none (a server has its own)
    speculate: str = ""
    # A driver that must not be shared (a strict replay: call N is step N) hands each
    # concurrent user a fresh copy of itself through this; None: share this one.
    fresh: Callable[[], TextDriver] | None = None


class TextDriver(Protocol):
    """A backend that completes a prompt bosun rendered: the seam every driver has.

    `model` names what is loaded, for events and traces. `halt` is asked between
    tokens; once it says True the stream ends with a last chunk whose finish_reason is
    "interrupted" (and whose usage counts what was done), so a stop never loses usage.

    Everything about the call itself is in the `Request`; `halt` is apart because it is
    not part of what is asked but a line back to whoever may stop it.
    """

    model: str
    info: DriverInfo

    def stream(self, request: Request, *, halt: Halt = never) -> Iterator[Chunk]: ...

    def close(self) -> None: ...


class ChatDriver(TextDriver, Protocol):
    """A backend that also takes the conversation itself (`info.chat`): OpenAI-style
    messages in, text, reasoning and the server's parsed calls out."""

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: Sequence[dict[str, Any]] = (),
        *,
        max_tokens: int = 1024,
        halt: Halt = never,
    ) -> Iterator[ChatChunk]: ...


Driver = TextDriver


def halting(chunks: Iterator[_C], halt: Halt, last: Callable[[int], _C]) -> Iterator[_C]:
    """`chunks` until `halt()` says stop: then the source is closed (a server stream is
    cancelled) and `last(pieces)` ends the stream, for a driver that cannot stop its
    backend between tokens any other way. A prefill report is no piece of the reply:
    `pieces` counts what the model wrote."""
    pieces = 0
    try:
        for chunk in chunks:
            if halt():
                break
            pieces += getattr(chunk, "progress", None) is None
            yield chunk
        else:
            return
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    yield last(pieces)


def interrupted(pieces: int) -> Chunk:
    return Chunk("", usage=Usage(completion_tokens=pieces), finish_reason="interrupted")


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
