"""bash: where it runs, what it returns, and that nothing it starts survives a timeout."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from agent.tools.shell import HEAD_BYTES, TAIL_BYTES
from tests.tools.conftest import RunTool


def _gone(pid: int, within: float = 2.0) -> bool:
    """True once `pid` is dead or a zombie (an unreaped zombie runs nothing)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


def test_runs_in_the_workspace_with_stderr_merged(run_tool: RunTool, workspace: Path) -> None:
    result = run_tool("bash", command="pwd; cat notes.txt; echo oops >&2")
    assert not result.is_error
    assert result.content == f"{workspace.resolve()}\nhello from bosun\noops"


def test_exit_code_is_stated_and_stdin_is_empty(run_tool: RunTool) -> None:
    failed = run_tool("bash", command="echo partial; exit 3")
    assert not failed.is_error and failed.content == "partial\n[exit code 3]"
    assert run_tool("bash", command="cat").content == "(no output, exit code 0)"


def test_timeout_kills_the_command_and_its_children(run_tool: RunTool, workspace: Path) -> None:
    start = time.monotonic()
    # `env -i`: the child carries no marker, so only the process-group kill can take it
    command = "env -i sleep 1000 & echo $! > child.pid; sleep 1000"
    result = run_tool("bash", command=command, timeout=1)
    elapsed = time.monotonic() - start
    assert result.is_error and "timed out after 1 s" in result.content
    assert elapsed < 4, elapsed
    child = int((workspace / "child.pid").read_text())
    try:
        assert _gone(child), f"background child {child} survived the timeout"
    finally:  # a broken kill must not leave a sleep behind for 1000 s
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def test_background_processes_do_not_outlive_the_call(run_tool: RunTool, workspace: Path) -> None:
    start = time.monotonic()
    result = run_tool("bash", command="sleep 1000 & echo $! > bg.pid; echo started")
    assert result.content == "started" and time.monotonic() - start < 3
    child = int((workspace / "bg.pid").read_text())
    try:
        assert _gone(child), f"background process {child} outlived the call"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def test_huge_output_keeps_head_and_tail_and_says_so(run_tool: RunTool) -> None:
    result = run_tool("bash", command="seq 1 400000")
    assert not result.is_error
    assert len(result.content.encode()) < HEAD_BYTES + TAIL_BYTES + 200
    assert result.content.startswith("1\n2\n3\n") and result.content.endswith("\n400000")
    assert "bytes of output omitted" in result.content


def test_non_utf8_output_is_decoded_with_replacement(run_tool: RunTool) -> None:
    result = run_tool("bash", command=r"printf '\xff\xfeok\n'")
    assert not result.is_error and result.content == "\ufffd\ufffdok"


def test_timeout_out_of_range_is_refused(run_tool: RunTool) -> None:
    result = run_tool("bash", command="true", timeout=0)
    assert result.is_error and "between 1 and 600" in result.content
