"""Approvals with the sandbox: auto-edit runs sandboxed bash unasked, ask still asks, and
no sandbox means bash asks as it always did. Through the real loop and `bosun run`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from agent.history import ToolResult
from agent.loop.runtime import Agent
from agent.tools.sandbox import SandboxPolicy
from tests.helpers import make_agent, tool_call
from tests.tools.sandbox.conftest import NOTE

SHELL = tool_call("bash", command="touch ran.txt")


def results(agent: Agent) -> list[ToolResult]:
    return [m for m in agent.history if isinstance(m, ToolResult)]


def test_auto_edit_runs_sandboxed_bash_without_asking(
    workspace: Path, policy: SandboxPolicy
) -> None:
    with tempfile.TemporaryDirectory(dir="/var/tmp") as outside:  # the real disk, not /tmp
        shell = tool_call("bash", command=f"touch ran.txt; touch {outside}/escaped")
        agent, _, _ = make_agent([shell, "done"], workspace, approve="auto-edit")
        agent.sandbox = policy
        agent.run("go")
        assert not Path(outside, "escaped").exists()
    [result] = results(agent)
    assert not result.is_error and (workspace / "ran.txt").exists()
    assert "Read-only file system" in result.content and NOTE in result.content


def test_ask_still_asks_with_the_sandbox_on(workspace: Path, policy: SandboxPolicy) -> None:
    agent, _, _ = make_agent([SHELL, "done"], workspace, approve="ask")
    agent.sandbox = policy
    agent.run("go")
    [shell] = results(agent)
    assert shell.is_error and "needs approval and nobody can approve here" in shell.content
    assert not (workspace / "ran.txt").exists()


def test_without_the_sandbox_auto_edit_asks_and_says_why(workspace: Path) -> None:
    agent, _, _ = make_agent([SHELL, "done"], workspace, approve="auto-edit")
    agent.run("go")
    [shell] = results(agent)
    assert shell.is_error and "runs unasked only inside the sandbox" in shell.content
    assert "--approve auto" in shell.content and not (workspace / "ran.txt").exists()


def bosun_run(workspace: Path, script: Path, *flags: str, env: dict[str, str] | None = None):
    cmd = [sys.executable, "-m", "agent", "run", "go", "--output", "jsonl"]
    cmd += ["--model", f"scripted:{script}", "--workspace", str(workspace), *flags]
    base = {k: v for k, v in os.environ.items() if k != "BOSUN_DEBUG"}
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**base, **(env or {})},
        timeout=120,
    )


def tool_results(stdout: str) -> list[dict[str, object]]:
    events = [json.loads(line) for line in stdout.splitlines()]
    return [e for e in events if e["type"] == "tool_result"]


def test_bosun_run_sandboxes_by_default(
    workspace: Path, script_file, policy: SandboxPolicy
) -> None:
    script = script_file(tool_call("bash", command="echo $OPENAI_API_KEY; touch ran.txt"), "ok")
    proc = bosun_run(
        workspace, script, "--approve", "auto-edit", env={"OPENAI_API_KEY": "sk-visible"}
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    [result] = tool_results(proc.stdout)
    assert "sk-visible" not in str(result["content"]) and (workspace / "ran.txt").exists()


def test_bosun_run_sandbox_off_asks_again(workspace: Path, script_file) -> None:
    script = script_file(tool_call("bash", command="touch ran.txt"), "ok")
    proc = bosun_run(workspace, script, "--approve", "auto-edit", "--sandbox", "off")
    [result] = tool_results(proc.stdout)
    assert result["is_error"] and "--sandbox on" in str(result["content"])
    assert not (workspace / "ran.txt").exists()


def test_where_bubblewrap_cannot_run(workspace: Path, script_file) -> None:
    script = script_file(tool_call("bash", command="touch ran.txt"), "ok")
    missing = {"BOSUN_BWRAP": "/nonexistent/bwrap"}
    on = bosun_run(workspace, script, "--sandbox", "on", env=missing)
    assert on.returncode == 2 and on.stdout == ""
    assert on.stderr == (
        "bosun: error: --sandbox on, but bubblewrap (bwrap) is not installed"
        " (install bubblewrap or use --sandbox off)\n"
    )
    auto = bosun_run(workspace, script, "--approve", "auto-edit", env=missing)
    assert auto.returncode == 4  # the only call was refused: nothing was allowed
    assert auto.stderr.count("\n") == 1 and "bash is not sandboxed" in auto.stderr
    assert '"status": "refused"' in auto.stdout.splitlines()[-1]
    [result] = tool_results(auto.stdout)
    assert result["is_error"] and "needs approval" in str(result["content"])
    assert not (workspace / "ran.txt").exists()


def test_every_task_of_a_batch_runs_sandboxed(
    workspace: Path, tmp_path: Path, script_file, policy: SandboxPolicy
) -> None:
    script = script_file(tool_call("bash", command="echo key=$OPENAI_API_KEY > seen.txt"), "ok")
    tasks = tmp_path / "tasks.jsonl"
    lines = [{"id": f"t{i}", "prompt": "go", "workspace": str(workspace)} for i in (1, 2)]
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    cmd = [sys.executable, "-m", "agent", "run", "--tasks", str(tasks), "--jobs", "2"]
    cmd += ["--model", f"scripted:{script}", "--approve", "auto-edit"]
    env = {k: v for k, v in os.environ.items() if k != "BOSUN_DEBUG"}
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env={**env, "OPENAI_API_KEY": "sk-visible"},
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    results = tool_results(proc.stdout)
    assert len(results) == 2 and not any(r["is_error"] for r in results)
    assert (workspace / "seen.txt").read_text() == "key=\n"
