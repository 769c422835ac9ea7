"""A real OTLP/HTTP trace receiver on 127.0.0.1 for the tests: it decodes each
ExportTraceServiceRequest (protobuf) as a collector would and keeps the spans."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    name: str
    span_id: str
    parent_id: str
    trace_id: str
    attributes: dict[str, Any]
    status: int  # 0 unset, 1 ok, 2 error
    start: int
    end: int
    resource: dict[str, Any] = field(default_factory=dict)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _attributes(items: Any) -> dict[str, Any]:
    return {a.key: _value(a.value) for a in items}


class Receiver:
    def __init__(self) -> None:
        self.spans: list[Received] = []
        self.paths: list[str] = []
        self.lock = threading.Lock()
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def by_name(self, prefix: str) -> list[Received]:
        return [s for s in self.spans if s.name.startswith(prefix)]

    def take(self, path: str, body: bytes) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            self.paths.append(path)
            for rs in request.resource_spans:
                resource = _attributes(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(
                            Received(
                                s.name,
                                s.span_id.hex(),
                                s.parent_span_id.hex(),
                                s.trace_id.hex(),
                                _attributes(s.attributes),
                                s.status.code,
                                s.start_time_unix_nano,
                                s.end_time_unix_nano,
                                resource,
                            )
                        )


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            receiver.take(self.path, self.rfile.read(length))
            body = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
