"""A long-lived bosun (chat, acp, mcp serve) runs many sandboxed commands in one
process: none of them may leave a zombie behind. bwrap's pid 1 outlives by a moment the
bwrap that reports the exit status, and bosun, a child subreaper, inherits it; each
call used to leave one (28 under one test process)."""

from __future__ import annotations

import os

from tests.tools.sandbox.conftest import SandboxTool


def zombie_children() -> set[int]:
    """This process's children that exited and were never waited for."""
    found = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as fh:
                children = fh.read().split()
        except OSError:  # a thread that ended meanwhile
            continue
        for pid in children:
            try:
                with open(f"/proc/{pid}/stat", "rb") as fh:
                    state = fh.read().rsplit(b") ", 1)[1].split()[0]
            except (OSError, IndexError):  # reaped meanwhile
                continue
            if state == b"Z":
                found.add(int(pid))
    return found


def test_sandboxed_commands_leave_no_zombie_children(sandboxed: SandboxTool) -> None:
    before = zombie_children()  # another test's, if any: not this one's to judge
    for i in range(12):
        result = sandboxed("bash", command=f"echo {i}")
        assert result.content == str(i)
    assert zombie_children() - before == set()


def test_nor_do_commands_that_fail_time_out_or_leave_daemons(sandboxed: SandboxTool) -> None:
    before = zombie_children()
    sandboxed("bash", command="exit 3")
    sandboxed("bash", command="sleep 30", timeout=1)
    sandboxed("bash", command="setsid -f sleep 30; sleep 30 & echo started")
    assert zombie_children() - before == set()
