"""Ollama through its native chat API: the window (`num_ctx`) bosun chooses once and
sends with every request, history in Ollama's shape, and its NDJSON stream read back
as chat chunks, hostile lines included.

No Ollama binary runs here, so its answers are fixtures written from Ollama's API
documentation (github.com/ollama/ollama, docs/api.md): `POST /api/show` (`model_info`
with `<arch>.context_length`, `parameters` as Modelfile lines) and `POST /api/chat`
(request `{model, messages, tools, stream, options}`; streamed lines `{model,
created_at, message: {role, content, thinking?, tool_calls?}, done: false}`, tool calls
as `{function: {name, arguments: <object>}}`, the last line `{done: true, done_reason,
total_duration, prompt_eval_count, eval_count, …}`; an error is `{"error": "…"}`).
They are served by the loopback stub of tests/openai_servers.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    Reasoning,
    System,
    ToolCall,
    ToolResult,
    User,
)
from agent.protocol.dialect import chat_messages
from drivers.base import ChatChunk, DriverError, RawCall, Request, collect
from tests.helpers import READ_FILE
from tests.openai_servers import (
    Reply,
    Stub,
    bosun,
    completion_event,
    model_stub,
    stub_driver,
)

pytest.importorskip("openai")

SHOW = {  # docs/api.md, "Show Model Information", trimmed
    "modelfile": "FROM qwen3:8b",
    "parameters": 'stop                           "<|im_end|>"',
    "template": "{{ .Prompt }}",
    "details": {"format": "gguf", "family": "qwen3", "parameter_size": "8.2B"},
    "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
    "capabilities": ["completion", "tools", "thinking"],
}


def line(message: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """One streamed line as docs/api.md shows it (`done: false` unless given)."""
    out: dict[str, Any] = {"model": "stub-model", "created_at": "2025-05-01T10:00:00.0Z"}
    out["message"] = {"role": "assistant", "content": "", **(message or {})}
    return {**out, "done": False, **extra}


def last(reason: str = "stop", prompt: int = 26, completion: int = 282) -> dict[str, Any]:
    """The final line: the reason and the counts (durations in nanoseconds)."""
    return line(
        done=True,
        done_reason=reason,
        total_duration=4883583458,
        load_duration=1334875,
        prompt_eval_count=prompt,
        prompt_eval_duration=342546000,
        eval_count=completion,
        eval_duration=4535599000,
    )


def ollama(stub: Stub, show: dict[str, Any] | None = None, *lines: Any, **driver: Any) -> Any:
    """The driver on a stub that answers as Ollama does, its chat stream `lines`."""
    stub.on("POST /api/show", Reply(body=show or SHOW))
    stub.on("POST /api/chat", Reply(lines=list(lines or [line({"content": "Hi"}), last()])))
    return stub_driver(stub, **driver)


def chat_body(stub: Stub) -> dict[str, Any]:
    [call] = stub.calls("POST /api/chat")
    return call["body"]


# --- the window -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parameters", "trained", "context_size", "n_ctx", "source"),
    [
        ("", 40960, None, 8192, "Ollama num_ctx set by bosun (model trained for 40,960)"),
        ("", 4096, None, 4096, "Ollama num_ctx set by bosun (model trained for 4,096)"),
        (
            "num_ctx                        16384",
            40960,
            None,
            16384,
            "Ollama Modelfile num_ctx (model trained for 40,960)",
        ),
        (
            "num_ctx 16384",
            40960,
            12000,
            12000,
            "--context-size as Ollama num_ctx (model trained for 40,960)",
        ),
    ],
    ids=["trained-over-8192", "trained-under-8192", "modelfile", "context-size"],
)
def test_each_request_carries_the_window_chosen_once(
    stub: Stub, parameters: str, trained: int, context_size: int | None, n_ctx: int, source: str
) -> None:
    show = SHOW | {"parameters": parameters, "model_info": {"qwen3.context_length": trained}}
    driver = ollama(stub, show, context_size=context_size)
    assert (driver.info.n_ctx, driver.info.context_source) == (n_ctx, source)
    assert driver.info.chat
    messages = [{"role": "user", "content": "hi"}]
    list(driver.chat(messages, [READ_FILE], max_tokens=77))
    body = chat_body(stub)
    assert body["options"] == {"num_ctx": n_ctx, "num_predict": 77, "temperature": 0.0}
    assert body["model"] == "stub-model" and body["stream"] is True
    assert body["tools"] == [READ_FILE] and body["messages"] == messages
    assert stub.calls("POST /v1/chat/completions") == []


def test_history_goes_in_ollamas_shape(stub: Stub) -> None:
    """Arguments as an object, reasoning as `thinking`, a result naming its tool."""
    history: list[Message] = [
        System("sys"),
        User("read a"),
        Reasoning("the file is a"),
        AssistantToolUse(ToolCall("call_1", "read_file", {"path": "a"})),
        ToolResult("call_1", "A"),
        Assistant("Done."),
    ]
    driver = ollama(stub)
    list(driver.chat(chat_messages(history), [READ_FILE]))
    assert chat_body(stub)["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "read a"},
        {
            "role": "assistant",
            "content": "",
            "thinking": "the file is a",
            "tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "a"}}}],
        },
        {"role": "tool", "content": "A", "tool_name": "read_file"},
        {"role": "assistant", "content": "Done."},
    ]


# --- the stream -----------------------------------------------------------------------


def test_text_thinking_and_calls_come_out_as_chat_chunks(stub: Stub) -> None:
    call = {"function": {"name": "read_file", "arguments": {"path": "a.py"}}}
    as_text = {"function": {"name": "list_dir", "arguments": '{"path": "."}'}}
    driver = ollama(
        stub,
        None,
        line({"thinking": "Let me "}),
        line({"thinking": "look."}),
        line({"content": "Reading"}),
        line({"content": " it.", "tool_calls": [call, as_text]}),
        {**last(prompt=812, completion=31), "prompt_eval_cached_count": 790},
    )
    chunks = list(driver.chat([{"role": "user", "content": "read a.py"}], [READ_FILE]))
    assert [(c.text, c.reasoning) for c in chunks[:4]] == [
        ("", "Let me "),
        ("", "look."),
        ("Reading", ""),
        (" it.", ""),
    ]
    assert chunks[3].calls == (
        RawCall("call_1", "read_file", '{"path": "a.py"}'),
        RawCall("call_2", "list_dir", '{"path": "."}'),
    )
    end = chunks[-1]
    assert end.finish_reason == "stop" and end.usage is not None
    assert (end.usage.prompt_tokens, end.usage.completion_tokens) == (812, 31)
    assert end.usage.cached_tokens == 790  # prompt_eval_cached_count (Ollama 0.33+)
    assert end.usage.ms > 0


def test_done_reason_length_is_a_cut_off(stub: Stub) -> None:
    driver = ollama(stub, None, line({"content": "a long"}), last("length", 10, 4))
    chunks = list(driver.chat([{"role": "user", "content": "x"}], max_tokens=4))
    assert chunks[-1].finish_reason == "length"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 4


def test_a_halt_ends_the_stream_interrupted(stub: Stub) -> None:
    lines = [line({"content": "a"}), line({"content": "b"}), line({"content": "c"}), last()]
    driver = ollama(stub, None, *lines)
    seen: list[ChatChunk] = []
    for chunk in driver.chat([{"role": "user", "content": "x"}], halt=lambda: len(seen) >= 1):
        seen.append(chunk)
    assert [c.text for c in seen[:-1]] == ["a"]
    assert seen[-1].finish_reason == "interrupted"


# --- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("status", [404, 500])
def test_an_error_answer_is_ollamas_own_words(stub: Stub, status: int) -> None:
    driver = ollama(stub)
    words = (
        "model 'stub-model' not found" if status == 404 else "llama runner process has terminated"
    )
    stub.on("POST /api/chat", Reply(status, {"error": words}))
    with pytest.raises(DriverError) as info:
        list(driver.chat([{"role": "user", "content": "x"}]))
    message = str(info.value)
    assert f"HTTP {status}" in message and message.endswith(words) and "\n" not in message
    tries = 1 if status == 404 else driver.retries + 1  # a 500 is retried, as on /v1
    assert len(stub.calls("POST /api/chat")) == tries


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        ([line({"content": "Hel"}), line({"content": "lo"})], "ended before the completion"),
        ([line({"content": "Hel"}), "{not json", last()], "not a JSON object"),
        ([line({"content": ["not", "text"]}), last()], "not text"),
        ([line({"tool_calls": [{"function": {"name": 3}}]}), last()], "tool call"),
        ([line(), last() | {"eval_count": "many"}], "bad eval_count"),
        ([line({"content": "Hel"}), {"error": "out of memory"}], "broke off: out of memory"),
        (["[" * 100_000], "not a JSON object"),
        (["x" * (8 * 1024 * 1024 + 10)], "over 8 MB"),
    ],
    ids=[
        "cut-before-done",
        "garbage",
        "content-not-text",
        "call-without-name",
        "count-not-int",
        "error-mid-stream",
        "deep-nesting",
        "line-too-long",
    ],
)
def test_a_broken_stream_is_one_line_of_error(stub: Stub, lines: list, words: str) -> None:
    driver = ollama(stub, None, *lines)
    with pytest.raises(DriverError) as info:
        list(driver.chat([{"role": "user", "content": "x"}]))
    assert words in str(info.value) and "\n" not in str(info.value)
    assert len(str(info.value)) < 400


def test_a_server_gone_is_cannot_reach(stub: Stub) -> None:
    with model_stub() as gone:
        driver = ollama(gone)
    with pytest.raises(DriverError) as info:
        list(driver.chat([{"role": "user", "content": "x"}]))
    assert str(info.value) == f"cannot reach {gone.url}: connection refused (after 4 tries)"
    assert driver.sleeps == [0.5, 1.0, 2.0]


def test_a_silent_server_is_the_request_timeout(stub: Stub) -> None:
    driver = ollama(stub, timeout=0.3)
    stub.on("POST /api/chat", Reply(lines=[last()], delay=2))
    with pytest.raises(DriverError) as info:
        list(driver.chat([{"role": "user", "content": "x"}]))
    assert str(info.value) == (
        f"{stub.url} sent nothing for 0.3 s (a long prompt's prefill can take that long:"
        " --request-timeout SECONDS|off)"
    )


# --- completions keeps /v1 --------------------------------------------------------------


def test_completions_against_ollama_keeps_v1_and_its_window(stub: Stub) -> None:
    """bosun renders the prompt itself under --api completions: that needs raw text
    completion, which Ollama's native chat is not; the window stays Ollama's own."""
    driver = ollama(stub, api="completions")
    assert driver.info.n_ctx == 2048 and driver.info.context_source == "Ollama's default window"
    stub.on("POST /v1/completions", Reply(events=[completion_event("ok", "stop")]))
    assert collect(driver.stream(Request("p"))).text == "ok"
    assert stub.calls("POST /api/chat") == []
    assert len(stub.calls("POST /v1/completions")) == 1


# --- end to end -----------------------------------------------------------------------


def test_a_run_says_the_window_and_sends_it(stub: Stub, workspace: Path) -> None:
    stub.on("POST /api/show", Reply(body=SHOW))
    stub.on("POST /api/chat", Reply(lines=[line({"content": "All done."}), last(prompt=1300)]))
    spec = f"openai:{stub.url}#stub-model"
    out = bosun("run", "hi", "--model", spec, "--output", "jsonl", "-w", str(workspace))
    assert out.returncode == 0, out.stderr
    records = [json.loads(row) for row in out.stdout.splitlines() if row.strip()]
    [session] = [r for r in records if r["type"] == "session"]
    assert session["context"] == 8192
    assert session["context_source"] == "Ollama num_ctx set by bosun (model trained for 40,960)"
    assert any("All done." in json.dumps(r) for r in records)
    body = stub.calls("POST /api/chat")[0]["body"]
    assert body["options"]["num_ctx"] == 8192 and body["tools"]
    flagged = bosun("run", "hi", "--model", spec, "--context-size", "6000", "-w", str(workspace))
    assert flagged.returncode == 0, flagged.stderr
    assert stub.calls("POST /api/chat")[-1]["body"]["options"]["num_ctx"] == 6000
