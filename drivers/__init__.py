"""Model backends. Each speaks prompt text in, text chunks out (see drivers.base).

`open_driver` maps a --model string to a backend and imports that backend only when it
is chosen, so `bosun --help` never pays for llama_cpp or openai.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from drivers.base import Driver, UsageError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$", re.S)
SCHEMES = ("scripted", "openai")


def open_driver(spec: str, *, api: str | None = None, **options: Any) -> Driver:
    """A driver for `spec`: scripted:FILE, openai:URL#MODEL, a GGUF path or a bundled name.

    `api` (chat | completions) only means something for a server; elsewhere bosun
    always renders the prompt itself.
    """
    if api is not None and not spec.lower().startswith("openai:"):
        raise UsageError(f"--api is for openai: models; {spec} is rendered by bosun itself")
    match = _SCHEME.match(spec)
    if match and len(match.group(1)) > 1 and not Path(spec).exists():
        scheme, rest = match.group(1).lower(), match.group(2)
        if scheme == "scripted":
            from drivers.scripted import ScriptedDriver

            if not rest:
                raise UsageError("scripted: needs a file, as in --model scripted:demo.jsonl")
            return ScriptedDriver(rest, model=f"scripted:{Path(rest).name}", **options)
        if scheme == "openai":
            from drivers.openai_http import open_openai

            return open_openai(spec, api=api, **options)
        raise UsageError(
            f"unknown model scheme {scheme!r}: use a GGUF path, a bundled model name,"
            " openai:URL#MODEL or scripted:FILE.jsonl"
        )
    from drivers.llama_cpp import open_llama

    return open_llama(spec, **options)
