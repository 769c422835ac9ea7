"""Opening a model: its profile first (a bad file or capabilities.toml fails before seconds
of loading), then the driver with only the options its kind takes. Every face and a batch's
remote workers open models through here, so a server never gets an in-process option.
"""

from __future__ import annotations

from typing import Any

from agent.errors import UsageError
from agent.protocol.gguf import GGUFError
from agent.protocol.profile import ModelProfile, profile_for
from agent.session import bosun_home
from drivers import llama_log, open_driver
from drivers.base import Driver

__all__ = ["open_model", "profile_of"]


def profile_of(model: str) -> ModelProfile:
    """The model's profile, resolved before anything is loaded (this also validates
    capabilities.toml and reads the GGUF's metadata); a bad model file is a usage error."""
    try:
        return profile_for(model)
    except GGUFError as exc:
        raise UsageError(f"cannot read model {model}: {exc}") from None


def open_model(
    spec: str,
    *,
    api: str | None = None,
    context_size: int | None = None,
    keyless: bool = False,
    request_timeout: float | None = 600.0,
    threads: int | None = None,
    speculate: str = "auto",
) -> tuple[Driver, ModelProfile]:
    """The driver for `spec` and the profile of the model behind it. The profile comes
    first: a bad model file or capabilities.toml fails before seconds of loading.
    `keyless`: a server the user did not choose (a workspace file did) gets a
    placeholder key, never BOSUN_API_KEY / OPENAI_API_KEY. `threads`: the in-process
    model's CPU threads (None: every core; a batch's Ray actor takes its share).
    `speculate` is for the in-process model only (a server speculates by its own
    settings: README)."""
    profile = profile_of(spec)
    local = not spec.lower().startswith("openai:")  # a server sets its own context
    options: dict[str, Any] = {"n_ctx": context_size} if context_size and local else {}
    if threads and local and not spec.lower().startswith("scripted:"):
        options["n_threads"] = threads
    if keyless and not local:
        from drivers.openai_http import DUMMY_KEY

        options["key"] = DUMMY_KEY
    if not local:  # a slow prefill on a big prompt may take minutes before a first byte
        options["timeout"] = request_timeout
    if context_size and not local:  # Ollama's num_ctx (other servers set their own)
        options["context_size"] = context_size
    if local and not spec.lower().startswith("scripted:"):
        options["speculate"] = speculate
    if local:
        llama_log.send_to(bosun_home() / "logs" / "llama.log")  # not into the terminal
    return open_driver(spec, api=api, **options), profile
