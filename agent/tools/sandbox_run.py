"""One sandboxed call: what it sets up before bwrap starts, undoes after, and how a
refusal by the sandbox is explained in the result.

Two things exist only for the length of a call:
- a `pids` cgroup (root only: the kernel never applies RLIMIT_NPROC to uid 0), joined
  by a tiny `sh` before it execs bwrap, so every process of the call is in it from the
  start and a fork bomb meets `pids.max`;
- an empty `.git` placeholder where the workspace has none, mounted read-only like a
  real one, so a command cannot `git init` and plant hooks or `core.fsmonitor` for the
  user's next git command. Concurrent calls share it under a shared `flock`; the last
  one out removes it, and only if this process made it.

And every `.git` below the top is found before the call (bound read-only) and again
after it, when one the command planted is moved aside (`sandbox_git`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import signal
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agent.tools.cgroups import remove_cgroup
from agent.tools.sandbox import SandboxPolicy, bwrap_argv, hidden_homes, process_cap
from agent.tools.sandbox_git import find_git_entries, refuse_new

_placeholders: set[tuple[int, int]] = set()  # (st_dev, st_ino) of .git dirs we made
_placeholders_lock = threading.Lock()


# --- the process limit for root ---------------------------------------------------------


@contextlib.contextmanager
def _pids_cgroup(policy: SandboxPolicy) -> Iterator[Path | None]:
    """A cgroup with `pids.max` for one call, removed afterwards; yields the file that
    moves the process writing "0" into it. On cgroup v1 that is `tasks`: moving only
    the writing thread skips the lock that makes `cgroup.procs` wait for an RCU grace
    period (10-15 ms a call here); the writer is a one-thread `sh`, so it is the same."""
    if policy.process_limit != "cgroup" or policy.cgroup_base is None:
        yield None
        return
    group = policy.cgroup_base / f"bosun-{os.getpid()}-{secrets.token_hex(6)}"
    group.mkdir()
    try:
        (group / "pids.max").write_text(str(process_cap(policy)))
        tasks = group / "tasks"
        yield tasks if tasks.exists() else group / "cgroup.procs"
    finally:
        remove_cgroup(group)


# --- .git stays read-only, even where there is none yet -------------------------------


@contextlib.contextmanager
def _git_placeholder(policy: SandboxPolicy, workspace: Path) -> Iterator[None]:
    """Hold `.git` (a real one or a placeholder) for the call; see the module docstring."""
    dot = Path(os.path.realpath(workspace)) / ".git"
    if policy.allow_git_writes:
        yield
        return
    fd = None
    for _ in range(10):
        with contextlib.suppress(FileExistsError, OSError):
            os.mkdir(dot, 0o755)
            with _placeholders_lock:
                info = os.stat(dot, follow_symlinks=False)
                _placeholders.add((info.st_dev, info.st_ino))
        try:
            fd = os.open(dot, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:  # a file (a worktree's pointer) or a link: mounted as it is
            break
        fcntl.flock(fd, fcntl.LOCK_SH)
        held = os.fstat(fd)
        with contextlib.suppress(OSError):
            now = os.stat(dot, follow_symlinks=False)
            if (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                break
        os.close(fd)  # removed by another call's cleanup meanwhile: again
        fd = None
    try:
        yield
    finally:
        if fd is not None:
            _release_placeholder(dot, fd)


def _release_placeholder(dot: Path, fd: int) -> None:
    try:
        info = os.fstat(fd)
        key = (info.st_dev, info.st_ino)
        with _placeholders_lock:
            if key not in _placeholders:
                return
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # another call still has it mounted: it cleans up
                return
            with contextlib.suppress(OSError):
                os.rmdir(dot)  # only while empty: it was read-only all along
                _placeholders.discard(key)
    finally:
        os.close(fd)


@dataclass
class SandboxedCall:
    """One call's bwrap command line, and what bosun did about it afterwards (a `.git`
    moved aside), for the result; `notes` is filled when the block ends."""

    argv: list[str]
    notes: list[str] = field(default_factory=list)


@contextlib.contextmanager
def sandboxed_argv(
    policy: SandboxPolicy, workspace: Path, command: str, env: Mapping[str, str]
) -> Iterator[SandboxedCall]:
    """The call that runs `command` in the sandbox; its argv is valid until the block
    ends. Every `.git` is found before (to bind them read-only) and after, once the
    call's processes are gone, a new one is moved aside (`sandbox_git`)."""
    with _git_placeholder(policy, workspace):
        before = None if policy.allow_git_writes else find_git_entries(workspace)
        call = SandboxedCall([])
        try:
            with _pids_cgroup(policy) as join:
                argv = bwrap_argv(policy, workspace, command, env, git=before)
                if join is not None:  # in the cgroup before anything forks
                    argv = ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', str(join), *argv]
                call.argv = argv
                yield call
        finally:
            if before is not None:
                call.notes += refuse_new(workspace, before)


# --- saying why ---------------------------------------------------------------------------

_NETWORK = (
    "network is unreachable",
    "temporary failure in name resolution",
    "could not resolve host",
    "name or service not known",
    "no address associated with hostname",
    "connection refused",
    "no route to host",
)
_FORK = ("fork: retry", "fork: resource temporarily unavailable", "cannot fork", "can't fork")


def refusal_note(output: str, status: int | None, policy: SandboxPolicy) -> str | None:
    """One line for a failed command whose output shows the sandbox's hand, saying what
    the sandbox refused and how to run the command outside it; None otherwise."""
    if status == 0:
        return None
    text = output.lower()
    mb = 1 << 20
    why: list[str] = []
    if "read-only file system" in text:
        why.append("only the workspace is writable, and its .git/ is read-only")
    if "file size limit exceeded" in text or status == 128 + signal.SIGXFSZ:
        why.append(f"a file may grow to {policy.max_file_bytes // mb} MB")
    if "cpu time limit exceeded" in text or status == 128 + signal.SIGXCPU:
        why.append(f"a process may use {policy.cpu_seconds} s of CPU time")
    if "memoryerror" in text or "cannot allocate memory" in text or "out of memory" in text:
        why.append(f"a process may use {policy.memory_bytes // mb} MB of memory")
    if any(s in text for s in _FORK):
        why.append(f"at most {policy.max_processes} processes")
    if "no space left on device" in text:
        why.append(f"/tmp and the home folder are private, {policy.tmpfs_bytes // mb} MB each")
    if not policy.allow_net and any(s in text for s in _NETWORK):
        why.append("there is no network (--allow-net gives it)")
    if "no such file or directory" in text and any(f"{h}/" in output for h in hidden_homes()):
        why.append("the home folder is hidden (sandbox_read in config.toml shows a folder)")
    if "operation not permitted" in text:
        why.append("commands run without privileges")
    if not why:
        return None
    return (
        f"[bosun's sandbox may have refused this: {'; '.join(why)}. To run it outside the"
        " sandbox: /sandbox off in chat, --sandbox off for bosun run]"
    )
