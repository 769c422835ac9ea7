"""`bosun run --model openai:…` end to end against the stub server: exit codes,
one-line errors, and both wires through the runtime."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.openai_servers import (
    Reply,
    Stub,
    bosun,
    chat_event,
    completion_event,
    free_port,
    tool_delta,
)

pytest.importorskip("openai")


def test_server_down_via_the_command_line(workspace: Path) -> None:
    """Exit 1 and one line on stderr, no traceback."""
    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = bosun("run", "hi", "--model", f"openai:{url}#m", "--workspace", str(workspace))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == f"bosun: error: cannot reach {url}: connection refused (after 4 tries)\n"


def test_unknown_model_via_the_command_line(stub: Stub, workspace: Path) -> None:
    spec = f"openai:{stub.url}#nope"
    proc = bosun("run", "hi", "--model", spec, "--workspace", str(workspace))
    assert proc.returncode == 2
    assert proc.stderr.startswith("bosun: error: model 'nope' is not served by")
    assert "it has: stub-model" in proc.stderr and proc.stderr.count("\n") == 1


def test_wire_is_refused_for_local_models(workspace: Path) -> None:
    proc = bosun("run", "hi", "--api", "chat", "--workspace", str(workspace))
    assert proc.returncode == 2 and "--api is for openai: models" in proc.stderr


def test_bosun_run_on_the_chat_wire_runs_the_servers_tool_calls(
    stub: Stub, workspace: Path, tmp_path: Path
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


def test_bosun_run_on_the_completions_wire_sends_bosuns_prompt(stub: Stub, workspace: Path) -> None:
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
