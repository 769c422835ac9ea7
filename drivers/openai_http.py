"""Any OpenAI-compatible server (llama-server, vLLM, SGLang, llama-cpp-python's server).

Two wires, because servers differ in what they get right:
- `completions`: bosun renders the prompt with its own templates and parses the text,
  exactly as with the in-process driver, so the wire remap, salvage and Harmony all
  apply. This is the `Driver.stream` protocol over /v1/completions.
- `chat` (the default): the server applies its chat template and tool parser. Structured
  `tool_calls` are taken as they come (already parsed, nothing to repair); text content
  still goes through bosun's parser, so a model that writes calls as prose is salvaged.

Retries are bounded and only happen before the first byte of a completion reaches the
caller: once text has been streamed out, a retry would duplicate it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    System,
    ToolCall,
    ToolResult,
    User,
)
from drivers.base import Chunk, DriverError, Usage, UsageError

Wire = Literal["chat", "completions"]
WIRES: tuple[Wire, ...] = ("chat", "completions")
DUMMY_KEY = "sk-no-key-needed"  # local servers ignore it; the client refuses an empty one
EXAMPLE = "openai:http://localhost:8080/v1#qwen3-8b"
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_T = TypeVar("_T")


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


# --- the --model spec -------------------------------------------------------------


def parse_spec(spec: str) -> tuple[str, str]:
    """`openai:URL#MODEL` -> (base URL without a trailing slash, model name).

    A URL with no path gets `/v1`, where every OpenAI-compatible server lives, so
    `openai:http://localhost:8080#m` works as people tend to type it.
    """
    rest = spec[len("openai:") :] if spec.lower().startswith("openai:") else spec
    url, _, name = rest.partition("#")
    url, name = url.strip(), name.strip()
    if not url:
        raise UsageError(f"openai: needs a server URL, as in --model {EXAMPLE}")
    if not name:
        raise UsageError(
            f"openai: needs the model name after '#', as in --model {EXAMPLE}"
            " (the server's /v1/models lists them)"
        )
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise UsageError(f"bad server URL {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"bad server URL {url!r}: expected http://HOST:PORT/v1")
    path = parts.path.rstrip("/") or "/v1"
    return f"{parts.scheme}://{parts.netloc}{path}", name


def api_key() -> str:
    """BOSUN_API_KEY first (specific to bosun), then the usual OPENAI_API_KEY."""
    return os.environ.get("BOSUN_API_KEY") or os.environ.get("OPENAI_API_KEY") or DUMMY_KEY


# --- history -> OpenAI chat messages -------------------------------------------------


def chat_messages(history: Sequence[Message]) -> list[dict[str, Any]]:
    """Structured history -> the `messages` of a chat-completions request.

    The prose and tool calls of one assistant turn become one assistant message (the
    runtime stores prose first, then the calls), arguments travel as JSON strings as the
    API requires, and each ToolResult becomes a `tool` message. Errors need no flag:
    their content already says "Error: …".
    """
    out: list[dict[str, Any]] = []
    for m in history:
        if isinstance(m, System):
            out.append({"role": "system", "content": m.content})
        elif isinstance(m, User):
            out.append({"role": "user", "content": m.content})
        elif isinstance(m, Assistant):
            out.append({"role": "assistant", "content": m.content})
        elif isinstance(m, AssistantToolUse):
            call = {
                "id": m.call.id,
                "type": "function",
                "function": {
                    "name": m.call.name,
                    "arguments": json.dumps(m.call.arguments, ensure_ascii=False),
                },
            }
            if out and out[-1]["role"] == "assistant":
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                # "" rather than None: some server-side templates trim the content.
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif isinstance(m, ToolResult):
            out.append({"role": "tool", "tool_call_id": m.call_id, "content": m.content})
    return out


# --- errors ------------------------------------------------------------------------


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cause_chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _connection_reason(exc: BaseException) -> str:
    """Why a connection failed, in a few words ("connection refused")."""
    chain = list(_cause_chain(exc))
    names = {type(err).__name__ for err in chain}
    for err in chain:
        text = str(err).lower()
        if isinstance(err, ConnectionRefusedError) or "refused" in text:
            return "connection refused"
        if "name or service not known" in text or "nodename nor servname" in text:
            return "unknown host"
    if names & {"ConnectTimeout", "PoolTimeout"}:
        return "connection timed out"
    if names & {"ReadTimeout", "WriteTimeout", "APITimeoutError"}:
        return "no data before the read timeout"
    inner = chain[-1] if len(chain) > 1 else exc
    return _one_line(str(inner)) or type(inner).__name__


def _server_message(exc: Any) -> str:
    """The server's own words from an error response: OpenAI, FastAPI and llama.cpp
    all nest them differently."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return _one_line(error["message"])
        if isinstance(error, str):
            return _one_line(error)
        detail = body.get("detail")
        if detail is not None:
            return _one_line(detail if isinstance(detail, str) else json.dumps(detail))
    if isinstance(body, str) and body.strip():
        return _one_line(body)
    return _one_line(getattr(exc, "message", "") or str(exc))


def _is_transport_error(exc: BaseException) -> bool:
    """httpx (or the httpx2 fork newer openai releases use) errors that older openai
    versions let escape unwrapped from a stream."""
    return type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2")


# --- the driver ---------------------------------------------------------------------


class OpenAIDriver:
    """One OpenAI-compatible server and one model on it.

    `chat_mode` tells the runtime which method to call; both always work, so a runtime
    that only knows `stream` still runs (over /v1/completions). The client is shared by
    concurrent tasks: the HTTP connection pool is thread-safe and the driver keeps no
    per-request state on itself.
    """

    n_params: int | None = None  # unknown over HTTP: --constrain auto stays off

    def __init__(
        self,
        base_url: str,
        model_name: str,
        *,
        wire: Wire = "chat",
        key: str | None = None,
        timeout: float = 600.0,
        connect_timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.5,
        temperature: float = 0.0,
        max_concurrency: int = 32,
        check_model: bool = True,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if wire not in WIRES:
            raise UsageError(f"unknown wire {wire!r}: use chat or completions")
        import openai

        self._openai = openai
        self.base_url = base_url
        self.model_name = model_name
        # The full spec, not the bare name: render() resolves capabilities from it and
        # session files record where the completions came from.
        self.model = f"openai:{base_url}#{model_name}"
        self.wire: Wire = wire
        self.chat_mode = wire == "chat"
        # Only /v1/completions takes a GBNF grammar (llama.cpp servers, in the body).
        self.supports_grammar = wire == "completions"
        self.max_concurrency = max_concurrency
        self.temperature = temperature
        self.retries = max(0, retries)
        self.backoff = backoff
        self._sleep = sleep
        self._connect_timeout = connect_timeout
        self._timeout = timeout
        # The client's own retries are off: ours are bounded, configurable and never
        # replay a request whose completion has already been streamed out.
        # Typed loosely: the client's overloads name OpenAI's models, not a local server's.
        self.client: Any = openai.OpenAI(
            api_key=key or api_key(),
            base_url=base_url,
            timeout=openai.Timeout(timeout, connect=connect_timeout),
            max_retries=0,
        )
        self.available: list[str] = []
        if check_model:
            self._check_model()

    # -- plumbing --

    def _retrying(self, what: str, call: Callable[[], _T]) -> _T:
        """Run `call`, retrying connection errors, 429 and 5xx with exponential backoff."""
        openai = self._openai
        attempts = self.retries + 1
        for attempt in range(attempts):
            try:
                return call()
            except openai.APIStatusError as exc:
                if exc.status_code not in _RETRY_STATUS or attempt == attempts - 1:
                    raise self._status_error(what, exc, attempt + 1) from None
            except openai.APIConnectionError as exc:
                reason = _connection_reason(exc)
                if reason == "no data before the read timeout":
                    # The server is there but slow: a retry would only wait longer.
                    raise DriverError(
                        f"{self.base_url} sent nothing for {self._timeout:g} s (the read timeout)"
                    ) from None
                if attempt == attempts - 1:
                    raise DriverError(
                        f"cannot reach {self.base_url}: {reason}"
                        + (f" (after {attempts} tries)" if attempts > 1 else "")
                    ) from None
            self._sleep(self.backoff * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _status_error(self, what: str, exc: Any, tries: int) -> DriverError:
        status = exc.status_code
        message = _server_message(exc)
        where = self.base_url
        if status in (401, 403):
            return DriverError(
                f"{where} refused the API key (HTTP {status}): {message};"
                " set BOSUN_API_KEY or OPENAI_API_KEY"
            )
        if status == 404 and what in ("completions", "chat"):
            other = "completions" if what == "chat" else "chat"
            endpoint = "/chat/completions" if what == "chat" else "/completions"
            return DriverError(
                f"{where} has no {endpoint} endpoint (HTTP 404): {message}; try --wire {other}"
            )
        after = f" after {tries} tries" if tries > 1 else ""
        return DriverError(f"{where} {what} request failed with HTTP {status}{after}: {message}")

    def _check_model(self) -> None:
        """Ask /models once, so a typo in the model name fails before any work starts."""
        not_found = self._openai.NotFoundError

        def listing() -> list[str] | None:
            try:
                return [m.id for m in self.client.models.list().data]
            except not_found:
                return None  # the server keeps no model list; the first request will tell

        names = self._retrying("models", listing)
        self.available = names or []
        if self.available and self.model_name not in self.available:
            have = ", ".join(self.available[:20])
            raise UsageError(
                f"model {self.model_name!r} is not served by {self.base_url};"
                f" it has: {have} (use --model openai:{self.base_url}#NAME)"
            )

    def _stream_events(self, what: str, stream: Any) -> Iterator[Any]:
        """Iterate a server stream, turning transport failures into DriverError."""
        openai = self._openai
        try:
            yield from stream
        except openai.APIStatusError as exc:
            raise self._status_error(what, exc, 1) from None
        except openai.APIError as exc:
            if isinstance(exc, openai.APIConnectionError):
                reason = _connection_reason(exc)
            else:  # an {"error": …} event in the middle of the stream
                reason = _server_message(exc)
            raise DriverError(f"{self.base_url}: the {what} stream broke off: {reason}") from None
        except Exception as exc:
            if not _is_transport_error(exc):
                raise
            raise DriverError(
                f"{self.base_url}: the {what} stream broke off: {_connection_reason(exc)}"
            ) from None
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()

    def _cut_off(self, what: str) -> DriverError:
        return DriverError(
            f"{self.base_url}: the {what} stream ended before the completion finished"
            " (llama-cpp-python's server does this when another request arrives;"
            " start it with --interrupt_requests false)"
        )

    # -- the Driver protocol: bosun renders, the server completes text --

    def stream(
        self,
        prompt: str,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 1024,
        grammar: str | None = None,
    ) -> Iterator[Chunk]:
        """Text completion of a prompt bosun rendered (POST /v1/completions)."""
        extra: dict[str, Any] = {
            # vLLM drops special tokens from text by default, and with them Harmony's
            # channel markers; the parser needs every byte the model wrote.
            "skip_special_tokens": False,
        }
        if grammar is not None:
            extra["grammar"] = grammar  # llama.cpp servers take GBNF in the body
        started = time.perf_counter()

        params: dict[str, Any] = {"stop": list(stop)} if stop else {}

        def create() -> Any:
            return self.client.completions.create(
                model=self.model_name,
                prompt=prompt,
                max_tokens=max_tokens,
                temperature=self.temperature,
                stream=True,
                stream_options={"include_usage": True},
                extra_body=extra,
                **params,
            )

        return self._completion_chunks(self._retrying("completions", create), started)

    def _completion_chunks(self, stream: Any, started: float) -> Iterator[Chunk]:
        finish: str | None = None
        usage: Usage | None = None
        pieces = 0
        for event in self._stream_events("completions", stream):
            usage = _usage_of(event) or usage
            for choice in getattr(event, "choices", None) or ():
                if choice.text:
                    pieces += 1
                    yield Chunk(choice.text)
                if choice.finish_reason:
                    finish = choice.finish_reason
        if finish is None:
            raise self._cut_off("completions")
        yield Chunk("", usage=_finish_usage(usage, pieces, started), finish_reason=_finish(finish))

    # -- chat mode: the server renders and parses tool calls --

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: Sequence[dict[str, Any]] = (),
        *,
        max_tokens: int = 1024,
    ) -> Iterator[ChatChunk]:
        """A chat completion (POST /v1/chat/completions) with the server's tool parser."""
        started = time.perf_counter()
        extra: dict[str, Any] = {}
        if tools:
            extra["tools"] = list(tools)

        def create() -> Any:
            return self.client.chat.completions.create(
                model=self.model_name,
                messages=messages,
                max_tokens=max_tokens,
                temperature=self.temperature,
                stream=True,
                stream_options={"include_usage": True},
                **extra,
            )

        return self._chat_chunks(self._retrying("chat", create), started)

    def _chat_chunks(self, stream: Any, started: float) -> Iterator[ChatChunk]:
        calls = _CallAssembler()
        finish: str | None = None
        usage: Usage | None = None
        pieces = 0
        for event in self._stream_events("chat", stream):
            usage = _usage_of(event) or usage
            for choice in getattr(event, "choices", None) or ():
                delta = choice.delta
                text = getattr(delta, "content", None) or ""
                reasoning = _extra(delta, "reasoning_content") or _extra(delta, "reasoning")
                done: tuple[ToolCall, ...] = ()
                notes: tuple[str, ...] = ()
                parts = getattr(delta, "tool_calls", None) or ()
                for part in parts:
                    finished, problems = calls.feed(part)
                    done, notes = done + finished, notes + problems
                pieces += 1 if text or reasoning or parts else 0
                if text or reasoning or done or notes:
                    yield ChatChunk(
                        text, reasoning if isinstance(reasoning, str) else "", done, notes
                    )
                if choice.finish_reason:
                    finish = choice.finish_reason
        if finish is None:
            raise self._cut_off("chat")
        done, notes = calls.finish(truncated=finish == "length")
        yield ChatChunk(
            calls=done,
            diagnostics=notes,
            usage=_finish_usage(usage, pieces, started),
            finish_reason=_finish(finish),
        )

    def close(self) -> None:
        self.client.close()


class _CallAssembler:
    """Streamed tool-call deltas -> whole ToolCalls.

    Servers send a call as an `index`, then its id and name, then the arguments in
    fragments. A call is complete when a later index starts or the stream finishes;
    only a finish by max_tokens leaves the last one unfinished (DESIGN rule 5: a
    truncated call is never run).
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
            arguments = json.loads(raw) if raw else {}
        except json.JSONDecodeError as exc:
            return (), (f"the arguments of your call to {name} were not valid JSON ({exc.msg})",)
        if not isinstance(arguments, dict):
            return (), (f"the arguments of your call to {name} must be a JSON object",)
        return (ToolCall(slot["id"] or f"call_{self._count}", name, arguments),), ()


# --- usage --------------------------------------------------------------------------


def _extra(obj: Any, key: str) -> Any:
    """A field the OpenAI schema lacks but a server sent (llama.cpp's `timings`,
    `reasoning_content`); the client keeps those as pydantic extras."""
    extra = getattr(obj, "model_extra", None)
    if isinstance(extra, dict) and key in extra:
        return extra[key]
    return getattr(obj, key, None)


def _usage_of(event: Any) -> Usage | None:
    """Usage from a stream event: `usage` (with `prompt_tokens_details.cached_tokens`
    where the server reports the cache, as vLLM and OpenAI do) or llama.cpp's `timings`,
    whose `prompt_n` counts only the prompt tokens it had to evaluate."""
    usage = getattr(event, "usage", None)
    timings = _extra(event, "timings")
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


def _finish_usage(usage: Usage | None, pieces: int, started: float) -> Usage:
    """The stream's usage, or an estimate when the server sent none (llama-cpp-python
    does not stream usage): one streamed piece is one token on llama.cpp servers."""
    out = usage if usage is not None else Usage(completion_tokens=pieces)
    out.ms = (time.perf_counter() - started) * 1000
    return out


def _finish(reason: str) -> str:
    """The runtime only distinguishes a cut-off ("length") from a normal end."""
    return "length" if reason == "length" else "stop"


# --- opening ------------------------------------------------------------------------


def open_openai(spec: str, *, wire: str | None = None, **options: Any) -> OpenAIDriver:
    """The driver for an `openai:URL#MODEL` spec; `wire` defaults to chat."""
    try:
        import openai  # noqa: F401
    except ImportError:
        raise UsageError(
            f"the openai package is not installed; run: pip install openai (into {sys.prefix})"
        ) from None
    chosen = next((w for w in WIRES if w == (wire or "chat")), None)
    if chosen is None:
        raise UsageError(f"unknown --wire {wire!r}: use chat or completions")
    base_url, name = parse_spec(spec)
    return OpenAIDriver(base_url, name, wire=chosen, **options)
