"""The sandbox tests run real bubblewrap, never a mock. Where bwrap cannot run they skip,
with the reason; under CI (CI=true) they fail instead, so CI cannot skip them silently.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from agent.history import ToolCall, ToolResult
from agent.tools import ToolContext, default_registry
from agent.tools.sandbox import SandboxPolicy, probe

SandboxTool = Callable[..., ToolResult]
NOTE = "bosun's sandbox may have refused this"
# Python that forks up to 60 sleeping children and prints how many it got: a count of
# what the process limit let through, without bash's fork retries in the way.
FORKS = (
    "import os, time\nn = 0\nfor _ in range(60):\n    try:\n        pid = os.fork()\n"
    "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(3)\n"
    "        os._exit(0)\n    n += 1\nprint(n)\n"
)


def under_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


@pytest.fixture
def policy() -> SandboxPolicy:
    """The policy bosun would use here, from the real probe."""
    found = probe()
    if isinstance(found, str):
        if under_ci():
            pytest.fail(f"CI must run the sandbox tests, but {found}")
        pytest.skip(f"bubblewrap cannot run here: {found}")
    return found


@pytest.fixture
def fake_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home folder for the test, set as $HOME. On the real disk (/var/tmp), not in
    /tmp, which the sandbox replaces anyway: only hiding the home can hide this one."""
    home = Path(tempfile.mkdtemp(prefix="bosun-home-", dir="/var/tmp"))
    monkeypatch.setenv("HOME", str(home))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def small(policy: SandboxPolicy) -> SandboxPolicy:
    """Tight limits, so the tests that reach them are quick and light."""
    return replace(policy, max_processes=64, max_file_bytes=4 << 20, tmpfs_bytes=8 << 20)


@pytest.fixture
def sandboxed(workspace: Path, policy: SandboxPolicy) -> SandboxTool:
    """sandboxed("bash", command=…, policy=…) -> ToolResult: the real tool through the
    registry, as the loop calls it, inside the sandbox."""
    registry = default_registry()

    def run(name: str, *, policy: SandboxPolicy = policy, **arguments: object) -> ToolResult:
        call = ToolCall("t1", name, dict(arguments))
        return registry.execute(call, ToolContext(workspace, policy))

    return run


def processes_in(folder: Path) -> list[int]:
    """Pids whose working directory is `folder`: whatever a command left running there."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd") == str(folder):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def settle(folder: Path, within: float = 3.0) -> list[int]:
    """The processes left in `folder` once `within` seconds have passed or none remain."""
    deadline = time.monotonic() + within
    while (left := processes_in(folder)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def kill_leftovers(folder: Path) -> None:
    """A sandbox that failed must not leave a test's loop or bomb running."""
    for pid in processes_in(folder):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
