"""Whether a run exports OpenTelemetry spans, decided once where a face assembles.

On when the user asked for it: `otel = true` in their config, or the standard OTLP
endpoint variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
off whatever else says so when OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
Contents (prompts, replies, tool arguments and results) only with `otel_content = true`
or OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.

This module is light on purpose: the OpenTelemetry SDK (agent.run.otel_spans) is
imported only when telemetry is on, so a run without it starts as fast as before and
never loads an `opentelemetry` module.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from agent import events as ev
from agent.history import Message

if TYPE_CHECKING:
    from agent.run.settings import Settings

_YES = frozenset({"true", "1", "yes", "on"})
ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def _env(name: str) -> str:
    return os.environ.get(name, "").strip().lower()


def telemetry_on(settings: Settings) -> bool:
    if _env("OTEL_SDK_DISABLED") == "true" or _env("OTEL_TRACES_EXPORTER") == "none":
        return False
    return settings.otel or any(os.environ.get(name, "").strip() for name in ENDPOINTS)


def content_on(settings: Settings) -> bool:
    return settings.otel_content or _env(CONTENT) in _YES


class Telemetry(Protocol):
    """What an assembly asks of the exporter (agent.run.otel_spans.Exporter)."""

    def watch(
        self, emit: ev.Emit, on_message: Callable[[Message], None]
    ) -> tuple[ev.Emit, Callable[[Message], None]]:
        """One agent's event stream and messages, passed on and turned into spans."""
        ...

    def release(self, session_id: str) -> None:
        """The session's span ends now (its face is done with it)."""
        ...

    def close(self) -> None:
        """Every open span ends and what is buffered is sent, within a bounded time."""
        ...


def open_telemetry(settings: Settings, report: Callable[[str], None]) -> Telemetry | None:
    """The exporter when telemetry is on; None when off (nothing imported), and None
    with one line from `report` when it is on but the `otel` extra is not installed."""
    if not telemetry_on(settings):
        return None
    try:
        from agent.run.otel_spans import Exporter
    except ImportError:
        report(
            "OpenTelemetry is on but its packages are missing"
            " (pip install 'bosun[otel]'); no spans are sent"
        )
        return None
    return Exporter(content=content_on(settings), report=report)
