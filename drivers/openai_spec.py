"""The `openai:URL#MODEL` spec and the key: what the user typed, checked before any
connection is made, apart from the driver so both read on their own."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from drivers.base import UsageError

DUMMY_KEY = "sk-no-key-needed"  # local servers ignore it; the client refuses an empty one
EXAMPLE = "openai:http://localhost:8080/v1#qwen3-8b"


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
