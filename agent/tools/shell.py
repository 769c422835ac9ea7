"""The shell tool. It runs in the workspace folder, inside bubblewrap when the run has a
sandbox policy (`agent.tools.sandbox`: the workspace writable, the rest read-only, no
network, no secrets); approval modes, not this module, decide whether it may run at all.

Nothing a command starts outlives the call. The command gets its own process group, so
a timeout (or Ctrl-C) kills everything in it; a process that leaves the group
(`setsid -f`, a double-forking daemon) is found by a marker in its environment, which
it inherited, and killed too; and bosun is a child subreaper (Linux), so such orphans
become its children and are reaped rather than left to init. Output is read by a thread
that keeps only the head and the tail, so `yes` costs bounded memory, and the middle
that was dropped is stated in the result.

An orphan that already exited when it is looked for has no environment left to carry
the marker, so it is reaped by another sign: a zombie child of bosun's that was a
process of a pid namespace below bosun's own was never started by bosun (what bosun
starts shares its namespace), so no `subprocess.Popen` waits for it. That is bwrap's
pid 1 of every sandboxed call, which outlives by a moment the bwrap that reports the
exit status; unreaped, each call left one zombie in a long-lived chat, acp or mcp
serve. An orphan outside the sandbox that exits on its own before the call ends
(`setsid -f true`) shares bosun's namespace, cannot be told from another thread's child
that its Popen is about to wait for, and stays a zombie until bosun exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import secrets
import select
import shlex
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agent.tools.registry import ToolContext, ToolError, tool

if TYPE_CHECKING:
    from agent.tools.sandbox import SandboxPolicy

DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 600
HEAD_BYTES = 10_000
TAIL_BYTES = 20_000  # the end of a log is where the error usually is
GRACE_S = 0.5
STOP_POLL_S = 0.1  # how soon a stop from another thread kills a running command
MARKER = "BOSUN_TOOL_CALL"  # in every command's environment: finds what left its group
_PR_SET_CHILD_SUBREAPER = 36
QUIET_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "TERM": "dumb",
    "NO_COLOR": "1",
}


class _Capture:
    """Drains a pipe, keeping the first HEAD_BYTES and the last TAIL_BYTES."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while chunk := os.read(self.fd, 65536):
            self.total += len(chunk)
            room = HEAD_BYTES - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            self.tail += chunk
            if len(self.tail) > TAIL_BYTES:
                del self.tail[:-TAIL_BYTES]

    def text(self) -> str:
        omitted = self.total - len(self.head) - len(self.tail)
        middle = f"\n[... {omitted} bytes of output omitted ...]\n".encode() if omitted else b""
        return (bytes(self.head) + middle + bytes(self.tail)).decode("utf-8", errors="replace")


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # nothing left in it
        os.killpg(pgid, signal.SIGKILL)


@functools.cache
def _become_subreaper() -> None:
    """Orphans of a command become bosun's children instead of init's (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


@functools.cache
def _namespace_depth() -> int:
    """How many pid namespaces, from /proc's down, bosun is in (1 where /proc is its own)."""
    return _nspid_count("self") or 1


def _nspid_count(pid: str) -> int:
    """The number of ids on the NSpid line of /proc/PID/status (0: unreadable)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"NSpid:"):
                    return len(line.split()) - 1
    except OSError:
        pass
    return 0


def _scan(marker: bytes) -> tuple[list[int], bool, list[int]]:
    """(pids that carry `marker`, whether some child of ours could not be read yet: a
    process in the middle of exec shows an empty environment for a moment, and our
    zombie children that were orphans of a deeper pid namespace: sandboxes' pid 1)."""
    marked, unsure, orphans = [], False, []
    me = os.getpid()
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as fh:
                env = fh.read()
        except ProcessLookupError:  # a zombie: no environment left to read
            env = b""
        except OSError:  # gone, or not ours to read
            continue
        try:
            if marker in env.split(b"\0"):
                marked.append(int(entry.name))
            elif not env:
                with open(f"/proc/{entry.name}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b") ", 1)[1].split()
                ours = int(fields[1]) == me
                unsure |= fields[0] != b"Z" and ours
                if fields[0] == b"Z" and ours and _from_a_deeper_namespace(entry.name):
                    orphans.append(int(entry.name))
        except (OSError, ValueError, IndexError):  # gone, or not ours to read
            continue
    return marked, unsure, orphans


def _from_a_deeper_namespace(pid: str) -> bool:
    """Whether `pid` lived in a pid namespace below ours: never a child bosun started."""
    return _nspid_count(pid) > _namespace_depth()


def _reap(pids: list[int]) -> None:
    """Orphans reparented to us (subreaper) stay zombies until waited for."""
    deadline = time.monotonic() + 0.5
    waiting = set(pids)
    while waiting and time.monotonic() < deadline:
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not our child: init reaps it
                done = pid
            if done:
                waiting.discard(pid)
        if waiting:
            time.sleep(0.005)


def _kill_marked(marker: bytes) -> None:
    """Kill every process whose environment carries `marker`: whatever the command left
    behind outside its group. Again while anything was found or could not be read, for
    a daemon that forks once more or a process caught in the middle of exec."""
    for _ in range(10):
        marked, unsure, orphans = _scan(marker)
        for pid in marked:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _reap(marked + orphans)
        if not marked and not unsure:
            return
        time.sleep(0.01)


def kill_marked(name: str, token: str) -> None:
    """Kill every process whose environment carries `name=token` (MCP servers' daemons)."""
    _kill_marked(f"{name}={token}".encode())


def run_command(
    command: str,
    cwd: Path,
    timeout: float,
    sandbox: SandboxPolicy | None = None,
    stop: threading.Event | None = None,
) -> tuple[str, int | None]:
    """(output, exit status); status None when the timeout killed it. `stop` set while it
    runs kills it like Ctrl-C does (KeyboardInterrupt), from whichever thread runs it."""
    token = secrets.token_hex(8)
    if sandbox is None:
        shell = shutil.which("bash") or "/bin/sh"
        env = {**os.environ, **QUIET_ENV, MARKER: token}
        return _run([shell, "-c", command], cwd, timeout, env, token, stop)
    from agent.tools.sandbox import inner_env
    from agent.tools.sandbox_run import sandboxed_argv

    inside = inner_env(os.environ, {**QUIET_ENV, MARKER: token})
    with sandboxed_argv(sandbox, cwd, command, inside) as call:
        # bwrap itself needs nothing of bosun's environment; the marker finds it too
        outside = {"PATH": os.environ.get("PATH", os.defpath), MARKER: token}
        output, status = _run(call.argv, cwd, timeout, outside, token, stop)
    if call.notes:  # a .git the command planted, moved aside once it ended
        output = "\n".join([output.rstrip("\n"), *call.notes])
    return output, status


def _wait(
    proc: subprocess.Popen[bytes], timeout: float, stop: threading.Event | None = None
) -> int | None:
    """The exit status, or None at the timeout. Popen.wait(timeout) polls with sleeps
    that double up to 50 ms, so a 5 ms command took 8; a pidfd wakes up at the exit.
    With `stop`, the wait looks at it every STOP_POLL_S: an editor's or a caller's cancel
    comes from another thread, where no signal interrupts the wait."""
    deadline = time.monotonic() + timeout
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux 5.3+: poll as Popen does
        fd = -1
    try:
        while True:
            if stop is not None and stop.is_set():
                raise KeyboardInterrupt  # the caller kills the command's group
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            step = left if stop is None else min(left, STOP_POLL_S)
            if fd < 0:
                try:
                    return proc.wait(step)
                except subprocess.TimeoutExpired:
                    continue
            ready, _, _ = select.select([fd], [], [], step)
            if ready:
                return proc.wait()
    finally:
        if fd >= 0:
            os.close(fd)


def _run(
    argv: list[str],
    cwd: Path,
    timeout: float,
    env: dict[str, str],
    token: str,
    stop: threading.Event | None = None,
) -> tuple[str, int | None]:
    _become_subreaper()
    marker = f"{MARKER}={token}".encode()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=env,
    )
    assert proc.stdout is not None
    capture = _Capture(proc.stdout.fileno())
    status: int | None
    try:
        status = _wait(proc, timeout, stop)
    except BaseException:  # Ctrl-C: take the whole command down with us
        _kill_group(proc.pid)
        proc.wait()
        _kill_marked(marker)
        raise
    # Whatever is left in the group (timed out, or backgrounded with `&`) dies now;
    # otherwise a background process holding the pipe would keep the reader waiting.
    _kill_group(proc.pid)
    proc.wait()
    _kill_marked(marker)
    capture.thread.join(GRACE_S)
    output = capture.text()
    if not capture.thread.is_alive():  # else a process that left the group still writes
        proc.stdout.close()
    return output, status


@tool("shell")
def bash(ctx: ToolContext, command: str, timeout: int = DEFAULT_TIMEOUT) -> str:
    """Run a shell command in the workspace folder; stdout and stderr come back together.

    Args:
        command: the bash command line
        timeout: seconds before the command and everything it started are killed
    """
    if not 1 <= timeout <= MAX_TIMEOUT:
        raise ToolError(f"timeout must be between 1 and {MAX_TIMEOUT} seconds, not {timeout}")
    if "\x00" in command:
        raise ToolError("command contains a NUL byte")
    output, status = run_command(command, ctx.workspace, timeout, ctx.sandbox, ctx.stop)
    output = output.rstrip("\n")
    note = ""
    if ctx.sandbox is not None:
        from agent.tools.sandbox_run import refusal_note

        said = refusal_note(output, status, ctx.sandbox)
        note = f"\n{said}" if said else ""
    if status is None:
        raise ToolError(
            f"the command timed out after {timeout} s and was killed with its child"
            " processes; output so far:\n" + (output or "(no output)") + note
        )
    if status < 0:
        return f"{output}\n{_KILLED}{-status}]{note}".lstrip("\n")
    if status != 0:
        return f"{output}\n{_EXITED}{status}]{note}".lstrip("\n")
    return output or "(no output, exit code 0)"


_EXITED, _KILLED = "[exit code ", "[killed by signal "

# `apply_patch <<'EOF'` … `EOF`: any delimiter word, quoted or not, `<<-` too.
_HEREDOC = re.compile(
    r"\A\s*(?:apply_patch|applypatch)\s*<<-?\s*(['\"]?)(\w+)\1[ \t]*\n(.*)\n[ \t]*\2\s*\Z",
    re.DOTALL,
)
MAX_ROUTED_CHARS = 4 * 1024 * 1024


def apply_patch_invocation(command: str) -> str | None:
    """The patch, when `command` is nothing but Codex's `apply_patch` invocation: a
    heredoc (`apply_patch <<'EOF'` … `EOF`) or the patch as its one argument. Models
    trained on Codex write these through the shell; the caller hands the patch to the
    apply_patch tool, so it is confined, approved with its diff and checkpointed like
    any edit instead of running as a command. None for every other command."""
    if len(command) > MAX_ROUTED_CHARS or "apply" not in command[:200]:
        return None
    heredoc = _HEREDOC.match(command)
    if heredoc is not None:
        return heredoc.group(3)
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: not a command we can read for certain
        return None
    if len(words) == 2 and words[0] in ("apply_patch", "applypatch"):
        return words[1]
    return None


def command_failed(result: str) -> bool:
    """Whether a bash result says its command ended badly. Not an error for the model
    (a failing test run is information), but the user's mark for it is red, not green:
    the status line is the last line, or the one before the sandbox's note."""
    return any(line.startswith((_EXITED, _KILLED)) for line in result.rsplit("\n", 2)[-2:])
