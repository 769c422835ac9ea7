"""Against llama.cpp's own llama-server (built by `install.sh --dev`), on 127.0.0.1 with
the bundled SmolLM2: the context comes from the server's `/props`, a file larger than
that context is read with its result capped to fit, and a server that drops the front
of the prompt (a proxy that does what Ollama's window does) ends the run with the
truncation error instead of a wrong answer.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.openai_servers import MODEL_ALIAS, real_llama_server

pytest.importorskip("openai")
pytestmark = pytest.mark.model
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with real_llama_server(tmp_path_factory.mktemp("llama-server") / "log", n_ctx=1536) as url:
        yield url


def bosun(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


def events_of(out: subprocess.CompletedProcess[str]) -> list[dict]:
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def test_the_context_is_the_servers_per_slot_window(server: str) -> None:
    from drivers.openai_http import open_openai

    driver = open_openai(f"openai:{server}#{MODEL_ALIAS}")
    assert driver.info.n_ctx == 1536
    assert driver.info.context_source == "llama-server /props (per slot)"
    assert driver.info.max_concurrency == 1  # one slot: --jobs cannot ask for more


def test_a_file_larger_than_the_context_is_capped_and_the_run_ends_done(
    server: str, workspace: Path
) -> None:
    lines = "".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(600))
    (workspace / "README.md").write_text(lines)  # the request SmolLM2 reads reliably
    out = bosun(
        "run", "Read the file README.md and summarise it.",
        "--model", f"openai:{server}#{MODEL_ALIAS}", "--api", "completions",
        "--constrain", "always", "--approve", "read-only", "--max-turns", "3",
        "--output", "jsonl", "--workspace", str(workspace),
    )  # fmt: skip
    events = events_of(out)
    assert events and events[0]["type"] == "session", out.stderr[-2000:]
    assert events[0]["context"] == 1536 and "llama-server" in events[0]["context_source"]
    reads = [e["id"] for e in events if e["type"] == "tool_call" and e["name"] == "read_file"]
    results = [e for e in events if e["type"] == "tool_result" and e["id"] in reads]
    assert results and "characters (about" in results[0]["content"], out.stdout[-2000:]
    assert events[-1]["type"] == "result" and events[-1]["status"] in ("done", "budget")
    assert "dropped part of the prompt" not in out.stdout + out.stderr


class _FrontDropper(BaseHTTPRequestHandler):
    """A proxy to the real server that keeps only the last quarter of every completion
    prompt, as a server with too small a window does behind HTTP 200."""

    upstream = ""

    def log_message(self, *args: object) -> None:
        return None

    def _forward(self, body: bytes | None) -> None:
        request = urllib.request.Request(
            self.upstream + self.path,
            data=body,
            headers={"Content-Type": "application/json"} if body is not None else {},
        )
        with urllib.request.urlopen(request, timeout=300) as reply:
            self.send_response(reply.status)
            kind = reply.headers.get("Content-Type", "application/json")
            self.send_header("Content-Type", kind)
            self.end_headers()
            while chunk := reply.readline():
                self.wfile.write(chunk)
                self.wfile.flush()

    def do_GET(self) -> None:
        self._forward(None)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.path.endswith("/completions") and isinstance(body.get("prompt"), str):
            body["prompt"] = body["prompt"][-len(body["prompt"]) // 4 :]
        self._forward(json.dumps(body).encode())


def test_a_server_that_drops_the_prompts_front_ends_with_the_truncation_error(
    server: str, workspace: Path
) -> None:
    handler = type("Handler", (_FrontDropper,), {"upstream": server.removesuffix("/v1")})
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    proxy.daemon_threads = True
    threading.Thread(target=proxy.serve_forever, args=(0.05,), daemon=True).start()
    url = f"http://127.0.0.1:{proxy.server_address[1]}/v1"
    # a short reply, so the stream ends with the server's usage (a halted one has none)
    tasks = workspace.parent / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t1", "prompt": "Say hi.", "max_tokens": 12}) + "\n")
    try:
        out = bosun(
            "run", "--tasks", str(tasks), "--model", f"openai:{url}#{MODEL_ALIAS}",
            "--api", "completions", "--approve", "read-only", "--workspace", str(workspace),
        )  # fmt: skip
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    [result] = [e for e in events_of(out) if e["type"] == "result"]
    assert result["status"] == "error", result
    assert "dropped part of the prompt" in result["error"]
