"""bash's sandbox: every command runs inside bubblewrap (`bwrap`).

Inside, the whole system is mounted read-only and only the workspace is writable, with
every `.git` in it read-only again, at any depth (hooks and `core.fsmonitor` run commands
at the user's next git command; `sandbox_git`). `/tmp`, `/run` (where daemons keep their
sockets) and the home folder are private tmpfs mounts of a fixed size, `/proc` and
`/dev` are fresh and read-only, the environment is an allowlist (no keys or tokens),
there is no network unless asked for, and the command lives in its own user, PID, IPC
and UTS namespaces with no capabilities: when the call ends, the PID namespace ends, and
with it everything the command started.

Run by root, the sandbox's uid 0 is the host's: a user namespace made by root maps
root, and bwrap's `--uid` only renames it, while the kernel lets the host's uid 0 write
a sysctl (`kernel.core_pattern` runs a program as root at the next crash) whatever its
capabilities. So `/proc` is read-only as a whole (sysctls, sysrq-trigger, and the
per-namespace files of the host's network with --allow-net), `/sys` is read-only with
the rest of the system, `/dev` holds only the usual devices, and no capability is kept
that could remount any of it. Mapping to an unprivileged uid would need idmapped
mounts for the workspace to stay writable, which bwrap does not make.

Processes, CPU time, file size and each process's memory (RLIMIT_DATA) are limited; a
memory cgroup for a call's total is not made (yet). RLIMIT_NPROC does not bind uid 0 (the
kernel exempts root however its capabilities are set, in a user namespace too), so for
root the process limit is a per-call `pids` cgroup where one can be made; the shape of
one call (cgroup, the `.git` placeholder, explaining a refusal) is in `sandbox_run`.

`python -m agent.tools.sandbox` says whether the sandbox works here, and why not.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from agent.errors import UsageError
from agent.tools.sandbox_git import GitEntries, find_git_entries, git_binds

SANDBOX_MODES = ("auto", "on", "off")
MAX_PROCESSES = 512  # tasks (threads count too), the sandbox's own two included
CPU_SECONDS = 600  # per process: as long as the longest timeout a call may have
MAX_FILE_BYTES = 2 << 30
TMPFS_BYTES = 1 << 30  # each of /tmp and the home folder
# Heap and other private writable memory of one process (RLIMIT_DATA): a compiler or a
# test run stays far below it, a runaway allocation meets MemoryError / ENOMEM instead
# of the host's OOM killer. Not RLIMIT_AS: Go, Java and V8 reserve address space they
# never touch, and would fail to start under any useful cap of it.
MEMORY_BYTES = 8 << 30
SMALL_TMPFS_BYTES = 16 << 20  # /run
SHM_BYTES = 256 << 20
PROBE_TIMEOUT_S = 10
# What a command may see of bosun's environment; everything else (API keys, tokens,
# SSH_AUTH_SOCK, cloud credentials) stays outside.
ENV_ALLOWED = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM")
ENV_ALLOWED_PREFIXES = ("LC_",)

ProcessLimit = Literal["rlimit", "cgroup", "none"]


@dataclass(frozen=True)
class SandboxPolicy:
    """How `bash` is confined. Built once per run (`resolve_sandbox`), carried to the
    tool by `ToolContext`; the workspace comes with each call."""

    bwrap: str
    shell: str
    allow_net: bool = False
    allow_git_writes: bool = False
    read_only: tuple[Path, ...] = ()  # hidden folders shown read-only (`sandbox_read`)
    max_processes: int = MAX_PROCESSES
    cpu_seconds: int = CPU_SECONDS
    max_file_bytes: int = MAX_FILE_BYTES
    memory_bytes: int = MEMORY_BYTES
    tmpfs_bytes: int = TMPFS_BYTES
    process_limit: ProcessLimit = "rlimit"
    cgroup_base: Path | None = None  # where per-call pids cgroups go (process_limit cgroup)


def inner_env(outer: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The command's environment: the allowlisted part of bosun's own, then `extra`."""
    kept = {
        k: v for k, v in outer.items() if k in ENV_ALLOWED or k.startswith(ENV_ALLOWED_PREFIXES)
    }
    return {**kept, **extra}


def hidden_homes() -> list[Path]:
    """The home folder(s) to hide: $HOME and the account's own, if they differ."""
    homes: list[Path] = []
    candidates = [os.environ.get("HOME", "")]
    try:
        import pwd

        candidates.append(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError):
        pass
    for raw in candidates:
        if not raw or not os.path.isabs(raw):
            continue
        home = Path(os.path.realpath(raw))
        if home != Path("/") and home.is_dir() and home not in homes:
            homes.append(home)
    return homes


def _inside(root: Path, path: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _system_mounts(policy: SandboxPolicy) -> list[tuple[Path, list[str]]]:
    """The mounts that replace parts of the read-only system, each with its path."""
    shm = min(SHM_BYTES, policy.tmpfs_bytes)
    mounts: list[tuple[Path, list[str]]] = [
        (Path("/dev"), ["--dev", "/dev"]),
        (Path("/dev/shm"), ["--size", str(shm), "--tmpfs", "/dev/shm"]),
        (Path("/dev"), ["--remount-ro", "/dev"]),  # only /dev/shm takes files
        (Path("/proc"), ["--proc", "/proc"]),
        (Path("/proc"), ["--remount-ro", "/proc"]),  # sysctls write host kernel state
        (Path("/tmp"), ["--size", str(policy.tmpfs_bytes), "--tmpfs", "/tmp"]),
    ]
    if os.path.isdir("/run") and not os.path.islink("/run"):
        # Daemons' sockets (docker, D-Bus, databases) live here; connect() needs no write.
        mounts.append((Path("/run"), ["--size", str(SMALL_TMPFS_BYTES), "--tmpfs", "/run"]))
        resolv = Path(os.path.realpath("/etc/resolv.conf"))
        if policy.allow_net and resolv.is_relative_to("/run") and resolv.is_file():
            mounts.append((resolv, ["--ro-bind", str(resolv), str(resolv)]))
    for home in hidden_homes():
        mounts.append((home, ["--size", str(policy.tmpfs_bytes), "--tmpfs", str(home)]))
    return mounts


def process_cap(policy: SandboxPolicy) -> int:
    """How many tasks one call may have, however the limit is applied (rlimit, cgroup)."""
    return policy.max_processes


def _limits(policy: SandboxPolicy) -> str:
    """`ulimit` for the command, run inside the sandbox: RLIMIT_NPROC only counts per
    sandbox once the user namespace exists, and set before bwrap it would be checked
    against every process of the user on the machine."""
    blocks = max(1, policy.max_file_bytes // 1024)  # bash counts -f in 1024-byte blocks
    memory = max(1, policy.memory_bytes // 1024)  # -d counts kilobytes
    limits = f"ulimit -t {policy.cpu_seconds} -f {blocks} -d {memory}"
    if policy.process_limit == "rlimit":
        limits += f" -u {process_cap(policy)}"
    return limits


def bwrap_argv(
    policy: SandboxPolicy,
    workspace: Path,
    command: str,
    env: Mapping[str, str],
    git: GitEntries | None = None,
) -> list[str]:
    """The bwrap command line that runs `command` with `env` confined to `workspace`;
    `git`: the workspace's `.git` entries, where the caller found them already.

    Mount order matters: bwrap applies them in turn, so the workspace is bound after the
    tmpfs that hides the folder it lives in (/tmp, home), and a hiding mount inside the
    workspace comes after it; every `.git` is made read-only last.
    """
    ws = Path(os.path.realpath(workspace))
    argv = [policy.bwrap, "--die-with-parent", "--new-session", "--unshare-user"]
    argv += ["--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try", "--cap-drop", "ALL"]
    if not policy.allow_net:
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/"]
    after: list[str] = []
    hidden: list[Path] = []  # inside the workspace: a .git there stays hidden too
    for path, args in _system_mounts(policy):
        if path == ws:
            continue  # the workspace is this folder: it stays visible and writable
        (after if _inside(ws, path) else argv).extend(args)
        if _inside(ws, path):
            hidden.append(path)
    for shown in policy.read_only:
        argv += ["--ro-bind-try", str(shown), str(shown)]
    argv += ["--bind", str(ws), str(ws), *after, *_git_mounts(policy, ws, git, hidden)]
    argv += ["--chdir", str(ws), "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    script = f'{_limits(policy)} || exit 126; exec "$0" -c "$1"'
    return [*argv, "--", policy.shell, "-c", script, policy.shell, command]


def _git_mounts(
    policy: SandboxPolicy, ws: Path, git: GitEntries | None, hidden: list[Path]
) -> list[str]:
    """Every `.git` in the workspace read-only again (`sandbox_git`), but those under a
    folder the sandbox hides (a home folder inside the workspace). Where there is none
    at the top, `sandbox_run` puts an empty placeholder there first, so a command cannot
    plant a new repository there either."""
    if policy.allow_git_writes:
        return []
    found = git if git is not None else find_git_entries(ws)
    return git_binds(ws, found, skip=tuple(hidden))


# --- does it work here ----------------------------------------------------------------


def probe() -> SandboxPolicy | str:
    """A working policy with the defaults, or why there is none. `BOSUN_BWRAP` names
    the bwrap binary to use (default: `bwrap` on PATH)."""
    return _probe(os.environ.get("BOSUN_BWRAP") or shutil.which("bwrap") or "")


@functools.cache
def _probe(path: str) -> SandboxPolicy | str:
    """A real sandboxed `true` in a scratch workspace, with every option a call uses;
    cached per binary, so a run pays for it once."""
    if not sys.platform.startswith("linux"):
        return "bubblewrap sandboxes need Linux"
    if not path or not os.access(path, os.X_OK):
        return "bubblewrap (bwrap) is not installed"
    shell = shutil.which("bash")
    if shell is None:
        return "the sandbox runs commands with bash, which is not installed"
    from agent.tools.cgroups import cgroup_base

    policy = SandboxPolicy(bwrap=path, shell=shell)
    if os.geteuid() == 0:  # RLIMIT_NPROC does not bind root
        base = cgroup_base()
        kind: ProcessLimit = "cgroup" if base is not None else "none"
        policy = SandboxPolicy(bwrap=path, shell=shell, process_limit=kind, cgroup_base=base)
    with tempfile.TemporaryDirectory(prefix="bosun-probe-") as scratch:
        argv = bwrap_argv(policy, Path(scratch), "true", inner_env(os.environ, {}))
        try:
            proc = subprocess.run(
                argv, capture_output=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            return f"bubblewrap did not finish a trial command within {PROBE_TIMEOUT_S} s"
        except OSError as exc:
            return f"bubblewrap cannot start: {exc.strerror or exc}"
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bubblewrap cannot run here: {said[-1] if said else f'exit {proc.returncode}'}"
    return policy


def resolve_sandbox(
    mode: str,
    *,
    allow_net: bool = False,
    allow_git_writes: bool = False,
    read_only: tuple[str, ...] = (),
    warn: Callable[[str], None] | None = None,
) -> SandboxPolicy | None:
    """The policy for a run, or None for no sandbox.

    `on` where bubblewrap cannot run is a usage error; `auto` there warns once (one
    line) and returns None, and then bash asks before each command even in auto-edit.
    """
    if mode not in SANDBOX_MODES:
        raise UsageError(f"--sandbox must be one of {', '.join(SANDBOX_MODES)}, not {mode!r}")
    if mode == "off":
        return None
    found = probe()
    say = warn or (lambda line: sys.stderr.write(f"bosun: warning: {line}\n"))
    if isinstance(found, str):
        if mode == "on":
            raise UsageError(f"--sandbox on, but {found} (install bubblewrap or use --sandbox off)")
        say(f"bash is not sandboxed: {found}; it asks before each command (--sandbox off: quiet)")
        return None
    if found.process_limit == "none":
        say("the sandbox cannot limit processes here (root, and no pids cgroup can be made)")
    shown = tuple(Path(os.path.realpath(os.path.expanduser(p))) for p in read_only)
    return SandboxPolicy(
        bwrap=found.bwrap,
        shell=found.shell,
        allow_net=allow_net,
        allow_git_writes=allow_git_writes,
        read_only=shown,
        process_limit=found.process_limit,
        cgroup_base=found.cgroup_base,
    )


def rebind(policy: SandboxPolicy) -> SandboxPolicy | str:
    """`policy`, resolved on another machine, as it can run on this one (this machine's
    bwrap, shell and process limit; the user's choices kept), or why it cannot: a batch
    worker that cannot sandbox refuses the task rather than run bash unsandboxed."""
    found = probe()
    if isinstance(found, str):
        return found
    return replace(
        policy,
        bwrap=found.bwrap,
        shell=found.shell,
        process_limit=found.process_limit,
        cgroup_base=found.cgroup_base,
    )


def main() -> int:
    """`python -m agent.tools.sandbox`: 0 and a summary where bash can be sandboxed."""
    found = probe()
    if isinstance(found, str):
        print(f"sandbox: unavailable: {found}")
        return 1
    print(f"sandbox: bubblewrap at {found.bwrap}; process limit by {found.process_limit}")
    return 0 if found.process_limit != "none" else 1


if __name__ == "__main__":
    sys.exit(main())
