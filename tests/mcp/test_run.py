"""`bosun run` with MCP servers: a scripted model calls real servers' tools; approvals;
workspace servers; and no server process outlives bosun, however it ends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import tool_call
from tests.mcp.helpers import FAULT, mark, marked_pids, pypi_server, server_config, toml_server


def bosun_run(workspace: Path, script: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "agent", "run", "go", "--output", "jsonl"]
    cmd += ["--model", f"scripted:{script}", "--workspace", str(workspace), *flags]
    env = {k: v for k, v in os.environ.items() if k != "BOSUN_DEBUG"}
    return subprocess.run(
        cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env, timeout=120
    )


def events(stdout: str, kind: str) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return [e for e in lines if e["type"] == kind]


def fault_server(name: str = "fault", tag: str = "", *args: str, **extra: object) -> str:
    env = {"BOSUN_TEST_MARK": tag} if tag else {}
    return toml_server(name, sys.executable, [str(FAULT), *args], env=env, **extra)


def test_a_scripted_model_calls_the_time_and_git_servers(
    bosun_home: Path, workspace: Path, script_file
) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    server_config(
        bosun_home,
        toml_server("time", pypi_server("mcp-server-time"), [])
        + toml_server("git", pypi_server("mcp-server-git"), []),
    )
    script = script_file(
        tool_call("time__get_current_time", timezone="Europe/Paris"),
        tool_call("git__git_status", repo_path=str(workspace)),
        "done",
    )
    proc = bosun_run(workspace, script, "--approve", "auto")
    assert proc.returncode == 0, proc.stderr
    calls = events(proc.stdout, "tool_call")
    assert [c["name"] for c in calls] == ["time__get_current_time", "git__git_status"]
    results = events(proc.stdout, "tool_result")
    assert not any(r["is_error"] for r in results)
    assert '"timezone": "Europe/Paris"' in str(results[0]["content"])
    assert "notes.txt" in str(results[1]["content"])  # untracked, says git status
    # an MCP tool's result is a tool_result like any other, nothing of the server's own
    assert set(results[0]) == {"type", "id", "is_error", "content", "name", "ms", "decision"}
    assert results[0]["name"] == "time__get_current_time"


def test_mcp_tools_ask_unless_trusted_and_never_run_read_only(
    bosun_home: Path, workspace: Path, script_file
) -> None:
    script = script_file(tool_call("fault__echo", text="hi"), "done")
    server_config(bosun_home, fault_server())
    asked = events(bosun_run(workspace, script).stdout, "tool_result")
    assert asked[0]["is_error"] and "needs approval" in str(asked[0]["content"])
    assert "trusted = true" in str(asked[0]["content"])
    server_config(bosun_home, fault_server(trusted=True))
    trusted = events(bosun_run(workspace, script).stdout, "tool_result")
    assert trusted[0] == {**trusted[0], "is_error": False, "content": "hi"}
    read_only = bosun_run(workspace, script, "--approve", "read-only").stdout
    assert "not allowed in read-only mode" in str(events(read_only, "tool_result")[0]["content"])


def test_a_workspace_server_needs_the_flag_headless(workspace: Path, script_file) -> None:
    tag = mark()
    entry = {"command": sys.executable, "args": [str(FAULT)], "env": {"BOSUN_TEST_MARK": tag}}
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": entry}}))
    script = script_file(tool_call("repo__echo", text="hi"), "done")
    refused = bosun_run(workspace, script, "--approve", "auto")
    assert "MCP server repo not started: named by the workspace" in refused.stderr
    result = events(refused.stdout, "tool_result")[0]
    assert result["is_error"] and "unknown tool 'repo__echo'" in str(result["content"])
    allowed = bosun_run(workspace, script, "--approve", "auto", "--allow-workspace-mcp")
    assert events(allowed.stdout, "tool_result")[0]["content"] == "hi"
    assert marked_pids(tag) == []


def test_a_failing_server_is_one_line_and_the_run_goes_on(
    bosun_home: Path, workspace: Path, script_file
) -> None:
    server_config(bosun_home, toml_server("broken", "no-such-mcp-server", []) + fault_server())
    script = script_file(tool_call("fault__echo", text="still"), "done")
    proc = bosun_run(workspace, script, "--approve", "auto")
    assert proc.returncode == 0
    lines = [line for line in proc.stderr.splitlines() if "broken" in line]
    assert lines == [
        "bosun: MCP server broken failed to start: command not found: no-such-mcp-server;"
        " its tools are absent"
    ]
    assert "Traceback" not in proc.stderr


def test_no_server_outlives_a_normal_exit_or_an_error(
    bosun_home: Path, workspace: Path, script_file
) -> None:
    tag = mark()
    # b stays after its stdin closes: only bosun's shutdown (a signal) ends it
    server_config(bosun_home, fault_server("a", tag) + fault_server("b", tag, "--linger"))
    script = script_file(tool_call("a__pid"), tool_call("b__pid"), "done")
    proc = bosun_run(workspace, script, "--approve", "auto")
    pids = [int(str(r["content"])) for r in events(proc.stdout, "tool_result")]
    assert proc.returncode == 0 and len(pids) == 2
    assert marked_pids(tag) == []
    # an error: the script ends before the model is done (a driver error, exit 1)
    short = script_file(tool_call("a__pid"))
    failed = bosun_run(workspace, short, "--approve", "auto")
    assert failed.returncode == 1
    assert events(failed.stdout, "tool_result") and marked_pids(tag) == []


def test_no_server_outlives_a_sigint_during_a_call(
    bosun_home: Path, workspace: Path, script_file
) -> None:
    tag = mark()
    server_config(bosun_home, fault_server("a", tag) + fault_server("b", tag, "--linger"))
    script = script_file(tool_call("a__hang"), "done")
    cmd = [sys.executable, "-m", "agent", "run", "go", "--output", "jsonl", "--approve", "auto"]
    cmd += ["--model", f"scripted:{script}", "--workspace", str(workspace)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the call is out: the server is hanging in it
            if json.loads(line)["type"] == "tool_call":
                break
        time.sleep(0.3)
        assert len(marked_pids(tag)) == 2
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 5
    while marked_pids(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marked_pids(tag) == []


@pytest.mark.parametrize("answer", ["y", "n"])
def test_chat_asks_once_before_starting_a_workspace_server(
    workspace: Path, script_file, answer: str
) -> None:
    from agent.run.chat import ChatSession
    from agent.run.config import load_config, replace
    from agent.run.settings import Settings

    entry = {"command": sys.executable, "args": [str(FAULT)]}
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": entry}}))
    config = replace(load_config(workspace), model=f"scripted:{script_file('hi')}")
    asked: list[str] = []

    def ask(spec: object) -> bool:
        asked.append(spec.name)  # type: ignore[attr-defined]
        return answer == "y"

    for _ in range(2):
        chat = ChatSession(
            Settings.from_config(config, workspace=workspace), lambda e: None, None, ask_server=ask
        )
        try:
            assert ("repo__echo" in chat.tools.names) == (answer == "y")
        finally:
            chat.close()
    assert asked == (["repo"] if answer == "y" else ["repo", "repo"])


def test_a_batch_shares_one_set_of_servers(
    bosun_home: Path, workspace: Path, script_file, tmp_path: Path
) -> None:
    tag = mark()
    server_config(bosun_home, fault_server("fault", tag, trusted=True))
    script = script_file(tool_call("fault__echo", text="from a task"), "done")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "prompt": "go"}) + "\n" for i in (1, 2)))
    cmd = [sys.executable, "-m", "agent", "run", "--tasks", str(tasks), "--jobs", "2"]
    cmd += ["--model", f"scripted:{script}", "--workspace", str(workspace)]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    results = events(proc.stdout, "tool_result")
    assert [r["content"] for r in results] == ["from a task", "from a task"]
    assert marked_pids(tag) == []


def test_mcp_list_shows_status_and_tools(bosun_home: Path, workspace: Path) -> None:
    server_config(
        bosun_home,
        fault_server()
        + toml_server("broken", "no-such-mcp-server", [])
        + toml_server("off", "x", [], enabled=False),
    )
    cmd = [sys.executable, "-m", "agent", "mcp", "list", "--json", "-w", str(workspace)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    rows = {r["server"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert rows["fault"]["status"] == "running" and "fault__echo" in rows["fault"]["tools"]
    assert "left out bad: its input schema" in rows["fault"]["note"]
    assert rows["broken"]["status"] == "failed" and "command not found" in rows["broken"]["note"]
    assert rows["off"]["status"] == "disabled" and rows["off"]["tools"] == []
    plain = subprocess.run([*cmd[:-3], "-w", str(workspace)], capture_output=True, text=True)
    assert plain.stdout.splitlines()[0].split("\t") == ["server", "from", "status", "tools", "note"]


def test_slash_mcp_in_chat(bosun_home: Path, workspace: Path, script_file) -> None:
    from agent.run.chat import ChatSession
    from agent.run.config import load_config, replace
    from agent.run.settings import Settings
    from tests.ui.test_commands import FakeRepl

    server_config(bosun_home, fault_server())
    config = replace(load_config(workspace), model=f"scripted:{script_file('hi')}")
    chat = ChatSession(Settings.from_config(config, workspace=workspace), lambda e: None, None)
    try:
        out = FakeRepl(chat).run("/mcp")
    finally:
        chat.close()
    assert "fault" in out and "running" in out and "fault__echo" in out
