"""Any OpenAI-compatible server (llama-server, vLLM, SGLang, llama-cpp-python's server).

Two APIs (`--api`), because servers differ in what they get right:
- `completions`: bosun renders the prompt with its own templates and parses the text,
  exactly as with the in-process driver, so the wire remap, salvage and Harmony all
  apply. This is the `Driver.stream` protocol over /v1/completions.
- `chat` (the default): the server applies its chat template and tool parser. Structured
  `tool_calls` are taken as they come (already parsed, nothing to repair); text content
  still goes through bosun's parser, so a model that writes calls as prose is salvaged.

Ollama under `chat` gets its native /api/chat, the one API taking the window bosun plans
for (drivers/ollama_chat.py says why `completions` keeps /v1 and Ollama's own window).

Retries are bounded and only happen before the first byte of a completion reaches the
caller: once text has been streamed out, a retry would duplicate it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, Literal, TypeVar

from drivers.base import (
    ChatChunk,
    Chunk,
    DriverError,
    DriverInfo,
    Halt,
    RawCall,
    Request,
    Usage,
    UsageError,
    halting,
    interrupted,
    never,
)
from drivers.ollama_chat import OllamaChat
from drivers.openai_errors import (
    connection_reason,
    is_transport_error,
    server_message,
    status_error,
    tools_need_jinja,
)
from drivers.openai_spec import DUMMY_KEY, api_key, parse_spec
from drivers.openai_wire import (
    CallAssembler,
    extra_field,
    finish_reason_of,
    finish_usage,
    progress_of,
    usage_of,
)
from drivers.server_facts import check_whole, detect_context, http_json, ollama_window, root_of

__all__ = ["DUMMY_KEY", "OpenAIDriver", "api_key", "open_openai", "parse_spec"]

Api = Literal["chat", "completions"]
APIS: tuple[Api, ...] = ("chat", "completions")
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_T = TypeVar("_T")


# --- the driver ---------------------------------------------------------------------


class OpenAIDriver:
    """One OpenAI-compatible server and one model on it.

    `info.chat` tells the agent which method to call; both always work, so a caller
    that only knows `stream` still runs (over /v1/completions). The client is shared by
    concurrent tasks: the HTTP connection pool is thread-safe and the driver keeps no
    per-request state on itself.
    """

    def __init__(
        self,
        base_url: str,
        model_name: str,
        *,
        api: Api = "chat",
        key: str | None = None,
        timeout: float | None = 600.0,  # None: wait as long as the server takes
        connect_timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.5,
        temperature: float = 0.0,
        max_concurrency: int = 32,
        check_model: bool = True,
        probe_context: bool = True,
        context_size: int | None = None,  # --context-size: Ollama's num_ctx under chat
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if api not in APIS:
            raise UsageError(f"unknown --api {api!r}: use chat or completions")
        import openai

        self._openai = openai
        self.base_url = base_url
        self.model_name = model_name
        # The full spec, not the bare name: render() resolves capabilities from it and
        # session files record where the completions came from.
        self.model = f"openai:{base_url}#{model_name}"
        self.api: Api = api
        self.info = DriverInfo(
            # Only /v1/completions takes a GBNF grammar (llama.cpp servers, in the body).
            grammar=api == "completions",
            chat=api == "chat",
            max_concurrency=max_concurrency,
            server_counts=True,  # its usage is the server's count of what it took in
            # n_params unknown over HTTP: --constrain auto stays off
        )
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
        # What the server says of its window (and slots): asked once, after the model
        # and the key were accepted, with the same key; nothing is assumed of a server
        # that does not say (agent.run.assemble then has no budget).
        probe = http_json(headers=self._auth())
        self.server = detect_context(base_url, model_name, probe) if probe_context else None
        self.ollama: OllamaChat | None = None
        if self.server is not None and self.server.server == "ollama" and api == "chat":
            self.server = ollama_window(self.server, context_size)
            self.ollama = OllamaChat(
                root_of(base_url), model_name, self.server.n_ctx, base_url, temperature,
                timeout, connect_timeout, self._auth(), self.retries, backoff, sleep,
            )  # fmt: skip
        if (found := self.server) is not None:
            most = min(max_concurrency, found.slots or max_concurrency)
            self.info = replace(self.info, n_ctx=found.n_ctx, max_concurrency=most)
            self.info = replace(self.info, context_source=found.source, server=found.server)
        # Prefill reports are asked of llama-server alone: a stricter server (OpenAI's
        # own) answers a field it does not know with HTTP 400.
        llama = self.server is not None and self.server.server == "llama-server"
        self.extra: dict[str, Any] = {"return_progress": True} if llama else {}

    # -- plumbing --

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.client.api_key}"}

    def _retrying(self, what: str, call: Callable[[], _T]) -> _T:
        """Run `call`, retrying connection errors, 429 and 5xx with exponential backoff."""
        openai = self._openai
        attempts = self.retries + 1
        for attempt in range(attempts):
            try:
                return call()
            except openai.APIStatusError as exc:
                final = tools_need_jinja(server_message(exc)) or attempt == attempts - 1
                if exc.status_code not in _RETRY_STATUS or final:
                    raise status_error(self.base_url, what, exc, attempt + 1) from None
            except openai.APIConnectionError as exc:
                reason = connection_reason(exc)
                if reason == "no data before the read timeout":
                    # The server is there but slow: a retry would only wait longer.
                    raise DriverError(
                        f"{self.base_url} sent nothing for {self._timeout or 0:g} s (a long"
                        " prompt's prefill can take that long: --request-timeout SECONDS|off)"
                    ) from None
                if attempt == attempts - 1:
                    raise DriverError(
                        f"cannot reach {self.base_url}: {reason}"
                        + (f" (after {attempts} tries)" if attempts > 1 else "")
                    ) from None
            self._sleep(self.backoff * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

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
            raise status_error(self.base_url, what, exc, 1) from None
        except openai.APIError as exc:
            if isinstance(exc, openai.APIConnectionError):
                reason = connection_reason(exc)
            else:  # an {"error": …} event in the middle of the stream
                reason = server_message(exc)
            raise DriverError(f"{self.base_url}: the {what} stream broke off: {reason}") from None
        except Exception as exc:
            if not is_transport_error(exc):
                raise
            raise DriverError(
                f"{self.base_url}: the {what} stream broke off: {connection_reason(exc)}"
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

    # -- TextDriver: bosun renders, the server completes text --

    def stream(self, request: Request, *, halt: Halt = never) -> Iterator[Chunk]:
        """Text completion of a prompt bosun rendered (POST /v1/completions). The
        request's data spans and head are not ours to use: the server tokenizes, and
        keeps its own prompt cache."""
        # vLLM drops special tokens from text by default, and with them Harmony's
        # channel markers; the parser needs every byte the model wrote.
        extra: dict[str, Any] = {"skip_special_tokens": False, **self.extra}
        if request.grammar is not None:
            extra["grammar"] = request.grammar  # llama.cpp servers take GBNF in the body
        started = time.perf_counter()

        params: dict[str, Any] = {"stop": list(request.stop)} if request.stop else {}

        def create() -> Any:
            return self.client.completions.create(
                model=self.model_name,
                prompt=request.prompt,
                max_tokens=request.max_tokens,
                temperature=self.temperature,
                stream=True,
                stream_options={"include_usage": True},
                extra_body=extra,
                **params,
            )

        stream = self._retrying("completions", create)
        chunks = self._completion_chunks(stream, started, request.prompt)
        return halting(chunks, halt, interrupted)

    def _completion_chunks(self, stream: Any, started: float, prompt: str) -> Iterator[Chunk]:
        finish: str | None = None
        usage: Usage | None = None
        pieces = 0
        for event in self._stream_events("completions", stream):
            usage = usage_of(event) or usage
            if not pieces and (progress := progress_of(event)) is not None:
                yield Chunk("", progress=progress)
            for choice in getattr(event, "choices", None) or ():
                if choice.text:
                    pieces += 1
                    yield Chunk(choice.text)
                if choice.finish_reason:
                    finish = choice.finish_reason
        if finish is None:
            raise self._cut_off("completions")
        if self.server is not None and usage is not None:
            check_whole(self.base_url, self.server, prompt, usage.prompt_tokens, self._auth())
        yield Chunk(
            "", usage=finish_usage(usage, pieces, started), finish_reason=finish_reason_of(finish)
        )

    # -- ChatDriver: the server renders and parses tool calls --

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: Sequence[dict[str, Any]] = (),
        *,
        max_tokens: int = 1024,
        halt: Halt = never,
    ) -> Iterator[ChatChunk]:
        """A chat completion (/v1/chat/completions, Ollama's /api/chat): server-parsed calls."""
        if self.ollama is not None:
            native = self.ollama.chat(messages, tools, max_tokens=max_tokens)
            return halting(native, halt, _chat_interrupted)
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
                extra_body=self.extra,
                **extra,
            )

        chunks = self._chat_chunks(self._retrying("chat", create), started)
        return halting(chunks, halt, _chat_interrupted)

    def _chat_chunks(self, stream: Any, started: float) -> Iterator[ChatChunk]:
        calls = CallAssembler()
        finish: str | None = None
        usage: Usage | None = None
        pieces = 0
        for event in self._stream_events("chat", stream):
            usage = usage_of(event) or usage
            if not pieces and (progress := progress_of(event)) is not None:
                yield ChatChunk(progress=progress)
            for choice in getattr(event, "choices", None) or ():
                delta = choice.delta
                text = getattr(delta, "content", None) or ""
                reasoning = extra_field(delta, "reasoning_content") or extra_field(
                    delta, "reasoning"
                )
                done: tuple[RawCall, ...] = ()
                parts = getattr(delta, "tool_calls", None) or ()
                for part in parts:
                    done += calls.feed(part)
                pieces += 1 if text or reasoning or parts else 0
                if text or reasoning or done:
                    yield ChatChunk(text, reasoning if isinstance(reasoning, str) else "", done)
                if choice.finish_reason:
                    finish = choice.finish_reason
        if finish is None:
            raise self._cut_off("chat")
        yield ChatChunk(
            calls=calls.finish(truncated=finish == "length"),
            usage=finish_usage(usage, pieces, started),
            finish_reason=finish_reason_of(finish),
        )

    def close(self) -> None:
        self.client.close()


def _chat_interrupted(pieces: int) -> ChatChunk:
    return ChatChunk(usage=Usage(completion_tokens=pieces), finish_reason="interrupted")


# --- opening ------------------------------------------------------------------------


def open_openai(spec: str, *, api: str | None = None, **options: Any) -> OpenAIDriver:
    """The driver for an `openai:URL#MODEL` spec; `api` defaults to chat."""
    try:
        import openai  # noqa: F401
    except ImportError:
        raise UsageError(
            f"the openai package is not installed; run: pip install openai (into {sys.prefix})"
        ) from None
    chosen = next((a for a in APIS if a == (api or "chat")), None)
    if chosen is None:
        raise UsageError(f"unknown --api {api!r}: use chat or completions")
    base_url, name = parse_spec(spec)
    return OpenAIDriver(base_url, name, api=chosen, **options)
