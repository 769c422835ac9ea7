"""Ollama's native chat API (`POST /api/chat`), for one reason: it is the only way to
give a request the context window bosun plans for. Ollama's OpenAI-compatible
/v1/chat/completions takes no `num_ctx`, so a model runs in Ollama's small default
window and silently loses the front of a longer prompt; /api/chat takes
`"options": {"num_ctx": N}` (what aider does too).

The window is fixed per session (chosen once, in drivers/server_facts.py): Ollama
reloads the model whenever `num_ctx` changes, so a window per request would reload it
every turn. Messages go in OpenAI's shape and are converted here; the stream is NDJSON,
one object a line, the last with `"done": true` and the token counts. Shapes are those
of Ollama's docs/api.md (github.com/ollama/ollama). Stdlib HTTP only: nothing to import
for `bosun --help`, and the read bounds are ours.

Only `--api chat` comes here. Under `--api completions` bosun renders the prompt itself and
needs raw text completion, which /api/chat is not; that stays on Ollama's /v1/completions
with the window Ollama says it has (a third API, /api/generate's raw mode, for one server
was not worth it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.client import HTTPConnection, HTTPException, HTTPResponse, HTTPSConnection
from typing import Any
from urllib.parse import urlsplit

from drivers.base import ChatChunk, DriverError, RawCall, Usage
from drivers.openai_errors import connection_reason, one_line

MAX_LINE = 8 * 1024 * 1024  # bytes of one stream line read at most
_MAX_ERROR = 64 * 1024  # bytes of an error answer read at most
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


def ollama_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-shape messages (agent.protocol.dialect.chat_messages) in Ollama's shape:
    call arguments as an object, not JSON text; reasoning as `thinking`; a tool result
    names its tool (`tool_name`), which Ollama's templates print, where OpenAI has an id."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        shaped: dict[str, Any] = {
            "role": message.get("role"),
            "content": content if isinstance(content, str) else "",
        }
        reasoning = message.get("reasoning_content") or message.get("thinking")
        if isinstance(reasoning, str) and reasoning:
            shaped["thinking"] = reasoning
        calls = []
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            name = function.get("name") or ""
            names[str(call.get("id", ""))] = name
            calls.append({"function": {"name": name, "arguments": _object(function)}})
        if calls:
            shaped["tool_calls"] = calls
        if message.get("role") == "tool":
            name = message.get("name") or names.get(str(message.get("tool_call_id", "")))
            if name:
                shaped["tool_name"] = name
        out.append(shaped)
    return out


def _object(function: dict[str, Any]) -> dict[str, Any]:
    """Arguments as the object Ollama requires (a string there is a 400); text that is
    not an object (never what bosun records) goes as an empty one."""
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return {}
    return arguments if isinstance(arguments, dict) else {}


class _Unreachable(Exception):
    """The request never reached Ollama (refused, reset, no route): worth a retry."""


@dataclass
class OllamaChat:
    """One model on one Ollama server, with the window fixed for the session.
    `where` names the server in errors as the OpenAI driver does (its /v1 URL), so a
    user sees the same words whichever API carried the request."""

    root: str  # the server's root, without /v1
    model: str
    num_ctx: int
    where: str = ""
    temperature: float = 0.0
    timeout: float | None = 600.0  # None: wait as long as the server takes
    connect_timeout: float = 10.0
    headers: dict[str, str] = field(default_factory=dict)
    retries: int = 0
    backoff: float = 0.5
    sleep: Callable[[float], None] = time.sleep

    def body(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]], max_tokens: int
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": ollama_messages(messages)}
        body["stream"] = True
        body["options"] = {"num_ctx": self.num_ctx, "num_predict": max_tokens}
        body["options"]["temperature"] = self.temperature
        if tools:
            body["tools"] = list(tools)  # Ollama takes OpenAI's function specs as they are
        return body

    def chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] = (),
        *,
        max_tokens: int = 1024,
    ) -> Iterator[ChatChunk]:
        """Send the request now (retried only before its first byte arrives, so nothing
        streamed out is ever repeated) and stream its answer."""
        started = time.perf_counter()
        data = json.dumps(self.body(messages, tools, max_tokens)).encode()
        attempts = max(0, self.retries) + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                conn, response = self._post(data)
            except _Unreachable as exc:
                if last:
                    tries = f" (after {attempts} tries)" if attempts > 1 else ""
                    raise DriverError(f"cannot reach {self.where}: {exc}{tries}") from None
            else:
                if response.status == 200:
                    return self._chunks(conn, response, started)
                error = self._status_error(response, attempt + 1)
                conn.close()
                if response.status not in _RETRY_STATUS or last:
                    raise error
            self.sleep(self.backoff * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _post(self, data: bytes) -> tuple[HTTPConnection, HTTPResponse]:
        parts = urlsplit(self.root)
        kind = HTTPSConnection if parts.scheme == "https" else HTTPConnection
        conn = kind(parts.hostname or "", parts.port, timeout=self.connect_timeout)
        headers = {**self.headers, "Content-Type": "application/json"}
        try:
            conn.connect()
        except OSError as exc:
            conn.close()
            timed_out = isinstance(exc, TimeoutError)
            reason = "connection timed out" if timed_out else connection_reason(exc)
            raise _Unreachable(reason) from None
        try:
            if conn.sock is not None:
                conn.sock.settimeout(self.timeout)
            conn.request("POST", f"{parts.path.rstrip('/')}/api/chat", data, headers)
            return conn, conn.getresponse()
        except TimeoutError:
            conn.close()  # the server is there but slow: a retry would only wait longer
            raise DriverError(
                f"{self.where} sent nothing for {self.timeout or 0:g} s (a long"
                " prompt's prefill can take that long: --request-timeout SECONDS|off)"
            ) from None
        except (OSError, HTTPException) as exc:
            conn.close()
            raise _Unreachable(connection_reason(exc)) from None

    def _status_error(self, response: HTTPResponse, tries: int) -> DriverError:
        """Ollama's own words: an error answer is `{"error": "…"}`."""
        try:
            raw = response.read(_MAX_ERROR)
            answer = json.loads(raw)
        except (OSError, HTTPException):
            raw, answer = b"", None
        except (ValueError, RecursionError):
            answer = None
        message = answer.get("error") if isinstance(answer, dict) else None
        text = one_line(message if isinstance(message, str) else raw.decode("utf-8", "replace"))
        after = f" after {tries} tries" if tries > 1 else ""
        return DriverError(
            f"{self.where} chat request failed with HTTP {response.status}{after}: {text}"
        )

    def _chunks(
        self, conn: HTTPConnection, response: HTTPResponse, started: float
    ) -> Iterator[ChatChunk]:
        """The NDJSON stream as ChatChunks; the connection is closed however it ends
        (a halt closes this generator, which cancels the request on Ollama's side)."""
        calls = 0
        try:
            while True:
                line = self._line(response)
                if not line:
                    raise DriverError(
                        f"{self.where}: the chat stream ended before the completion finished"
                    )
                if not line.strip():
                    continue
                event = self._event(line)
                text, thinking, raw = _message(event.get("message"))
                found = []
                for name, arguments in raw:
                    calls += 1
                    found.append(RawCall(f"call_{calls}", name, arguments))
                if event.get("done") is not True:
                    if text or thinking or found:
                        yield ChatChunk(text, thinking, tuple(found))
                    continue
                # prompt_eval_count is the whole prompt, cached part included (Ollama
                # PR 5371); prompt_eval_cached_count, where sent, the cached part.
                usage = Usage(
                    prompt_tokens=_count(event, "prompt_eval_count"),
                    cached_tokens=_count(event, "prompt_eval_cached_count"),
                    completion_tokens=_count(event, "eval_count"),
                    ms=(time.perf_counter() - started) * 1000,
                )
                finish = "length" if event.get("done_reason") == "length" else "stop"
                yield ChatChunk(text, thinking, tuple(found), usage, finish)
                return
        finally:
            response.close()
            conn.close()

    def _line(self, response: HTTPResponse) -> bytes:
        try:
            line = response.readline(MAX_LINE + 1)
        except (OSError, HTTPException) as exc:
            timed_out = isinstance(exc, TimeoutError)
            reason = "no data before the read timeout" if timed_out else connection_reason(exc)
            raise DriverError(f"{self.where}: the chat stream broke off: {reason}") from None
        if len(line) > MAX_LINE:
            raise DriverError(f"{self.where}: a chat stream line is over {MAX_LINE >> 20} MB")
        return line

    def _event(self, line: bytes) -> dict[str, Any]:
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            event = None
        if not isinstance(event, dict):
            raise DriverError(f"{self.where}: a chat stream line is not a JSON object")
        if "error" in event:  # Ollama reports a failure mid-stream this way
            reason = one_line(str(event["error"]))
            raise DriverError(f"{self.where}: the chat stream broke off: {reason}")
        return event


def _count(event: dict[str, Any], key: str) -> int:
    value = event.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DriverError(f"Ollama's chat stream has a bad {key}: {one_line(repr(value), 60)}")
    return value


def _message(message: Any) -> tuple[str, str, list[tuple[str, str]]]:
    """(content, thinking, [(tool name, arguments as JSON text)]) of one line's message;
    anything not of Ollama's documented types is an error, never a guess."""
    if message is None:
        return "", "", []
    if not isinstance(message, dict):
        raise DriverError("Ollama's chat stream has a message that is not an object")
    text, thinking = message.get("content") or "", message.get("thinking") or ""
    if not isinstance(text, str) or not isinstance(thinking, str):
        raise DriverError("Ollama's chat stream has content or thinking that is not text")
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        arguments = function.get("arguments", {}) if isinstance(function, dict) else None
        if not isinstance(name, str) or not isinstance(arguments, dict | str):
            raise DriverError("Ollama's chat stream has a tool call bosun cannot read")
        text_args = arguments if isinstance(arguments, str) else json.dumps(arguments)
        calls.append((name, text_args))
    return text, thinking, calls
