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
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.drivers.prompt_proxy import prompt_proxy
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


def test_a_server_that_drops_the_prompts_front_ends_with_the_truncation_error(
    server: str, workspace: Path
) -> None:
    # a short reply, so the stream ends with the server's usage (a halted one has none)
    tasks = workspace.parent / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t1", "prompt": "Say hi.", "max_tokens": 12}) + "\n")
    # keeps the last quarter of every prompt, as a server with too small a window does
    with prompt_proxy(server, lambda prompt: prompt[-len(prompt) // 4 :]) as url:
        out = bosun(
            "run", "--tasks", str(tasks), "--model", f"openai:{url}#{MODEL_ALIAS}",
            "--api", "completions", "--approve", "read-only", "--workspace", str(workspace),
        )  # fmt: skip
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    [result] = [e for e in events_of(out) if e["type"] == "result"]
    assert result["status"] == "error", result
    assert "dropped part of the prompt" in result["error"]
