"""What a server says about the model it serves: the context window, and where that came
from. Without it bosun has no budget for a served model (no result capping, no
compaction), which is what peers' trackers report most about local servers.

Each server says it its own way, and none of them in the OpenAI API:
- llama.cpp's llama-server: `GET /props` → `default_generation_settings.n_ctx` is the
  context of one slot (the server divides `-c` among `-np` slots unless its KV cache is
  unified), `total_slots` how many requests it serves at once;
- vLLM and SGLang: `GET /v1/models` → each model's `max_model_len`;
- LM Studio: `GET /api/v1/models` → the model's `loaded_instances[].config.context_length`
  (0.4 and later), or `GET /api/v0/models/{id}` → `loaded_context_length`: the window it
  loaded the model with, not `max_context_length` (what the model could take);
- Ollama: `POST /api/show {"model": id}` → `model_info["<arch>.context_length"]` (what the
  model was trained for) and `parameters` (a text block; `num_ctx N` when the Modelfile
  sets the window). Without `num_ctx` Ollama runs a small default window (2,048 tokens,
  4,096 in later releases) and silently drops the front of a longer prompt, so where
  bosun talks Ollama's native chat it sends a window of its own (`ollama_window`).

The probes are cheap GETs tried in that order, each bounded by a short timeout; a server
that answers none of them leaves the context unknown, as before. The request shapes are
those the servers document (sources in tests/drivers/test_server_facts.py).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from drivers.base import DriverError

Fetch = Callable[[str, dict[str, Any] | None], Any]  # (url, JSON body or None) -> JSON
OLLAMA_DEFAULT_CTX = 2048  # Ollama's window when neither the request nor the model sets one
# The window bosun asks Ollama for when neither the user nor the Modelfile chose one: one
# a laptop holds, and no more than the model was trained for.
OLLAMA_BOSUN_CTX = 8192
_MAX_BODY = 4 * 1024 * 1024  # bytes of a probe's answer read at most
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.M)


@dataclass(frozen=True)
class ServerContext:
    """The window one request gets, where it was read, and the server's parallel slots."""

    n_ctx: int
    source: str  # e.g. "llama-server /props (per slot)"
    slots: int | None = None
    server: str = ""  # "llama-server", "vllm", "lmstudio", "ollama"
    trained: int | None = None  # Ollama: what the model was trained for, where it says
    modelfile: bool = False  # Ollama: n_ctx is the Modelfile's own num_ctx


def root_of(base_url: str) -> str:
    """The server's root: the OpenAI base URL without its trailing /v1."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def http_json(timeout: float = 3.0, headers: dict[str, str] | None = None) -> Fetch:
    """A fetch over urllib: GET, or POST with a JSON body; None for anything but a JSON
    answer with status 200 (a server without the endpoint is not an error here).
    `headers`: the driver's own (its key), never more."""

    def fetch(url: str, body: dict[str, Any] | None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        sent = {**(headers or {})}
        if body is not None:
            sent["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                if response.status != 200:
                    return None
                return json.loads(response.read(_MAX_BODY + 1)[:_MAX_BODY])
        except (OSError, ValueError, RecursionError, urllib.error.URLError):
            return None  # no answer, or not one bosun can read: nothing learnt

    return fetch


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _llama_server(root: str, fetch: Fetch) -> ServerContext | None:
    props = fetch(f"{root}/props", None)
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    n_ctx = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    if n_ctx is None:
        return None
    slots = _positive(props.get("total_slots"))
    return ServerContext(n_ctx, "llama-server /props (per slot)", slots, "llama-server")


def _models_listing(base_url: str, model: str, fetch: Fetch) -> ServerContext | None:
    listing = fetch(f"{base_url.rstrip('/')}/models", None)
    rows = listing.get("data") if isinstance(listing, dict) else None
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and row.get("id") == model:
            n_ctx = _positive(row.get("max_model_len"))
            if n_ctx is not None:
                return ServerContext(n_ctx, "/v1/models max_model_len", None, "vllm")
    return None


def _lm_studio(root: str, model: str, fetch: Fetch) -> ServerContext | None:
    """The window LM Studio loaded the model with (not `max_context_length`, what the
    model could take: LM Studio loads with less unless told)."""
    listing = fetch(f"{root}/api/v1/models", None)
    rows = listing.get("models") if isinstance(listing, dict) else None
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or row.get("key") != model:
            continue
        instances = row.get("loaded_instances")
        for instance in instances if isinstance(instances, list) else []:
            config = instance.get("config") if isinstance(instance, dict) else None
            n_ctx = _positive(config.get("context_length")) if isinstance(config, dict) else None
            if n_ctx is not None:
                return ServerContext(n_ctx, "LM Studio /api/v1/models (loaded)", None, "lmstudio")
    info = fetch(f"{root}/api/v0/models/{model}", None)
    loaded = _positive(info.get("loaded_context_length")) if isinstance(info, dict) else None
    if loaded is not None:
        return ServerContext(loaded, "LM Studio /api/v0/models (loaded)", None, "lmstudio")
    return None


def _ollama(root: str, model: str, fetch: Fetch) -> ServerContext | None:
    shown = fetch(f"{root}/api/show", {"model": model})
    if not isinstance(shown, dict) or "model_info" not in shown:
        return None
    trained = _trained(shown)
    parameters = shown.get("parameters")
    match = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    if match:
        n_ctx, source = int(match.group(1)), "Ollama /api/show num_ctx"
        return ServerContext(n_ctx, source, None, "ollama", trained, modelfile=True)
    return ServerContext(OLLAMA_DEFAULT_CTX, "Ollama's default window", None, "ollama", trained)


def _trained(shown: dict[str, Any]) -> int | None:
    info = shown.get("model_info")
    if not isinstance(info, dict):
        return None
    lengths = (_positive(v) for k, v in info.items() if k.endswith(".context_length"))
    return next((n for n in lengths if n is not None), None)


def ollama_trained_context(root: str, model: str, fetch: Fetch) -> int | None:
    """What the model behind Ollama was trained for (`<arch>.context_length`): the most
    a request may ask for with `num_ctx`."""
    shown = fetch(f"{root}/api/show", {"model": model})
    return _trained(shown) if isinstance(shown, dict) else None


def ollama_window(found: ServerContext, context_size: int | None) -> ServerContext:
    """The `num_ctx` bosun sends Ollama on every request of a session, where it talks
    Ollama's native chat API: `--context-size` when given, else the Modelfile's num_ctx,
    else the model's trained context up to OLLAMA_BOSUN_CTX (that, where the model does
    not say). One window for the session: Ollama reloads the model when it changes."""
    trained = f" (model trained for {found.trained:,})" if found.trained else ""
    if context_size:
        return replace(
            found, n_ctx=context_size, source=f"--context-size as Ollama num_ctx{trained}"
        )
    if found.modelfile:
        return replace(found, source=f"Ollama Modelfile num_ctx{trained}")
    n_ctx = min(found.trained or OLLAMA_BOSUN_CTX, OLLAMA_BOSUN_CTX)
    return replace(found, n_ctx=n_ctx, source=f"Ollama num_ctx set by bosun{trained}")


# How to have each server parse tool calls itself, for a chat reply whose calls came back
# as text: its documented switches (llama-server README "--jinja"; vLLM "Tool Calling":
# --enable-auto-tool-choice --tool-call-parser; SGLang "Tool Parser": --tool-call-parser).
_PARSER_FIX = {
    "llama-server": "start llama-server with --jinja (it parses calls with the model's template)",
    "vllm": "start vLLM (or SGLang) with --enable-auto-tool-choice --tool-call-parser NAME"
    " (the parser for {format})",
    "ollama": "Ollama parses calls only for models whose template declares tools",
    "lmstudio": "LM Studio parses calls only for models it knows a tool format for",
}


def text_calls_fix(server: str, tool_format: str) -> str:
    """What to change so `server` parses the calls itself; always ends with bosun's own
    way out (--api completions: bosun renders the prompt and parses the text)."""
    fix = _PARSER_FIX.get(server, "").format(format=tool_format)
    way_out = "or use --api completions, where bosun renders and parses the model's format"
    return f"{fix}; {way_out}" if fix else way_out


def exact_count(root: str, prompt: str, fetch: Fetch) -> int | None:
    """How many tokens llama-server makes of `prompt` (`POST /tokenize`, with the special
    tokens a completion adds and parses): the count its usage must match when nothing
    was dropped. None where the server does not answer it."""
    answer = fetch(f"{root}/tokenize", {"content": prompt, "add_special": True})
    tokens = answer.get("tokens") if isinstance(answer, dict) else None
    return len(tokens) if isinstance(tokens, list) else None


_EXACT_SLACK = 2  # tokens: a BOS counted one way and not the other is not a loss


def check_whole(
    base_url: str, server: ServerContext, prompt: str, real: int, headers: dict[str, str]
) -> None:
    """Where the server tokenizes on request (llama-server's /tokenize), the prompt
    tokens it reported must be all of the prompt: fewer means it dropped some, and the
    answer was made without them. Exact, so a small loss is caught too, which the
    estimate-based guard (agent.loop.compact) cannot tell from noise."""
    if server.server != "llama-server" or not real:
        return
    exact = exact_count(root_of(base_url), prompt, http_json(headers=headers))
    if exact and real < exact - _EXACT_SLACK:
        raise DriverError(
            f"{base_url} counted {real:,} prompt tokens of the {exact:,} it was sent"
            " (its own /tokenize): it dropped part of the prompt, so its answer was made"
            " without it; raise the server's context (-c) or give --context-size N"
        )


def detect_context(base_url: str, model: str, fetch: Fetch | None = None) -> ServerContext | None:
    """The context one request to `model` gets on the server at `base_url`, or None."""
    fetch = fetch or http_json()
    root = root_of(base_url)
    return (
        _llama_server(root, fetch)
        or _models_listing(base_url, model, fetch)
        or _lm_studio(root, model, fetch)
        or _ollama(root, model, fetch)
    )
