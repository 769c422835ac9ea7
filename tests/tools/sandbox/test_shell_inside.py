"""bash inside the sandbox behaves as bash outside it: the same folder, merged output,
exit codes, head-and-tail capture, and a timeout that takes everything down."""

from __future__ import annotations

import time
from pathlib import Path

from agent.tools.shell import HEAD_BYTES, TAIL_BYTES
from tests.tools.sandbox.conftest import NOTE, SandboxTool, settle


def test_runs_in_the_workspace_with_stderr_merged(sandboxed: SandboxTool, workspace: Path) -> None:
    result = sandboxed("bash", command="pwd; cat notes.txt; echo oops >&2")
    assert not result.is_error
    assert result.content == f"{workspace.resolve()}\nhello from bosun\noops"


def test_exit_code_is_stated_stdin_is_empty_and_no_note_for_plain_failures(
    sandboxed: SandboxTool,
) -> None:
    failed = sandboxed("bash", command="echo partial; exit 3")
    assert failed.content == "partial\n[exit code 3]"  # nothing the sandbox did
    assert sandboxed("bash", command="cat").content == "(no output, exit code 0)"


def test_huge_output_keeps_head_and_tail(sandboxed: SandboxTool) -> None:
    result = sandboxed("bash", command="seq 1 400000")
    assert len(result.content.encode()) < HEAD_BYTES + TAIL_BYTES + 200
    assert result.content.startswith("1\n2\n3\n") and result.content.endswith("\n400000")


def test_a_timeout_kills_everything_the_command_started(
    sandboxed: SandboxTool, workspace: Path
) -> None:
    start = time.monotonic()
    command = "env -i sleep 1000 & setsid -f sleep 1000; sleep 1000"
    result = sandboxed("bash", command=command, timeout=1)
    assert time.monotonic() - start < 4
    assert result.is_error and "timed out after 1 s" in result.content
    assert NOTE not in result.content
    assert settle(workspace) == []


def test_background_processes_do_not_outlive_the_call(
    sandboxed: SandboxTool, workspace: Path
) -> None:
    start = time.monotonic()
    result = sandboxed("bash", command="sleep 1000 & nohup sleep 1000 & disown; echo started")
    assert result.content == "started" and time.monotonic() - start < 3
    assert settle(workspace) == []
