"""A client that sends what no client should: every line gets an answer (or, for a bad
response, is dropped), nothing is printed as a traceback, and the agent goes on and
exits when stdin closes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.run.acp.client import REPO

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
GARBAGE = [
    "this is not json",
    "[1, 2, 3]",
    "42",
    '{"jsonrpc": "2.0", "id": [1], "result": {}}',  # a response with an unhashable id
    '{"jsonrpc": "2.0", "id": 7, "error": "not an object"}',  # a response's bad error
    '{"jsonrpc": "2.0", "id": 2, "method": 5}',
    '{"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": [1]}',
    '{"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": {"cwd": 5}}',
    '{"jsonrpc": "2.0", "id": 5, "method": "no/such/method", "params": {}}',
    '{"jsonrpc": "2.0", "id": 6, "method": "session/prompt",'
    ' "params": {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}}',
    "[" * 100_000 + "]" * 100_000,  # deeper than any parser's recursion
]


def test_garbage_gets_errors_not_tracebacks_nor_a_hang(tmp_path: Path) -> None:
    lines = [json.dumps(INIT), *GARBAGE, json.dumps({**INIT, "id": 99})]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "acp", "--model", "scripted:/nonexistent.jsonl"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    by_id = {r.get("id"): r for r in replies if r.get("id") is not None}
    assert by_id[1]["result"]["agentCapabilities"]["loadSession"] is True
    assert by_id[99]["result"]["protocolVersion"] == 1  # still answering at the end
    for request_id, code in {2: -32600, 3: -32600, 4: -32602, 5: -32601, 6: -32602}.items():
        assert by_id[request_id]["error"]["code"] == code, by_id[request_id]
    anonymous = [r["error"]["code"] for r in replies if r.get("id") is None]
    # not JSON (twice: the deep one too), a batch, a number: each answered once
    assert sorted(anonymous) == [-32700, -32700, -32600, -32600]
    assert 7 not in by_id  # a response is never answered


def test_a_model_that_cannot_open_is_an_error_answer(tmp_path: Path, workspace: Path) -> None:
    new = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "session/new",
        "params": {"cwd": str(workspace), "mcpServers": []},
    }
    # stdin ends right after the request: its answer is still owed, and given
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "acp", "--model", f"scripted:{tmp_path / 'none.jsonl'}"],
        input=json.dumps(INIT) + "\n" + json.dumps(new) + "\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    (reply,) = [json.loads(x) for x in proc.stdout.splitlines() if '"id":2' in x]
    assert "scripted model file not found" in reply["error"]["data"]["details"]


def test_an_editor_that_leaves_mid_turn_gets_the_turn_cancelled(
    tmp_path: Path, workspace: Path
) -> None:
    """stdin closes while a 10-second answer streams: the turn is cancelled, answered,
    and the process exits at once instead of talking to nobody."""
    script = tmp_path / "slow.jsonl"
    script.write_text(json.dumps({"chunks": ["word "] * 200, "delay_ms": 50}) + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent", "acp", "--model", f"scripted:{script}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdin is not None and proc.stdout is not None
    new = {"cwd": str(workspace), "mcpServers": []}
    try:
        for message in (INIT, {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": new}):
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            reply = json.loads(proc.stdout.readline())
        session = reply["result"]["sessionId"]
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "talk"}]}
        proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt})
            + "\n"
        )
        proc.stdin.flush()
        assert '"agent_message_chunk"' in proc.stdout.readline()  # it is streaming
        out, err = proc.communicate(timeout=8)  # stdin closes here
    finally:
        proc.kill()
    assert proc.returncode == 0 and "Traceback" not in err
    (answer,) = [json.loads(x) for x in out.splitlines() if '"id":3' in x]
    assert answer["result"]["stopReason"] == "cancelled"


def test_a_lone_surrogate_gets_an_answer_and_the_end_of_input_no_wait() -> None:
    """`"\\ud800"` decodes to a string no UTF-8 line can carry: an answer that echoed it
    (the cwd not a folder, the method not found, the id itself) was never sent, and the
    end of input then waited 30 s for it. Each is answered, U+FFFD in its place."""
    surrogate = "\\ud800"  # as JSON writes it: the line itself is plain ASCII
    lines = [
        json.dumps(INIT),
        '{"jsonrpc": "2.0", "id": 2, "method": "session/new",'
        f' "params": {{"cwd": "/{surrogate}", "mcpServers": []}}}}',
        f'{{"jsonrpc": "2.0", "id": 3, "method": "no/{surrogate}", "params": {{}}}}',
        f'{{"jsonrpc": "2.0", "id": "{surrogate}", "method": "initialize",'
        ' "params": {"protocolVersion": 1}}',
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "acp", "--model", "scripted:/nonexistent.jsonl"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=20,  # the wait for answers never sent was END_WAIT_S, 30 s
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "UnicodeEncodeError" not in proc.stderr
    by_id = {r["id"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert "cwd is not a folder: /\ufffd" in by_id[2]["error"]["data"]["details"]
    assert by_id[3]["error"]["code"] == -32601
    assert by_id["\ufffd"]["result"]["protocolVersion"] == 1
