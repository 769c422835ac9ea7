"""What went wrong talking to a server, in a few words: the reason a connection failed,
and the server's own message from an error response (OpenAI, FastAPI and llama.cpp each
nest it differently). Apart from the driver so its request logic reads on its own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from drivers.base import ContextOverflow, DriverError


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cause_chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def connection_reason(exc: BaseException) -> str:
    """Why a connection failed, in a few words ("connection refused")."""
    chain = list(cause_chain(exc))
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
    return one_line(str(inner)) or type(inner).__name__


def server_message(exc: Any) -> str:
    """The server's own words from an error response: OpenAI, FastAPI and llama.cpp
    all nest them differently."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return one_line(error["message"])
        if isinstance(error, str):
            return one_line(error)
        detail = body.get("detail")
        if detail is not None:
            return one_line(detail if isinstance(detail, str) else json.dumps(detail))
    if isinstance(body, str) and body.strip():
        return one_line(body)
    return one_line(getattr(exc, "message", "") or str(exc))


def is_transport_error(exc: BaseException) -> bool:
    """httpx (or the httpx2 fork newer openai releases use) errors that older openai
    versions let escape unwrapped from a stream."""
    return type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2")


# How servers refuse a prompt longer than their window, in their own words: llama-server
# ("the request exceeds the available context size"), vLLM ("This model's maximum
# context length is N tokens"), OpenAI ("context_length_exceeded"), SGLang ("is longer
# than the model's context length").
_OVERFLOW_WORDS = (
    "exceeds the available context size",
    "maximum context length",
    "context_length_exceeded",
    "longer than the model's context length",
)


def is_context_overflow(status: int, message: str) -> bool:
    """A 400 that says the prompt did not fit: compaction can fix it, a retry cannot."""
    text = message.lower()
    return status == 400 and any(words in text for words in _OVERFLOW_WORDS)


def tools_need_jinja(message: str) -> bool:
    """llama-server started without --jinja refuses a request with tools (HTTP 500,
    "tools param requires --jinja flag"): no retry can help, the start flags can."""
    return "--jinja" in message and "tool" in message.lower()


def status_error(where: str, what: str, exc: Any, tries: int) -> DriverError:
    """An error status as the user can act on it: a refused key names the variables
    that set it, a missing endpoint names the other --api."""
    status = exc.status_code
    message = server_message(exc)
    if status in (401, 403):
        return DriverError(
            f"{where} refused the API key (HTTP {status}): {message};"
            " set BOSUN_API_KEY or OPENAI_API_KEY"
        )
    if status == 404 and what in ("completions", "chat"):
        other = "completions" if what == "chat" else "chat"
        endpoint = "/chat/completions" if what == "chat" else "/completions"
        return DriverError(
            f"{where} has no {endpoint} endpoint (HTTP 404): {message}; try --api {other}"
        )
    if tools_need_jinja(message):
        return DriverError(
            f"{where} refused the tools: {message}; start llama-server with --jinja, or"
            " use --api completions, where bosun renders the tools itself"
        )
    if is_context_overflow(status, message):
        return ContextOverflow(f"{where} refused the prompt as too long for its context: {message}")
    after = f" after {tries} tries" if tries > 1 else ""
    return DriverError(f"{where} {what} request failed with HTTP {status}{after}: {message}")
