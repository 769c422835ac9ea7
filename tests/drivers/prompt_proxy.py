"""A proxy to a real server that rewrites every completion prompt on its way through,
as a server with too small a window does behind HTTP 200; everything else (/props,
/tokenize, /models) passes untouched, as on a server that trims internally."""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Proxy(BaseHTTPRequestHandler):
    upstream = ""
    edit: Callable[[str], str] = staticmethod(lambda prompt: prompt)

    def log_message(self, *args: object) -> None:
        return None

    def _forward(self, body: bytes | None) -> None:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        request = urllib.request.Request(self.upstream + self.path, data=body, headers=headers)
        with urllib.request.urlopen(request, timeout=300) as reply:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.headers.get("Content-Type", "application/json"))
            self.end_headers()
            while chunk := reply.readline():
                self.wfile.write(chunk)
                self.wfile.flush()

    def do_GET(self) -> None:
        self._forward(None)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.path.endswith("/completions") and isinstance(body.get("prompt"), str):
            body["prompt"] = type(self).edit(body["prompt"])
        self._forward(json.dumps(body).encode())


@contextlib.contextmanager
def prompt_proxy(server: str, edit: Callable[[str], str]) -> Iterator[str]:
    """`server`'s /v1 URL behind a loopback proxy that applies `edit` to completion
    prompts; yields the proxy's /v1 URL."""
    upstream = server.removesuffix("/v1")
    handler = type("Handler", (_Proxy,), {"upstream": upstream, "edit": staticmethod(edit)})
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    proxy.daemon_threads = True
    threading.Thread(target=proxy.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{proxy.server_address[1]}/v1"
    finally:
        proxy.shutdown()
        proxy.server_close()
