"""The OpenAI-compatible driver: a real llama-cpp-python server, and a stub server.

The real server (started once for the module's model tests) proves the plumbing end to
end. What a real server does with tool calls depends on the model, so the parsing of
structured tool-call deltas, retries and error paths run against a tiny stub that
replays canned responses and records every request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

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
from agent.loop.turn import decode_call
from agent.protocol.dialect import chat_messages
from drivers.base import ChatChunk, DriverError, RawCall, Request, UsageError, collect
from drivers.openai_http import open_openai, parse_spec
from tests.helpers import READ_FILE
from tests.openai_servers import (
    MODEL_ALIAS,
    Reply,
    Stub,
    chat_event,
    completion_event,
    llama_server,
    stub_driver,
    tool_delta,
)

pytest.importorskip("openai")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with llama_server(log) as url:
        yield url


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
        open_openai("openai:http://127.0.0.1:9/v1#m", api="responses")


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
    notes: list[str] = []
    calls = [decode_call(call, notes) for c in chunks for call in c.calls]
    assert calls == [
        ToolCall("call_x", "read_file", {"path": "a.txt"}),
        ToolCall("call_y", "read_file", {"path": "b.txt"}),
    ]
    assert notes == []
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
    raw = [call for c in chunks for call in c.calls]
    assert [(call.name, call.cut_off) for call in raw] == [("list_dir", False), ("read_file", True)]
    notes: list[str] = []
    assert [c.name for call in raw if (c := decode_call(call, notes))] == ["list_dir"]
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
    raw = [call for c in chunks for call in c.calls]
    assert raw == [RawCall("a", "read_file", "{path: a}"), RawCall("b", "read_file", '["a"]')]
    notes: list[str] = []
    assert not [c for call in raw if (c := decode_call(call, notes))]
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
        list(stub_driver(stub, api="completions").stream(Request("p")))


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
    driver = stub_driver(stub, api="completions")
    assert driver.info.grammar and not driver.info.chat
    done = collect(
        driver.stream(Request("<prompt>", stop=["<|im_end|>"], max_tokens=5, grammar="G"))
    )
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
    done = collect(stub_driver(stub, api="completions").stream(Request("p")))
    assert done.finish_reason == "length" and done.usage.completion_tokens == 2
    body = stub.calls("POST /v1/completions")[0]["body"]
    assert "grammar" not in body and "stop" not in body


def test_chat_chunk_defaults_are_empty() -> None:
    assert ChatChunk() == ChatChunk("", "", (), None, None)


# --- the real server ----------------------------------------------------------------


@pytest.mark.model
def test_real_server_completions_stream(server: str) -> None:
    from agent.protocol.render import render

    driver = open_openai(f"openai:{server}#{MODEL_ALIAS}", api="completions")
    assert driver.available == [MODEL_ALIAS]
    prompt = render([System("You are helpful."), User("Say hello.")], model=driver.model)
    assert prompt.startswith("<|im_start|>system")  # bosun rendered it: chatml for SmolLM2
    chunks = list(driver.stream(Request(prompt, stop=["<|im_end|>"], max_tokens=6)))
    assert any(c.text for c in chunks[:-1])
    last = chunks[-1]
    assert last.finish_reason in ("stop", "length") and last.usage is not None
    assert 0 < last.usage.completion_tokens <= 6 and last.usage.ms > 0
    driver.close()


@pytest.mark.model
def test_real_server_takes_a_grammar(server: str) -> None:
    driver = open_openai(f"openai:{server}#{MODEL_ALIAS}", api="completions")
    grammar = 'root ::= "yes" | "no"'
    done = collect(driver.stream(Request("Is water wet? Answer:", max_tokens=4, grammar=grammar)))
    assert done.text in ("yes", "no")
    driver.close()


@pytest.mark.model
def test_real_server_chat_with_tools(server: str) -> None:
    """SmolLM2 may or may not call the tool; the request, the stream and its end must
    work either way."""
    driver = open_openai(f"openai:{server}#{MODEL_ALIAS}")
    assert driver.info.chat and not driver.info.grammar
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
