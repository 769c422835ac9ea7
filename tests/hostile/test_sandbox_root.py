"""The sandbox when bosun runs as root (issue #32, class 5), tried from inside `bash`
through the real tool and real bubblewrap.

The sandbox's uid 0 is the host's: a user namespace made by root maps root, and `--uid`
only renames it, so the kernel's own root checks (a sysctl is writable by the host's
uid 0, capabilities or not) still pass. What stands between the command and the host
kernel is therefore that every file which writes kernel state is read-only or absent
inside, and that the command holds no capabilities. And `.git`, at any depth: a
submodule's pointer or a nested repository rewritten, or a new one planted, would run
its `core.fsmonitor` at the user's next git command on the host.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agent.history import ToolCall, ToolResult
from agent.tools import ToolContext, default_registry
from agent.tools.sandbox import SandboxPolicy, probe
from tests.tools.sandbox.conftest import NOTE, under_ci

# Files that change host kernel state when written: sysctls (core_pattern runs a
# program as root at the next crash, modprobe and hotplug at the next module load or
# uevent), sysrq, power, firmware and cgroup controls.
KERNEL_WRITES = [
    "/proc/sys/kernel/core_pattern",
    "/proc/sys/kernel/modprobe",
    "/proc/sys/kernel/hotplug",
    "/proc/sys/kernel/hostname",
    "/proc/sys/kernel/sysrq",
    "/proc/sys/vm/drop_caches",
    "/proc/sys/fs/suid_dumpable",
    "/proc/sys/fs/binfmt_misc/register",
    "/proc/sys/net/ipv4/ip_forward",
    "/proc/sysrq-trigger",
    "/proc/acpi/wakeup",
    "/proc/mtrr",
    "/proc/self/oom_score_adj",
    "/sys/kernel/uevent_helper",
    "/sys/power/state",
    "/sys/kernel/mm/transparent_hugepage/enabled",
    "/sys/fs/cgroup/cgroup.procs",
    "/sys/fs/cgroup/pids/cgroup.procs",
    "/sys/module/printk/parameters/time",
    "/dev/kmsg",
    "/dev/mem",
    "/dev/port",
]
# What a command may write outside the workspace and the private tmpfs mounts.
DEVICES = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

OPEN_EACH = """
import errno, json, os, sys
out = {}
for path in json.loads(sys.argv[1]):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        out[path] = errno.errorcode.get(exc.errno, str(exc.errno))
    else:
        os.close(fd)  # opened, never written
        out[path] = "OPENED"
print(json.dumps(out))
"""

WRITABLE_UNDER = """
import json, os, sys
found = []
def walk(folder):
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if folder == "/proc" and (entry.name.isdigit() or entry.name == "thread-self"):
            continue  # every process's folder is the same as self's
        try:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                walk(entry.path)
            elif os.access(entry.path, os.W_OK):
                found.append(entry.path)
        except OSError:
            continue
allowed, prefixes = json.loads(sys.argv[1])
for top in sys.argv[2:]:
    walk(top)
extra = [p for p in found if p not in allowed and not p.startswith(tuple(prefixes))]
print(json.dumps({"count": len(extra), "some": extra[:20]}))
"""


@pytest.fixture(scope="module")
def root_policy() -> SandboxPolicy:
    found = probe()
    if isinstance(found, str):
        if under_ci():
            pytest.fail(f"CI must run the sandbox tests, but {found}")
        pytest.skip(f"bubblewrap cannot run here: {found}")
    return found


def bash(workspace: Path, policy: SandboxPolicy, command: str) -> ToolResult:
    call = ToolCall("t1", "bash", {"command": command})
    return default_registry().execute(call, ToolContext(workspace, policy))


def inside_json(workspace: Path, policy: SandboxPolicy, script: str, *args: str) -> object:
    (workspace / "probe.py").write_text(script)
    quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in args)
    result = bash(workspace, policy, f"python3 probe.py {quoted}")
    assert not result.is_error, result.content
    return json.loads(result.content.splitlines()[-1])


@pytest.fixture(scope="module")
def opened(root_policy: SandboxPolicy, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Each path of KERNEL_WRITES opened for writing (never written) inside one call."""
    workspace = tmp_path_factory.mktemp("kernel-writes")
    found = inside_json(workspace, root_policy, OPEN_EACH, json.dumps(KERNEL_WRITES))
    assert isinstance(found, dict)
    return found


@pytest.mark.parametrize("path", KERNEL_WRITES)
def test_no_file_that_writes_host_kernel_state_opens_for_writing(opened: dict, path: str) -> None:
    said = opened[path]
    if said == "ENOENT" and not os.path.exists(path):
        pytest.skip(f"{path} is not on this machine")
    assert said in ("EROFS", "EACCES", "EPERM", "ENOENT"), f"{path}: {said}"


def test_nothing_under_proc_sys_or_dev_is_writable_but_the_usual_devices(
    root_policy: SandboxPolicy, workspace: Path
) -> None:
    allowed = json.dumps([sorted(DEVICES), ["/dev/shm/", "/dev/pts/"]])
    found = inside_json(workspace, root_policy, WRITABLE_UNDER, allowed, "/proc", "/sys", "/dev")
    assert found == {"count": 0, "some": []}


def test_the_command_holds_no_capabilities_and_cannot_remount(
    root_policy: SandboxPolicy, workspace: Path
) -> None:
    command = (
        "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status;"
        " mount -o remount,rw /proc 2>&1 && echo REMOUNTED;"
        " mount -t proc proc /tmp 2>&1 && echo MOUNTED; true"
    )
    result = bash(workspace, root_policy, command)
    caps = [line.split() for line in result.content.splitlines() if line.startswith("Cap")]
    assert len(caps) == 5 and all(int(value, 16) == 0 for _, value in caps), result.content
    assert "REMOUNTED" not in result.content and "MOUNTED" not in result.content


def test_ordinary_use_of_proc_still_works(root_policy: SandboxPolicy, workspace: Path) -> None:
    command = (
        "cat /proc/sys/kernel/random/uuid | wc -c; nproc >/dev/null && echo nproc;"
        " echo to-stdout > /proc/self/fd/1; ps -e | grep -c ps; echo done > out.txt"
    )
    result = bash(workspace, root_policy, command)
    assert result.content.splitlines() == ["37", "nproc", "to-stdout", "1"], result.content
    assert (workspace / "out.txt").read_text() == "done\n"


# --- .git at any depth --------------------------------------------------------------------


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    done = subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return done.stdout


def with_submodule(tmp_path: Path, workspace: Path) -> None:
    """`workspace` a repository with the submodule `sub` (its `.git` a pointer file)."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q")
    (upstream / "lib.txt").write_text("lib\n")
    git(upstream, "add", ".")
    git(upstream, "commit", "-qm", "lib")
    git(workspace, "init", "-q")
    git(workspace, "submodule", "add", "-q", str(upstream), "sub")
    git(workspace, "commit", "-qm", "with sub")


PLANT = "printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch {marker}\\n'"


def planted_gitdir(where: str, marker: Path) -> str:
    """Shell that makes `where` a git dir whose config runs `touch marker`."""
    return (
        f"mkdir -p {where}/objects {where}/refs && echo 'ref: refs/heads/main' > {where}/HEAD"
        f" && {PLANT.format(marker=marker)} > {where}/config"
    )


def test_a_submodule_pointer_cannot_be_rewritten_and_git_status_runs_nothing(
    root_policy: SandboxPolicy, workspace: Path, tmp_path: Path
) -> None:
    with_submodule(tmp_path, workspace)
    marker = tmp_path / "pwned"
    pointer = (workspace / "sub" / ".git").read_text()
    command = (
        f"{planted_gitdir('evil', marker)};"
        " mv sub sub.old && mkdir sub && cp sub.old/lib.txt sub/"
        " && echo 'gitdir: ../evil' > sub/.git;"  # swapped in: the folder renamed away
        " echo 'gitdir: ../evil' > sub.old/.git"  # rewritten in place
    )
    result = bash(workspace, root_policy, command)
    assert "Read-only file system" in result.content and NOTE in result.content
    assert (workspace / "sub.old" / ".git").read_text() == pointer
    assert not (workspace / "sub" / ".git").exists()  # the swapped-in pointer moved aside
    assert (workspace / "sub" / ".git.bosun-refused").read_text() == "gitdir: ../evil\n"
    assert "[bosun moved sub/.git to sub/.git.bosun-refused" in result.content
    git(workspace, "status")
    git(workspace / "sub.old", "status")
    assert not marker.exists(), "git status ran the planted core.fsmonitor"


def test_a_nested_repository_cannot_be_changed(root_policy: SandboxPolicy, workspace: Path) -> None:
    nested = workspace / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    config = (nested / ".git" / "config").read_bytes()
    command = (
        "printf '\\tfsmonitor = touch /tmp/x\\n' >> vendor/lib/.git/config;"
        " echo evil > vendor/lib/.git/hooks/pre-commit; rm -rf vendor/lib/.git"
    )
    result = bash(workspace, root_policy, command)
    assert (nested / ".git" / "config").read_bytes() == config
    assert not (nested / ".git" / "hooks" / "pre-commit").exists()
    assert "Read-only file system" in result.content


@pytest.mark.parametrize(
    "plant",
    [
        "{gitdir}",
        "mkdir -p src/deep && echo 'gitdir: ../../evil' > src/deep/.git",
        "mkdir -p src/deep && ln -s ../../evil src/deep/.git",
        "mkdir -p src/deep && mv evil src/deep/.git",
        "mkdir -p src/deep && mv evil src/deep/.GIT",
    ],
    ids=["git-dir", "pointer-file", "symlink", "moved-in", "other-case"],
)
def test_a_git_planted_at_any_depth_is_moved_aside(
    root_policy: SandboxPolicy, workspace: Path, tmp_path: Path, plant: str
) -> None:
    marker = tmp_path / "pwned"
    gitdir = planted_gitdir("src/deep/.git", marker)
    command = f"{planted_gitdir('evil', marker)}; {plant.format(gitdir=gitdir)}; ls -a src/deep"
    result = bash(workspace, root_policy, command)
    deep = workspace / "src" / "deep"
    names = sorted(os.listdir(deep))
    assert not any(name.lower() == ".git" for name in names), names
    assert len([n for n in names if n.lower().startswith(".git")]) == 1, names  # kept, aside
    assert "src/deep/.git" in result.content.replace(".GIT", ".git") and "moved" in result.content
    for where in (deep, workspace):
        subprocess.run(["git", "status"], cwd=where, capture_output=True, check=False)
    assert not marker.exists(), "git ran the planted core.fsmonitor"


def test_git_writes_when_allowed_leave_nested_repositories_alone(
    root_policy: SandboxPolicy, workspace: Path
) -> None:
    from dataclasses import replace

    allowed = replace(root_policy, allow_git_writes=True)
    result = bash(workspace, allowed, "git init -q sub && echo made")
    assert result.content == "made" and (workspace / "sub" / ".git" / "HEAD").is_file()


def test_a_repository_in_a_hidden_home_folder_stays_hidden(
    root_policy: SandboxPolicy, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = workspace / "home"
    (home / ".git").mkdir(parents=True)
    (home / ".git" / "config").write_text("[user]\n\tsecret = bosun-hidden-secret\n")
    monkeypatch.setenv("HOME", str(home))
    result = bash(workspace, root_policy, "cat home/.git/config; ls -a home")
    assert "bosun-hidden-secret" not in result.content
    assert "No such file or directory" in result.content


def test_a_workspace_too_big_to_guard_is_refused_saying_why(
    root_policy: SandboxPolicy, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agent.tools.sandbox_git.MAX_ENTRIES", 20)
    for i in range(30):
        (workspace / f"f{i}").write_text("")
    result = bash(workspace, root_policy, "echo ran > ran.txt")
    assert result.is_error and "more than 20 files and folders" in result.content
    assert "--sandbox off" in result.content and not (workspace / "ran.txt").exists()


def test_many_files_made_by_the_command_do_not_hide_a_planted_git(
    root_policy: SandboxPolicy, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agent.tools.sandbox_git.MAX_ENTRIES", 50)
    command = "mkdir -p z/deep && touch z/f{1..200} && mkdir z/deep/.git && echo made"
    result = bash(workspace, root_policy, command)
    assert not (workspace / "z" / "deep" / ".git").exists(), result.content
    assert (workspace / "z" / "deep" / ".git.bosun-refused").is_dir()
