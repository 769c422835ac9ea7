"""The machine under bosun: commands that try to outlive their call, a disk that fills,
a BOSUN_HOME that is not a folder, tasks files with bad bytes. Real processes, real
file-size limits, real exit codes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import tool_call
from tests.hostile.conftest import RunBosun, jsonl_steps
from tests.tools.conftest import RunTool


def gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().split(") ", 1)[1].startswith("Z"):
                    return True  # a zombie has stopped running
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.05)
    return False


def pids_in(workspace: Path, name: str) -> list[int]:
    """The pids the command's children wrote; none when they were killed before they
    could write (on a loaded machine the call can end first: nothing outlived it)."""
    deadline = time.monotonic() + 3
    while not (workspace / name).exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    path = workspace / name
    return [int(p) for p in path.read_text().split()] if path.exists() else []


@pytest.mark.parametrize(
    "command",
    [
        # waits for the pid: the call returns the moment bash exits, and the cleanup
        # may otherwise kill the child before it has written it
        "setsid -f sh -c 'echo $$ > pids; exec sleep 1000'; until [ -s pids ]; do sleep 0.01;"
        " done; echo started",
        # a daemon that forks twice and leaves the group and the session
        "setsid -f sh -c '(setsid sh -c \"echo \\$\\$ >> pids; exec sleep 1000\" &)'; "
        "sleep 0.3; echo started",
        "nohup sleep 1000 >/dev/null 2>&1 & echo $! > pids; disown; echo started",
    ],
)
def test_nothing_a_command_starts_outlives_the_call(
    run_tool: RunTool, workspace: Path, command: str
) -> None:
    result = run_tool("bash", command=command, timeout=10)
    assert result.content.endswith("started"), result.content
    for pid in pids_in(workspace, "pids"):
        try:
            assert gone(pid), f"{pid} outlived the call ({command})"
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# -- the disk fills ----------------------------------------------------------------------


def bosun_with_file_limit(
    kb: int, workspace: Path, script: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """`bosun run` whose files may not grow past `kb` kB (ulimit -f): every write past it
    fails with EFBIG, exactly as a full disk fails it with ENOSPC."""
    argv = [sys.executable, "-m", "agent", "run", "go", "-m", f"scripted:{script}"]
    argv += ["-w", str(workspace), "--output", "jsonl", *args]
    env = {k: v for k, v in os.environ.items() if k != "BOSUN_DEBUG"}
    return subprocess.run(
        ["/bin/sh", "-c", f'ulimit -f {kb} && exec "$@"', "sh", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize("kb", [1, 12])  # at the first line; in the middle of the run
def test_a_full_disk_ends_the_run_as_an_error_with_its_result(
    workspace: Path, tmp_path: Path, kb: int
) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(jsonl_steps([tool_call("read_file", path="notes.txt"), "x" * 30_000, "done"]))
    proc = bosun_with_file_limit(kb, workspace, script)
    assert proc.returncode == 1, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["type"] == "result" and result["status"] == "error"
    assert result["error"].startswith("cannot write the session file")


def test_a_trace_file_that_cannot_grow_ends_the_run_the_same_way(
    workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text(jsonl_steps(["y" * 30_000]))
    trace = tmp_path / "trace.jsonl"
    # the session folder is elsewhere; only the trace hits the limit first
    proc = bosun_with_file_limit(20, workspace, script, "--trace", str(trace))
    assert proc.returncode == 1 and "internal error" not in proc.stderr, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["status"] == "error" and "cannot write the" in result["error"]


# -- configuration -----------------------------------------------------------------------


def test_bosun_home_that_is_a_file_is_a_usage_error(
    bosun: RunBosun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    monkeypatch.setenv("BOSUN_HOME", str(home))
    run = bosun(["done"])
    assert run.code == 2
    assert run.stderr.startswith("bosun: error: cannot write sessions in")
    assert len(run.stderr.splitlines()) == 1 and "internal error" not in run.stderr


def test_a_tasks_file_with_bad_bytes_and_deep_lines_fails_line_by_line(
    tmp_path: Path, workspace: Path
) -> None:
    script = tmp_path / "s.jsonl"
    script.write_text(jsonl_steps(["ok"]))
    tasks = tmp_path / "tasks.jsonl"
    lines = [
        json.dumps({"id": "good", "prompt": "p"}).encode(),
        b'{"id": "latin1", "prompt": "caf\xe9"}',
        ('{"id": "deep", "prompt": "p", "x": ' + "[" * 5000 + "]" * 5000 + "}").encode(),
        b'{"id": "surrogate", "prompt": "\\ud800"}',
        b"\xff\xfe\x00",
    ]
    tasks.write_bytes(b"\n".join(lines) + b"\n")
    argv = [sys.executable, "-m", "agent", "run", "--tasks", str(tasks)]
    argv += ["-m", f"scripted:{script}", "-w", str(workspace)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "internal error" not in proc.stderr, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    results = {e["task"]: e for e in events if e["type"] == "result"}
    assert results["good"]["status"] == "done"
    assert results["surrogate"]["status"] == "done"  # replaced, then run
    for line in (2, 3, 5):
        bad = results[f"line {line}"]
        assert bad["status"] == "error" and "\n" not in bad["error"], bad
    assert "UTF-8" in results["line 2"]["error"]
    assert "deeper than" in results["line 3"]["error"]
