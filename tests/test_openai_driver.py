"""The OpenAI-compatible driver: a real llama-cpp-python server, and a stub server.

The real server (started once for the module's model tests) proves the plumbing end to
end. What a real server does with tool calls depends on the model, so the parsing of
structured tool-call deltas, retries and error paths run against a tiny stub that
replays canned responses and records every request.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    System,
    ToolCall,
    ToolResult,
    User,
)
from drivers.base import DriverError, UsageError, collect
from drivers.openai_http import (
    ChatChunk,
    OpenAIDriver,
    chat_messages,
    open_openai,
    parse_spec,
)
from tests.openai_servers import (
    MODEL_ALIAS,
    Reply,
    Stub,
    bosun,
    chat_event,
    completion_event,
    free_port,
    llama_server,
    models_body,
    serve_stub,
    tool_delta,
)

pytest.importorskip("openai")

READ_FILE = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file in the workspace.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with llama_server(log) as url:
        yield url


@pytest.fixture
def stub() -> Iterator[Stub]:
    state = Stub()
    state.on("GET /v1/models", Reply(body=models_body("stub-model")))
    with serve_stub(state):
        yield state


def stub_driver(stub: Stub, **options: Any) -> OpenAIDriver:
    sleeps: list[float] = []
    options.setdefault("sleep", sleeps.append)
    driver = open_openai(f"openai:{stub.url}#stub-model", **options)
    driver.sleeps = sleeps  # type: ignore[attr-defined]
    return driver


# --- the spec -----------------------------------------------------------------------


def test_spec_gives_url_and_model() -> None:
    assert parse_spec("openai:http://localhost:8080/v1#qwen3-8b") == (
        "http://localhost:8080/v1",
        "qwen3-8b",
    )
    assert parse_spec("openai:https://h.example/api/v1/#org/m:q4") == (
        "https://h.example/api/v1",
        "org/m:q4",
    )
    # Every OpenAI-compatible server lives under /v1; a bare host:port means that.
    assert parse_spec("openai:http://127.0.0.1:8000#m")[0] == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("openai:", "needs a server URL"),
        ("openai:#m", "needs a server URL"),
        ("openai:http://localhost:8080/v1", "model name after '#'"),
        ("openai:http://localhost:8080/v1#", "model name after '#'"),
        ("openai:localhost:8080#m", "expected http://HOST:PORT/v1"),
        ("openai:ftp://h/v1#m", "expected http://HOST:PORT/v1"),
        ("openai:http://h:port/v1#m", "bad server URL"),
    ],
)
def test_bad_specs_are_usage_errors(spec: str, words: str) -> None:
    with pytest.raises(UsageError, match=words) as info:
        open_openai(spec)
    assert "\n" not in str(info.value)


def test_unknown_wire_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="chat or completions"):
        open_openai("openai:http://127.0.0.1:9/v1#m", wire="responses")


# --- history -> chat messages -------------------------------------------------------


def test_chat_messages_keep_tool_turns_structured() -> None:
    history: list[Message] = [
        System("sys"),
        User("read a and b"),
        Assistant("Let me look."),
        AssistantToolUse(ToolCall("call_1", "read_file", {"path": "a"})),
        AssistantToolUse(ToolCall("call_2", "read_file", {"path": "ü"})),
        ToolResult("call_1", "A"),
        ToolResult("call_2", "Error: no such file", is_error=True),
        AssistantToolUse(ToolCall("call_3", "list_dir", {})),
        ToolResult("call_3", "a\nb"),
        Assistant("Done."),
    ]
    messages = chat_messages(history)
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    turn = messages[2]
    assert turn["content"] == "Let me look."
    assert [c["id"] for c in turn["tool_calls"]] == ["call_1", "call_2"]
    # The API wants arguments as a JSON string, not an object.
    assert turn["tool_calls"][1]["function"] == {"name": "read_file", "arguments": '{"path": "ü"}'}
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "A"}
    assert messages[5] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_3",
                "type": "function",
                "function": {"name": "list_dir", "arguments": "{}"},
            }
        ],
    }
    assert json.loads(json.dumps(messages)) == messages  # plain JSON all the way down


# --- stub: chat mode ----------------------------------------------------------------


def test_chat_assembles_streamed_tool_call_deltas(stub: Stub) -> None:
    stub.on(
        "POST /v1/chat/completions",
        Reply(
            events=[
                chat_event({"role": "assistant", "content": "Reading "}),
                chat_event({"content": "both."}),
                chat_event(tool_delta(0, id="call_x", name="read_file")),
                chat_event(tool_delta(0, arguments='{"pa')),
                chat_event(tool_delta(0, arguments='th": "a.txt"}')),
                chat_event(tool_delta(1, id="call_y", name="read_file", arguments='{"path":')),
                chat_event(tool_delta(1, arguments=' "b.txt"}')),
                chat_event({}, finish="tool_calls"),
                chat_event(
                    None,
                    usage={
                        "prompt_tokens": 120,
                        "completion_tokens": 30,
                        "total_tokens": 150,
                        "prompt_tokens_details": {"cached_tokens": 100},
                    },
                ),
            ]
        ),
    )
    driver = stub_driver(stub)
    history: list[Message] = [System("sys"), User("read a.txt and b.txt")]
    chunks = list(driver.chat(chat_messages(history), [READ_FILE], max_tokens=77))
    assert "".join(c.text for c in chunks) == "Reading both."
    calls = [call for c in chunks for call in c.calls]
    assert calls == [
        ToolCall("call_x", "read_file", {"path": "a.txt"}),
        ToolCall("call_y", "read_file", {"path": "b.txt"}),
    ]
    # The first call is handed out as soon as the second starts, not at the very end.
    first_at = next(i for i, c in enumerate(chunks) if c.calls)
    assert first_at < len(chunks) - 1
    last = chunks[-1]
    assert last.finish_reason == "stop" and last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.cached_tokens) == (120, 100)
    assert last.usage.completion_tokens == 30 and last.usage.ms > 0
    body = stub.calls("POST /v1/chat/completions")[0]["body"]
    assert body["model"] == "stub-model" and body["stream"] is True
    assert body["max_tokens"] == 77 and body["tools"] == [READ_FILE]
    assert body["messages"] == chat_messages(history)
    assert body["stream_options"] == {"include_usage": True}


def test_chat_call_cut_off_by_max_tokens_is_not_handed_out(stub: Stub) -> None:
    stub.on(
        "POST /v1/chat/completions",
        Reply(
            events=[
                chat_event(tool_delta(0, id="a", name="list_dir", arguments="{}")),
                chat_event(tool_delta(1, id="b", name="read_file", arguments='{"path": "x')),
                chat_event({}, finish="length"),
            ]
        ),
    )
    chunks = list(stub_driver(stub).chat([{"role": "user", "content": "hi"}], [READ_FILE]))
    assert [call.name for c in chunks for call in c.calls] == ["list_dir"]
    notes = [d for c in chunks for d in c.diagnostics]
    assert len(notes) == 1 and "read_file was cut off by the token limit" in notes[0]
    assert chunks[-1].finish_reason == "length"


def test_chat_bad_arguments_become_diagnostics(stub: Stub) -> None:
    stub.on(
        "POST /v1/chat/completions",
        Reply(
            events=[
                chat_event(tool_delta(0, id="a", name="read_file", arguments="{path: a}")),
                chat_event(tool_delta(1, id="b", name="read_file", arguments='["a"]')),
                chat_event({}, finish="tool_calls"),
            ]
        ),
    )
    chunks = list(stub_driver(stub).chat([{"role": "user", "content": "hi"}], [READ_FILE]))
    assert not [call for c in chunks for call in c.calls]
    notes = [d for c in chunks for d in c.diagnostics]
    assert "not valid JSON" in notes[0] and "must be a JSON object" in notes[1]


def test_chat_reasoning_and_llama_cpp_timings(stub: Stub) -> None:
    """llama.cpp's server reports the KV cache through `timings`: prompt_n counts only
    the prompt tokens it had to evaluate."""
    stub.on(
        "POST /v1/chat/completions",
        Reply(
            events=[
                chat_event({"reasoning_content": "think"}),
                chat_event({"content": "ok"}),
                chat_event(
                    {},
                    finish="stop",
                    usage={"prompt_tokens": 50, "completion_tokens": 2, "total_tokens": 52},
                    timings={"prompt_n": 8, "predicted_n": 2},
                ),
            ]
        ),
    )
    chunks = list(stub_driver(stub).chat([{"role": "user", "content": "hi"}]))
    assert [c.reasoning for c in chunks if c.reasoning] == ["think"]
    usage = chunks[-1].usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens) == (50, 42, 2)
    assert "tools" not in stub.calls("POST /v1/chat/completions")[0]["body"]


def test_stream_that_stops_without_finishing_is_an_error(stub: Stub) -> None:
    stub.on("POST /v1/chat/completions", Reply(events=[chat_event({"content": "par"})]))
    with pytest.raises(DriverError, match="ended before the completion finished"):
        list(stub_driver(stub).chat([{"role": "user", "content": "hi"}]))


def test_error_event_mid_stream_is_a_driver_error(stub: Stub) -> None:
    stub.on(
        "POST /v1/completions",
        Reply(events=[completion_event("a"), {"error": {"message": "KV cache full"}}]),
    )
    with pytest.raises(DriverError, match="broke off: KV cache full"):
        list(stub_driver(stub, wire="completions").stream("p"))


# --- stub: completions mode ---------------------------------------------------------


def test_completions_stream_passes_stop_and_grammar(stub: Stub) -> None:
    stub.on(
        "POST /v1/completions",
        Reply(
            events=[
                completion_event("Hel"),
                completion_event("lo"),
                completion_event("", finish="stop"),
                {
                    **completion_event(""),
                    "choices": [],
                    "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
                },
            ]
        ),
    )
    driver = stub_driver(stub, wire="completions")
    assert driver.supports_grammar and not driver.chat_mode
    done = collect(driver.stream("<prompt>", stop=["<|im_end|>"], max_tokens=5, grammar="G"))
    assert done.text == "Hello" and done.finish_reason == "stop"
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (9, 2)
    body = stub.calls("POST /v1/completions")[0]["body"]
    assert body["prompt"] == "<prompt>" and body["stop"] == ["<|im_end|>"]
    assert body["max_tokens"] == 5 and body["grammar"] == "G" and body["temperature"] == 0
    assert body["skip_special_tokens"] is False  # Harmony markers must survive vLLM


def test_completions_without_usage_counts_streamed_pieces(stub: Stub) -> None:
    """llama-cpp-python's server streams no usage at all."""
    stub.on(
        "POST /v1/completions",
        Reply(
            events=[completion_event("a"), completion_event("b"), completion_event("", "length")]
        ),
    )
    done = collect(stub_driver(stub, wire="completions").stream("p"))
    assert done.finish_reason == "length" and done.usage.completion_tokens == 2
    body = stub.calls("POST /v1/completions")[0]["body"]
    assert "grammar" not in body and "stop" not in body


# --- stub: retries and errors -------------------------------------------------------


def test_retries_503_with_backoff_then_succeeds(stub: Stub) -> None:
    busy = Reply(503, {"error": {"message": "loading model"}})
    stub.on(
        "POST /v1/completions",
        busy,
        busy,
        Reply(events=[completion_event("ok", "stop")]),
    )
    driver = stub_driver(stub, wire="completions", backoff=0.25)
    assert collect(driver.stream("p")).text == "ok"
    assert len(stub.calls("POST /v1/completions")) == 3
    assert driver.sleeps == [0.25, 0.5]  # type: ignore[attr-defined]


def test_429_is_retried_and_gives_up_after_bounded_tries(stub: Stub) -> None:
    stub.on("POST /v1/chat/completions", Reply(429, {"error": {"message": "slow down"}}))
    driver = stub_driver(stub, retries=3, backoff=0.01)
    with pytest.raises(DriverError) as info:
        list(driver.chat([{"role": "user", "content": "hi"}]))
    assert len(stub.calls("POST /v1/chat/completions")) == 4
    assert driver.sleeps == [0.01, 0.02, 0.04]  # type: ignore[attr-defined]
    assert str(info.value) == (
        f"{stub.url} chat request failed with HTTP 429 after 4 tries: slow down"
    )


def test_client_errors_are_not_retried(stub: Stub) -> None:
    stub.on(
        "POST /v1/completions",
        Reply(400, {"error": {"message": "the prompt is\n4096 tokens, the context 2048"}}),
    )
    driver = stub_driver(stub, wire="completions")
    with pytest.raises(DriverError) as info:
        list(driver.stream("p"))
    assert len(stub.calls("POST /v1/completions")) == 1 and driver.sleeps == []  # type: ignore[attr-defined]
    assert "HTTP 400: the prompt is 4096 tokens, the context 2048" in str(info.value)
    assert not isinstance(info.value, UsageError)


def test_a_slow_server_is_not_retried(stub: Stub) -> None:
    """A read timeout means the server is there but busy; retrying would only multiply
    the wait."""
    stub.on("POST /v1/completions", Reply(events=[completion_event("x", "stop")], delay=2))
    driver = stub_driver(stub, wire="completions", timeout=0.3)
    with pytest.raises(DriverError) as info:
        list(driver.stream("p"))
    assert str(info.value) == f"{stub.url} sent nothing for 0.3 s (the read timeout)"
    assert len(stub.calls("POST /v1/completions")) == 1


def test_missing_endpoint_suggests_the_other_wire(stub: Stub) -> None:
    with pytest.raises(DriverError, match=r"no /completions endpoint .*try --wire chat"):
        list(stub_driver(stub, wire="completions").stream("p"))


def test_rejected_key_says_which_variables(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOSUN_API_KEY", "sk-bosun")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    stub.on("GET /v1/models", Reply(401, {"error": {"message": "invalid key"}}))
    with pytest.raises(DriverError, match=r"refused the API key .*BOSUN_API_KEY or OPENAI_API_KEY"):
        stub_driver(stub)
    assert stub.requests[0]["headers"]["authorization"] == "Bearer sk-bosun"


def test_dummy_key_when_none_is_set(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BOSUN_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    stub_driver(stub)
    assert stub.requests[0]["headers"]["authorization"].startswith("Bearer sk-")


def test_unknown_model_lists_what_the_server_has(stub: Stub) -> None:
    stub.on("GET /v1/models", Reply(body=models_body("qwen3-8b", "gpt-oss-20b")))
    with pytest.raises(UsageError) as info:
        open_openai(f"openai:{stub.url}#qwen3-7b")
    message = str(info.value)
    assert "'qwen3-7b' is not served by" in message and "qwen3-8b, gpt-oss-20b" in message


def test_server_without_a_model_list_is_not_refused(stub: Stub) -> None:
    stub.on("GET /v1/models", Reply(404, {"detail": "Not Found"}))
    driver = stub_driver(stub)
    assert driver.available == [] and driver.model == f"openai:{stub.url}#stub-model"


def test_server_down_is_a_clear_one_line_error() -> None:
    port = free_port()  # nothing listens there once the probe socket is closed
    started = time.monotonic()
    with pytest.raises(DriverError) as info:
        OpenAIDriver(f"http://127.0.0.1:{port}/v1", "m", backoff=0.01, sleep=lambda _s: None)
    assert str(info.value) == (
        f"cannot reach http://127.0.0.1:{port}/v1: connection refused (after 4 tries)"
    )
    assert not isinstance(info.value, UsageError)
    assert time.monotonic() - started < 10


@pytest.fixture(scope="module")
def cli_wired() -> None:
    """The command-line tests need `--wire` and openai: routed by drivers.open_driver."""
    if "--wire" not in bosun("run", "--help").stdout:
        pytest.skip("agent/cli.py has no --wire option yet (openai: not wired)")


def test_server_down_via_the_command_line(cli_wired: None, workspace: Path) -> None:
    """Exit 1 and one line on stderr, no traceback."""
    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = bosun("run", "hi", "--model", f"openai:{url}#m", "--workspace", str(workspace))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == f"bosun: error: cannot reach {url}: connection refused (after 4 tries)\n"


def test_unknown_model_via_the_command_line(cli_wired: None, stub: Stub, workspace: Path) -> None:
    spec = f"openai:{stub.url}#nope"
    proc = bosun("run", "hi", "--model", spec, "--workspace", str(workspace))
    assert proc.returncode == 2
    assert proc.stderr.startswith("bosun: error: model 'nope' is not served by")
    assert "it has: stub-model" in proc.stderr and proc.stderr.count("\n") == 1


def test_wire_is_refused_for_local_models(cli_wired: None, workspace: Path) -> None:
    proc = bosun("run", "hi", "--wire", "chat", "--workspace", str(workspace))
    assert proc.returncode == 2 and "--wire is for openai: models" in proc.stderr


def test_bosun_run_on_the_chat_wire_runs_the_servers_tool_calls(
    cli_wired: None, stub: Stub, workspace: Path, tmp_path: Path
) -> None:
    """End to end through the runtime: a structured call from the server is executed,
    and the next request carries it back as tool_calls + a tool message."""
    stub.on(
        "POST /v1/chat/completions",
        Reply(
            events=[
                chat_event({"content": "Looking."}),
                chat_event(
                    tool_delta(0, id="srv_1", name="read_file", arguments='{"path": "notes.txt"}')
                ),
                chat_event({}, finish="tool_calls"),
            ]
        ),
        Reply(events=[chat_event({"content": "It says hello."}), chat_event({}, finish="stop")]),
    )
    trace = tmp_path / "trace.jsonl"
    spec = f"openai:{stub.url}#stub-model"
    args = ["--workspace", str(workspace), "--output", "jsonl", "--trace", str(trace)]
    proc = bosun("run", "What does notes.txt say?", "--model", spec, *args)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [e["type"] for e in events if e["type"] != "text"]
    assert kinds == ["session", "turn", "tool_call", "tool_result", "turn", "result"]
    assert events[-1]["final_text"] == "It says hello."
    second = stub.calls("POST /v1/chat/completions")[1]["body"]["messages"]
    call = second[-2]["tool_calls"][0]
    assert call["function"] == {"name": "read_file", "arguments": '{"path": "notes.txt"}'}
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == call["id"]
    assert "hello from bosun" in second[-1]["content"]
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert records[0]["tool_calls"] == [{"name": "read_file", "arguments": {"path": "notes.txt"}}]
    assert records[0]["messages"][-1] == {"role": "user", "content": "What does notes.txt say?"}


def test_bosun_run_on_the_completions_wire_sends_bosuns_prompt(
    cli_wired: None, stub: Stub, workspace: Path
) -> None:
    stub.on(
        "POST /v1/completions",
        Reply(events=[completion_event("Hi there."), completion_event("", "stop")]),
    )
    spec = f"openai:{stub.url}#stub-model"
    proc = bosun(
        "run", "hi", "--model", spec, "--workspace", str(workspace), "--wire", "completions"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Hi there.\n"
    body = stub.calls("POST /v1/completions")[0]["body"]
    assert body["prompt"].startswith("<|im_start|>system")  # bosun's template, not the server's


def test_chat_chunk_defaults_are_empty() -> None:
    assert ChatChunk() == ChatChunk("", "", (), (), None, None)


# --- the real server ----------------------------------------------------------------


@pytest.mark.model
def test_real_server_completions_stream(server: str) -> None:
    from agent.prompt import render

    driver = open_openai(f"openai:{server}#{MODEL_ALIAS}", wire="completions")
    assert driver.available == [MODEL_ALIAS]
    prompt = render([System("You are helpful."), User("Say hello.")], model=driver.model)
    assert prompt.startswith("<|im_start|>system")  # bosun rendered it: chatml for SmolLM2
    chunks = list(driver.stream(prompt, stop=["<|im_end|>"], max_tokens=6))
    assert any(c.text for c in chunks[:-1])
    last = chunks[-1]
    assert last.finish_reason in ("stop", "length") and last.usage is not None
    assert 0 < last.usage.completion_tokens <= 6 and last.usage.ms > 0
    driver.close()


@pytest.mark.model
def test_real_server_takes_a_grammar(server: str) -> None:
    driver = open_openai(f"openai:{server}#{MODEL_ALIAS}", wire="completions")
    grammar = 'root ::= "yes" | "no"'
    done = collect(driver.stream("Is water wet? Answer:", max_tokens=4, grammar=grammar))
    assert done.text in ("yes", "no")
    driver.close()


@pytest.mark.model
def test_real_server_chat_with_tools(server: str) -> None:
    """SmolLM2 may or may not call the tool; the request, the stream and its end must
    work either way."""
    driver = open_openai(f"openai:{server}#{MODEL_ALIAS}")
    assert driver.chat_mode and not driver.supports_grammar
    history: list[Message] = [System("You are helpful."), User("Read notes.txt.")]
    messages = chat_messages(history)
    chunks = list(driver.chat(messages, [READ_FILE], max_tokens=6))
    assert all(isinstance(c, ChatChunk) for c in chunks)
    assert any(c.text or c.calls for c in chunks)
    last = chunks[-1]
    assert last.finish_reason in ("stop", "length") and last.usage is not None
    assert 0 < last.usage.completion_tokens <= 6
    driver.close()


@pytest.mark.model
def test_real_server_unknown_model(server: str) -> None:
    with pytest.raises(UsageError, match=f"'smollm3' is not served by .*it has: {MODEL_ALIAS}"):
        open_openai(f"openai:{server}#smollm3")
