"""The paths bosun takes through llama.cpp's own llama-server (built by `install.sh
--dev`), on 127.0.0.1 with the bundled SmolLM2: prefill progress, a stop heard during
the prefill, the KV cache reused across requests, the chat API with bosun's tools, a
GBNF grammar on the completions API, and a server killed under a stream.

The server evaluates prompts 128 tokens a step, so a prompt of several hundred tokens
(a few seconds on one busy core) gives several prefill reports. SmolLM2's chat template
has no tools: llama-server renders none and the model never calls one, so the chat test
asserts what stays deterministic at temperature 0 (the tools reach the server's parser,
the reply and its usage come back) rather than a call it would not make.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.history import Message, User
from agent.loop.turn import Query, call_model
from agent.protocol.profile import profile_for
from agent.tools import default_registry
from drivers.base import Chunk, DriverError, Request
from drivers.openai_http import OpenAIDriver, open_openai
from tests.openai_servers import (
    MODEL_ALIAS,
    free_port,
    llama_server_command,
    real_llama_server,
    serving,
)

pytest.importorskip("openai")
pytestmark = pytest.mark.model
REPO = Path(__file__).resolve().parents[2]
BATCH = 128


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("llama-server") / "log"
    with real_llama_server(log, n_ctx=4096, batch=BATCH) as url:
        yield url


def driver(url: str, api: str = "completions") -> OpenAIDriver:
    return open_openai(f"openai:{url}#{MODEL_ALIAS}", api=api)


def long_text(lines: int) -> str:
    """About 20 tokens a line, opened by a salt no other request shares, so nothing of
    it is in the server's cache unless a test sends it twice on purpose."""
    salt = uuid.uuid4().hex
    rows = (f"Line {i}: {i * 7 % 13} brown foxes jump over {i} lazy dogs.\n" for i in range(lines))
    return f"Notes {salt}.\n" + "".join(rows)


# --- prefill progress ----------------------------------------------------------------


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_a_long_prompt_streams_progress_before_its_text(server: str, api: str) -> None:
    prompt = long_text(30) + "Summary:"
    d = driver(server, api)
    if api == "chat":
        chunks: list = list(d.chat([{"role": "user", "content": prompt}], max_tokens=4))
    else:
        chunks = list(d.stream(Request(prompt, max_tokens=4)))
    reports = [c.progress for c in chunks if c.progress is not None]
    assert len(reports) >= 3, reports  # one a step of BATCH tokens
    first_text = next(i for i, c in enumerate(chunks) if c.text)
    assert all(c.progress is None for c in chunks[first_text:])  # none once text came
    assert chunks[0].progress is not None and not chunks[0].text
    processed, total = reports[-2]
    assert 0 < processed < total  # a report from inside the prefill, not only its end
    assert [p for p, _ in reports] == sorted(p for p, _ in reports)
    usage = chunks[-1].usage
    assert usage is not None and usage.prompt_tokens == total


# --- a stop during the prefill ----------------------------------------------------------


def test_a_stop_mid_prefill_ends_the_stream_at_once_and_the_server_goes_on(
    server: str,
) -> None:
    """With progress reports, `halt` is asked during the prefill and closing the stream
    cancels it on the server; without them a stop waits for the whole prefill."""
    d = driver(server)
    started = time.monotonic()
    full = list(d.stream(Request(long_text(40), max_tokens=1)))
    whole_prefill = time.monotonic() - started
    assert full[-1].finish_reason in ("stop", "length")

    seen: list[Chunk] = []

    def halt() -> bool:
        return any(c.progress is not None for c in seen)

    started = time.monotonic()
    for chunk in d.stream(Request(long_text(40), max_tokens=64), halt=halt):
        seen.append(chunk)
    stopped_after = time.monotonic() - started
    assert seen[-1].finish_reason == "interrupted"
    assert not any(c.text for c in seen)
    assert seen[-1].usage is not None and seen[-1].usage.completion_tokens == 0
    assert stopped_after < whole_prefill / 2, (stopped_after, whole_prefill)

    # One slot: had the cancelled prefill gone on, this request would wait for it.
    started = time.monotonic()
    after = list(d.stream(Request("The capital of France is", max_tokens=4)))
    assert after[-1].finish_reason in ("stop", "length")
    assert "".join(c.text for c in after).strip()
    assert time.monotonic() - started < whole_prefill / 2


# --- the KV cache across requests -----------------------------------------------------


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_a_shared_prefix_is_reported_cached_on_the_next_request(server: str, api: str) -> None:
    prefix = long_text(20)
    d = driver(server, api)
    usages = []
    for question in ("Question: how many foxes?", "Question: how many dogs?"):
        if api == "chat":
            messages = [{"role": "user", "content": prefix + question}]
            chunks: list = list(d.chat(messages, max_tokens=2))
        else:
            chunks = list(d.stream(Request(prefix + question, max_tokens=2)))
        usages.append(chunks[-1].usage)
    first, second = usages
    assert first is not None and second is not None
    assert first.cached_tokens < 10  # only the template's opening, at most
    assert second.cached_tokens > first.prompt_tokens * 3 // 4, (first, second)
    assert second.cached_tokens < second.prompt_tokens


# --- the chat API with bosun's tools --------------------------------------------------


def test_chat_with_bosuns_tools_reaches_the_servers_parser_and_answers(server: str) -> None:
    d = driver(server, "chat")
    specs = default_registry().specs()
    history: list[Message] = [User("What is the capital of France? Answer in one word.")]
    replies = [
        call_model(d, profile_for(d.model), Query(history, specs, lambda e: None, 24))
        for _ in range(2)
    ]
    first, again = replies
    assert first.prose and first.prose == again.prose  # temperature 0
    assert first.calls == [] and first.diagnostics == []
    assert first.usage.prompt_tokens > 0 and first.usage.completion_tokens > 0

    # The tools did reach the server's tool parser: one it cannot parse is refused.
    broken = [{"type": "function", "function": {"name": 5}}]
    with pytest.raises(DriverError, match="Failed to parse tools") as caught:
        list(d.chat([{"role": "user", "content": "hi"}], broken, max_tokens=2))
    assert "\n" not in str(caught.value)


# --- a GBNF grammar on the completions API ----------------------------------------------


def test_a_grammar_holds_smollm2_to_a_well_formed_call(server: str, workspace: Path) -> None:
    """Unconstrained, SmolLM2 answers this request by reciting the tool's schema; held
    to bosun's grammar (sent in the body) it writes the call."""
    (workspace / "notes.txt").write_text("the answer is 42\n")
    out = subprocess.run(
        [
            sys.executable, "-m", "agent", "run", "Read the file notes.txt.",
            "--model", f"openai:{server}#{MODEL_ALIAS}", "--api", "completions",
            "--constrain", "always", "--approve", "read-only", "--max-turns", "1",
            "--output", "jsonl", "--workspace", str(workspace),
        ],
        cwd=REPO, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert events and events[0]["type"] == "session", out.stderr[-2000:]
    calls = [e for e in events if e["type"] == "tool_call"]
    assert len(calls) == 1, out.stdout[-2000:]
    [call] = calls
    schema = next(s for s in default_registry().specs() if s["function"]["name"] == "read_file")
    allowed = set(schema["function"]["parameters"]["properties"])
    assert call["name"] == "read_file" and not call["salvaged"]
    assert call["arguments"]["path"] == "notes.txt" and set(call["arguments"]) <= allowed
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert result["id"] == call["id"] and not result["is_error"] and "42" in result["content"]
    assert not [e for e in events if e["type"] == "diagnostic"]


# --- a server killed under a stream ---------------------------------------------------


def test_a_server_killed_mid_stream_is_one_line_driver_error(tmp_path: Path) -> None:
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    cmd = llama_server_command(port, n_ctx=2048)
    with serving(cmd, tmp_path / "log", f"{root}/health", "llama-server", 60) as proc:
        d = driver(f"{root}/v1")
        counting = ", ".join(str(i) for i in range(1, 40)) + ","
        stream = d.stream(Request(counting, max_tokens=1500))
        assert any(c.text for c in stream_until_text(stream))
        proc.kill()
        killed = time.monotonic()
        with pytest.raises(DriverError) as caught:
            for _ in stream:
                pass
        assert time.monotonic() - killed < 15
    message = str(caught.value)
    assert "stream broke off" in message and root in message, message
    assert "\n" not in message and "Traceback" not in message
    assert caught.value.__suppress_context__  # raised `from None`: no chained traceback


def stream_until_text(stream: Iterator[Chunk]) -> Iterator[Chunk]:
    for chunk in stream:
        yield chunk
        if chunk.text:
            return
