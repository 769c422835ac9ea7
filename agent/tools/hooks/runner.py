"""One hook command, run: its JSON on stdin, the workspace as its folder, a time limit
and bounded output.

A hook is a program someone configured, and it may hang, flood its pipes, ignore its
stdin or fork a daemon. None of that may stop a request: the command runs in a process
group of its own that is killed at the time limit (and once the command is done, with
whatever it left behind), each stream keeps its first MAX_OUTPUT bytes while the rest is
read and dropped (a writer never blocks on a full pipe), and stdin is written from a
thread, so a hook that never reads it cannot block bosun either.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from agent.tools.shell import kill_marked

if TYPE_CHECKING:
    from agent.tools.sandbox import SandboxPolicy

MAX_OUTPUT = 64 * 1024  # bytes kept of stdout and of stderr, each
GRACE_S = 0.5  # how long the readers get once the group is gone
MARK = "BOSUN_HOOK_MARK"  # finds what a hook left outside its group (setsid, double fork)


@dataclass(frozen=True)
class Ran:
    """How a hook's command ended."""

    status: int | None  # exit code; negative: the signal that killed it; None: see below
    stdout: str = ""
    stderr: str = ""
    cut: bool = False  # output past MAX_OUTPUT was dropped
    ms: int = 0
    timed_out: bool = False
    failed: str = ""  # it could not be started, and why


class _Keep:
    """Reads a pipe to its end, keeping the first MAX_OUTPUT bytes."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self.pipe = pipe
        self.kept = bytearray()
        self.dropped = 0
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(self.pipe.fileno(), 65536):
                room = MAX_OUTPUT - len(self.kept)
                self.kept += chunk[: max(room, 0)]
                self.dropped += max(len(chunk) - max(room, 0), 0)

    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")


def _feed(pipe: IO[bytes], data: bytes) -> None:
    """Write stdin and close it; a hook that exits (or is killed) without reading it
    only breaks the pipe."""
    with contextlib.suppress(OSError, ValueError):
        pipe.write(data)
    with contextlib.suppress(OSError, ValueError):
        pipe.close()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_hook(
    command: str,
    stdin: bytes,
    cwd: Path,
    timeout: float,
    env: dict[str, str],
    sandbox: SandboxPolicy | None = None,
) -> Ran:
    """Run `command` with bash (sh where there is none) in `cwd`; `env` on top of bosun's
    own environment; inside `sandbox` where one is given (a workspace's hook: the
    policy bash has). Never raises for what the command does; Ctrl-C kills it and goes
    up."""
    token = secrets.token_hex(8)
    if sandbox is None:
        shell = shutil.which("bash") or "/bin/sh"
        return _run([shell, "-c", command], stdin, cwd, timeout, {**os.environ, **env}, token)
    from agent.tools.sandbox import inner_env
    from agent.tools.sandbox_run import sandboxed_argv

    inside = inner_env(os.environ, {**env, MARK: token})
    with sandboxed_argv(sandbox, cwd, command, inside) as call:
        outside = {"PATH": os.environ.get("PATH", os.defpath)}
        return _run(call.argv, stdin, cwd, timeout, outside, token)


def _run(
    argv: list[str], stdin: bytes, cwd: Path, timeout: float, env: dict[str, str], token: str
) -> Ran:
    started = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env={**env, MARK: token},
        )
    except OSError as exc:
        return Ran(None, failed=exc.strerror or str(exc))
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = _Keep(proc.stdout), _Keep(proc.stderr)
    threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True).start()
    status: int | None
    try:
        status = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        status = None
    finally:  # the timeout, Ctrl-C, or what the hook left running in the background
        _kill_group(proc.pid)
        if proc.poll() is None:
            proc.wait()
        kill_marked(MARK, token)
    for keep in (out, err):
        keep.thread.join(GRACE_S)
        if not keep.thread.is_alive():  # else something still writes: left to its reader
            with contextlib.suppress(OSError):
                keep.pipe.close()
    ms = round((time.perf_counter() - started) * 1000)
    cut = bool(out.dropped or err.dropped)
    return Ran(status, out.text(), err.text(), cut, ms, timed_out=status is None)
