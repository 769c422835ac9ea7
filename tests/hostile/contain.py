"""Run one hostile call in a forked child with a wall-clock and an address-space limit.

A template that loops for ever, or a GGUF whose counts send a reader through terabytes,
would hang or kill the whole test run if bosun failed to bound it; in a child it only
fails the test that met it (and a contract's mutant check sees red, not a hang). The
child is a fork, so it starts in milliseconds with everything the test set up
(monkeypatches included), and reports what happened as one JSON object over a pipe.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Outcome:
    """What the call did: returned `value`, or raised `error` (its class names in `kinds`)."""

    timed_out: bool = False
    value: Any = None
    error: str = ""  # the exception's class name, "" when it returned
    kinds: list[str] = field(default_factory=list)  # the exception's classes, most derived first
    message: str = ""
    seconds: float = 0.0
    grew_mb: float = 0.0  # peak resident memory above where the child started
    died: str = ""  # the child ended without reporting (a signal, an exit)

    def failed_with(self, kind: str) -> bool:
        return kind in self.kinds

    def __str__(self) -> str:  # what a failing assert shows
        return (
            f"timed_out={self.timed_out} died={self.died!r} error={self.error} "
            f"message={self.message[:500]!r} value={str(self.value)[:500]!r} "
            f"seconds={self.seconds:.2f} grew_mb={self.grew_mb:.0f}"
        )


def _vm_data() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    return 0


def _rss_kb() -> int:
    with open("/proc/self/statm", encoding="ascii") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _child(fn: Callable[[], Any], memory_mb: int, out: int) -> None:
    report: dict[str, Any] = {}
    try:
        # The data limit (heap, anonymous maps), not the address space: a read-only map
        # of a 64 GB sparse model file costs no memory and must not fail here.
        limit = _vm_data() + memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
        base = _rss_kb()
        start = time.perf_counter()
        try:
            report["value"] = fn()
        except SystemExit as exc:  # the command line's way to end
            report["value"] = {"exit": exc.code}
        except BaseException as exc:
            report["error"] = type(exc).__name__
            report["kinds"] = [k.__name__ for k in type(exc).__mro__]
            report["message"] = str(exc)[:20_000]
        report["seconds"] = time.perf_counter() - start
        report["grew_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
        data = json.dumps(report, default=repr).encode("utf-8", "replace")
        while data:
            data = data[os.write(out, data) :]
    finally:
        os._exit(0)


def contained(fn: Callable[[], Any], *, seconds: float = 30, memory_mb: int = 1024) -> Outcome:
    """`fn()` in a forked child: killed after `seconds`, with `memory_mb` of heap more
    than it started with (past it, allocations raise MemoryError)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports over the pipe
        os.close(read)
        _child(fn, memory_mb, write)
    os.close(write)
    chunks: list[bytes] = []
    deadline = time.monotonic() + seconds
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read], [], [], left)
            if not ready:
                continue
            chunk = os.read(read, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read)
        if timed_out:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if timed_out:
        return Outcome(timed_out=True, seconds=seconds)
    if not chunks:
        return Outcome(died=f"child ended with status {status} and no report")
    return Outcome(**json.loads(b"".join(chunks)))


def cli(*argv: str) -> Callable[[], dict[str, Any]]:
    """A call of `bosun *argv` in process: its exit code, stdout and stderr."""

    def run() -> dict[str, Any]:
        from agent.cli.main import app

        out, err = io.StringIO(), io.StringIO()
        code: Any = 0
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                app(list(argv))
            except SystemExit as exc:
                code = exc.code
        return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}

    return run
