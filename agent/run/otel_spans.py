"""bosun's event stream as OpenTelemetry spans, sent over OTLP/HTTP (imported only when
telemetry is on: agent.run.telemetry).

    bosun.session                       one session (gen_ai.conversation.id)
      invoke_agent bosun                one request: a prompt to its result
        chat MODEL                      one model call: tokens, finish, time to first chunk
        execute_tool TOOL               one tool call: duration, error, the gate's decision

Names and attributes follow the OpenTelemetry GenAI semantic conventions. A tool call
is a sibling of the model call that asked for it, as those conventions draw an agent:
the model call has ended before the tool runs. Spans are made from the events as they
come, with the start times the events carry (a turn's `ms`, a tool result's `ms`), so
nothing in the loop knows about tracing.

The provider is bosun's own, never the global one: the MCP SDK traces through the
global provider, and its spans are not bosun's to send. A collector that cannot be
reached costs one warning and no time in the run: spans go out from a background
thread, each export has a bounded timeout, and closing waits at most that long.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from agent import __version__
from agent import events as ev
from agent.history import Message, User

EXPORT_TIMEOUT_S = 3.0  # per export, unless OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT says
MAX_ATTRIBUTE_CHARS = 16_000  # one content attribute (a file read) is cut here
AGENT = "bosun"


def _timeout() -> float:
    for name in ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"):
        raw = os.environ.get(name, "").strip()
        try:
            if raw and 0 < float(raw) <= 60:
                return float(raw)
        except ValueError:
            pass
    return EXPORT_TIMEOUT_S


class _OneWarning(SpanExporter):
    """The OTLP exporter, whose failures are said once (not once a batch, not as a
    traceback in the user's terminal)."""

    def __init__(self, inner: SpanExporter, report: Callable[[str], None], where: str) -> None:
        self.inner, self.report, self.where = inner, report, where
        self.warned = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:  # the exporter's own bug must not end bosun's thread
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS and not self.warned:
            self.warned = True
            self.report(f"OpenTelemetry: cannot send spans to {self.where}; they are dropped")
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _endpoint() -> str:
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
    return base.rstrip("/") + "/v1/traces"


class Exporter:
    """bosun's tracer provider and the agents it watches (agent.run.telemetry.Telemetry)."""

    def __init__(self, *, content: bool, report: Callable[[str], None]) -> None:
        # the SDK's own log lines (one per failed batch) would reach the terminal
        quiet = logging.getLogger("opentelemetry")
        quiet.addHandler(logging.NullHandler())
        quiet.propagate = False
        self.content = content
        self.timeout = _timeout()
        given = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": AGENT}
        resource = Resource.create({**given, "service.version": __version__})
        self.provider = TracerProvider(resource=resource)
        where = _endpoint()
        protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
            "OTEL_EXPORTER_OTLP_PROTOCOL", ""
        )
        if protocol.strip() not in ("", "http/protobuf"):
            report(f"OpenTelemetry: OTLP over {protocol} is not supported; sending http/protobuf")
        exporter = OTLPSpanExporter(endpoint=where, timeout=self.timeout)
        self.provider.add_span_processor(
            BatchSpanProcessor(
                _OneWarning(exporter, report, where),
                schedule_delay_millis=1000,
                export_timeout_millis=int(self.timeout * 1000),
            )
        )
        self.tracer = self.provider.get_tracer("bosun", __version__)
        self._streams: list[_Stream] = []
        self._lock = threading.Lock()
        self._report = report
        self._broken = False

    def watch(
        self, emit: ev.Emit, on_message: Callable[[Message], None]
    ) -> tuple[ev.Emit, Callable[[Message], None]]:
        stream = _Stream(self)
        with self._lock:
            self._streams.append(stream)

        def events(event: ev.AgentEvent) -> None:
            self._guard(stream.event, event)
            emit(event)

        def messages(message: Message) -> None:
            on_message(message)
            self._guard(stream.message, message)

        return events, messages

    def _guard(self, take: Callable[[Any], None], item: Any) -> None:
        """A span that cannot be made never stops a run; it is said once."""
        try:
            take(item)
        except Exception as exc:
            if not self._broken:
                self._broken = True
                self._report(f"OpenTelemetry: a span could not be made ({exc}); run goes on")

    def release(self, session_id: str) -> None:
        with self._lock:
            done = [s for s in self._streams if s.session_id == session_id]
            self._streams = [s for s in self._streams if s not in done]
        for stream in done:
            stream.end_session()

    def close(self) -> None:
        with self._lock:
            streams, self._streams = self._streams, []
        for stream in streams:
            stream.end_session()
        self.provider.force_flush(int(self.timeout * 1000))
        self.provider.shutdown()


def _now() -> int:
    return time.time_ns()


class _Stream:
    """One agent's spans: its session, its request, as the events come."""

    def __init__(self, owner: Exporter) -> None:
        self.owner = owner
        self.tracer = owner.tracer
        self.content = owner.content
        self.session: Span | None = None
        self.session_id = ""
        self.model = ""
        self.request: Span | None = None
        self.calls: dict[str, ev.ToolCallEvent] = {}
        self.said: list[str] = []  # the model's text in this model call (content only)

    # --- what comes in ---------------------------------------------------------------

    def event(self, event: ev.AgentEvent) -> None:
        if isinstance(event, ev.SessionStarted):
            self.start_session(event)
        elif isinstance(event, ev.TextDelta) and self.content:
            self.said.append(event.text)
        elif isinstance(event, ev.TurnFinished):
            self.model_call(event)
        elif isinstance(event, ev.ToolCallEvent):
            self.calls[event.id] = event
        elif isinstance(event, ev.ToolResultEvent):
            self.tool_call(event)
        elif isinstance(event, ev.Compaction):
            self.open_request().add_event(
                "compaction",
                {
                    "bosun.tokens_before": event.tokens_before,
                    "bosun.tokens_after": event.tokens_after,
                },
            )
        elif isinstance(event, ev.RunFinished):
            self.end_request(event)

    def message(self, message: Message) -> None:
        """A user's message opens a request (the first after the last result)."""
        if isinstance(message, User) and self.request is None:
            span = self.open_request()
            if self.content:
                span.set_attribute("gen_ai.input.messages", _messages("user", message.content))

    # --- spans -----------------------------------------------------------------------

    def start_session(self, event: ev.SessionStarted) -> None:
        self.end_session()
        self.session_id, self.model = event.id, event.model
        attributes: dict[str, Any] = {
            "gen_ai.agent.name": AGENT,
            "gen_ai.conversation.id": event.id,
            "gen_ai.request.model": event.model,
            "bosun.workspace": event.workspace,
        }
        if event.context is not None:
            attributes["bosun.context_tokens"] = event.context
        self.session = self.tracer.start_span("bosun.session", attributes=attributes)

    def end_session(self) -> None:
        if self.request is not None:  # a session that ends mid-request (a crash, a kill)
            self.request.set_status(Status(StatusCode.ERROR, "the session ended mid-request"))
            self.request.end()
            self.request = None
        if self.session is not None:
            self.session.end()
            self.session = None

    def _under(self, span: Span | None) -> Any:
        return trace.set_span_in_context(span) if span is not None else None

    def open_request(self, start: int | None = None) -> Span:
        if self.request is None:
            self.request = self.tracer.start_span(
                f"invoke_agent {AGENT}",
                context=self._under(self.session),
                kind=SpanKind.INTERNAL,
                start_time=start,
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": AGENT,
                    "gen_ai.conversation.id": self.session_id,
                    "gen_ai.request.model": self.model,
                },
            )
        return self.request

    def model_call(self, event: ev.TurnFinished) -> None:
        end = _now()
        model = event.model or self.model
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.usage.input_tokens": event.prompt_tokens,
            "gen_ai.usage.output_tokens": event.completion_tokens,
            "gen_ai.usage.cache_read.input_tokens": event.cached_tokens,
        }
        if event.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = [event.finish_reason]
        if event.ttft_ms is not None:
            attributes["gen_ai.response.time_to_first_chunk"] = event.ttft_ms / 1000
        if self.content and self.said:
            attributes["gen_ai.output.messages"] = _messages("assistant", "".join(self.said))
        self.said = []
        # a backend's own `ms` may start after bosun's clock for the first chunk did
        start = end - max(event.ms, event.ttft_ms or 0) * 1_000_000
        span = self.tracer.start_span(
            f"chat {model}",
            context=self._under(self.open_request(start)),
            kind=SpanKind.CLIENT,
            start_time=start,
            attributes=attributes,
        )
        if event.finish_reason == "interrupted":
            span.set_status(Status(StatusCode.ERROR, "interrupted"))
        span.end(end)

    def tool_call(self, event: ev.ToolResultEvent) -> None:
        end = _now()
        call = self.calls.pop(event.id, None)
        name = event.name or (call.name if call is not None else "unknown")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": event.id,
            "bosun.tool.decision": event.decision,
        }
        if self.content:
            if call is not None:
                attributes["gen_ai.tool.call.arguments"] = _cut(json.dumps(call.arguments))
            attributes["gen_ai.tool.call.result"] = _cut(event.content)
        if event.is_error:
            allowed = event.decision in ("allowed", "")
            attributes["error.type"] = "tool_error" if allowed else event.decision
        span = self.tracer.start_span(
            f"execute_tool {name}",
            context=self._under(self.open_request(end - event.ms * 1_000_000)),
            start_time=end - event.ms * 1_000_000,
            attributes=attributes,
        )
        if event.is_error:  # the words are the tool's output: content, not a status
            span.set_status(Status(StatusCode.ERROR))
        span.end(end)

    def end_request(self, event: ev.RunFinished) -> None:
        span = self.open_request(_now() - event.duration_ms * 1_000_000)
        status = str(event.status)
        span.set_attributes(
            {
                "bosun.status": status,
                "bosun.turns": event.turns,
                "bosun.tool_calls": event.tool_calls,
                "gen_ai.usage.input_tokens": event.prompt_tokens,
                "gen_ai.usage.output_tokens": event.completion_tokens,
                "gen_ai.usage.cache_read.input_tokens": event.cached_tokens,
            }
        )
        if self.content and event.final_text:
            span.set_attribute("gen_ai.output.messages", _messages("assistant", event.final_text))
        if status == "error":
            span.set_attribute("error.type", "bosun_error")
            span.set_status(Status(StatusCode.ERROR, event.error or "error"))
        span.end()
        self.request = None


def _cut(text: str) -> str:
    return text if len(text) <= MAX_ATTRIBUTE_CHARS else text[:MAX_ATTRIBUTE_CHARS] + "…"


def _messages(role: str, text: str) -> str:
    """GenAI conventions' message shape, as the JSON string a span attribute holds."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": _cut(text)}]}])
