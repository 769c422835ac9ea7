"""Every way out of the sandbox the issue names, tried from inside `bash` through the real
tool: each is refused or contained, and the result says what happened."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from agent.tools.sandbox import SandboxPolicy
from tests.tools.sandbox.conftest import (
    FORKS,
    NOTE,
    SandboxTool,
    kill_leftovers,
    processes_in,
    settle,
)

SENTINEL = "bosun-sandbox-sentinel"


@pytest.fixture
def outside() -> Iterator[Path]:
    """A file outside the workspace on the real disk (not /tmp, which the sandbox
    replaces): /var/tmp, which the sandbox shows read-only."""
    folder = Path(tempfile.mkdtemp(prefix="bosun-outside-", dir="/var/tmp"))
    target = folder / "target.txt"
    target.write_text("original\n")
    try:
        yield target
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def untouched(target: Path) -> bool:
    return target.read_text() == "original\n" and sorted(os.listdir(target.parent)) == [
        "target.txt"
    ]


# --- writing outside the workspace --------------------------------------------------------


@pytest.mark.parametrize(
    "how",
    [
        "echo pwned > {target}; echo new > {folder}/new.txt",
        "ln -s {target} link && echo pwned > link; ln -s {folder} dir && echo new > dir/new.txt",
        "echo pwned > /proc/self/root{target}; echo new > /proc/self/root{folder}/new.txt",
    ],
    ids=["directly", "through-a-symlink", "through-proc-self-root"],
)
def test_writing_outside_the_workspace_is_refused(
    sandboxed: SandboxTool, outside: Path, how: str
) -> None:
    command = how.format(target=outside, folder=outside.parent)
    result = sandboxed("bash", command=command)
    assert untouched(outside)
    assert result.content.count("Read-only file system") == 2, result.content
    assert "[exit code 1]" in result.content
    assert NOTE in result.content and "only the workspace is writable" in result.content
    assert "--sandbox off" in result.content  # how to run it outside


def test_a_write_to_tmp_stays_in_the_private_tmp(
    sandboxed: SandboxTool, workspace: Path, tmp_path: Path
) -> None:
    beside = tmp_path / "beside.txt"  # outside the workspace, in the real /tmp
    result = sandboxed("bash", command=f"echo pwned > {beside} && cat {beside} && ls /tmp")
    assert result.content.startswith("pwned\n"), result.content
    assert not beside.exists()


def test_the_workspace_itself_is_writable(sandboxed: SandboxTool, workspace: Path) -> None:
    result = sandboxed("bash", command="echo made > made.txt && mkdir -p a/b && cat notes.txt")
    assert result.content == "hello from bosun" and not result.is_error
    assert (workspace / "made.txt").read_text() == "made\n" and (workspace / "a/b").is_dir()


# --- .git ---------------------------------------------------------------------------------


def git(workspace: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(
        ["git", *args], cwd=workspace, capture_output=True, text=True, env=env, check=True
    )
    return done.stdout


def test_git_config_and_hooks_cannot_be_planted(sandboxed: SandboxTool, workspace: Path) -> None:
    git(workspace, "init", "-q")
    config = (workspace / ".git/config").read_bytes()
    hooks = sorted(os.listdir(workspace / ".git/hooks"))
    command = (
        "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> .git/config;"
        " echo 'touch /tmp/pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit;"
        " git config core.fsmonitor 'touch pwned'; rm -rf .git; mv .git elsewhere"
    )
    result = sandboxed("bash", command=command)
    assert (workspace / ".git/config").read_bytes() == config
    assert sorted(os.listdir(workspace / ".git/hooks")) == hooks
    assert "Read-only file system" in result.content and NOTE in result.content
    assert "its .git/ is read-only" in result.content


def test_a_new_repository_cannot_be_planted_where_there_is_none(
    sandboxed: SandboxTool, workspace: Path
) -> None:
    result = sandboxed("bash", command="git init -q && echo evil > .git/hooks/pre-commit")
    assert "Read-only file system" in result.content and NOTE in result.content
    assert not (workspace / ".git").exists()  # the placeholder is gone after the call


def test_git_writes_when_allowed(
    sandboxed: SandboxTool, workspace: Path, policy: SandboxPolicy
) -> None:
    git(workspace, "init", "-q")
    writable = replace(policy, allow_git_writes=True)
    result = sandboxed("bash", command="git config user.name bosun-test", policy=writable)
    assert not result.is_error and result.content == "(no output, exit code 0)"
    assert "bosun-test" in (workspace / ".git/config").read_text()


# --- secrets --------------------------------------------------------------------------------


@pytest.mark.parametrize("home", ["temporary", "real"])
def test_a_secret_in_the_home_folder_is_hidden(
    sandboxed: SandboxTool, request: pytest.FixtureRequest, home: str
) -> None:
    if home == "temporary":
        folder = request.getfixturevalue("fake_home")
        (folder / ".ssh").mkdir()
        secret = folder / ".ssh" / "id_ed25519"
    else:
        folder = Path(os.path.expanduser("~")).resolve()
        secret = folder / f".bosun-test-secret-{os.getpid()}"
    secret.write_text(SENTINEL)
    try:
        result = sandboxed("bash", command=f"cat {secret}; ls -a {folder}; grep -r {SENTINEL} ~")
    finally:
        secret.unlink()
    assert SENTINEL not in result.content
    assert "No such file or directory" in result.content
    assert "the home folder is hidden" in result.content


def test_api_keys_stay_out_of_the_environment(
    sandboxed: SandboxTool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", f"sk-{SENTINEL}")
    monkeypatch.setenv("BOSUN_API_KEY", f"key-{SENTINEL}")
    monkeypatch.setenv("LC_BOSUN_TEST", "kept")  # the allowlist keeps locale settings
    result = sandboxed("bash", command="env; cat /proc/*/environ | tr '\\0' '\\n'")
    assert SENTINEL not in result.content
    assert "LC_BOSUN_TEST=kept" in result.content and "PATH=" in result.content


# --- the network ------------------------------------------------------------------------------


@contextlib.contextmanager
def listening() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 outside the sandbox; yields its port and what it got."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                got.append(conn.recv(100))
                conn.sendall(b"hello from outside\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], got
    finally:
        stop.set()
        thread.join(2)
        server.close()


CONNECT = (
    "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), 3);"
    " s.sendall(b'{sentinel}'); print(s.recv(100).decode())\""
)


def test_a_server_on_loopback_outside_cannot_be_reached(sandboxed: SandboxTool) -> None:
    with listening() as (port, got):
        result = sandboxed("bash", command=CONNECT.format(port=port, sentinel=SENTINEL))
    assert got == [] and "hello from outside" not in result.content
    assert "Connection refused" in result.content
    assert NOTE in result.content and "there is no network (--allow-net" in result.content


def test_allow_net_reaches_it(sandboxed: SandboxTool, policy: SandboxPolicy) -> None:
    with listening() as (port, got):
        command = CONNECT.format(port=port, sentinel=SENTINEL)
        result = sandboxed("bash", command=command, policy=replace(policy, allow_net=True))
    assert result.content == "hello from outside", result.content
    assert got == [SENTINEL.encode()]


# --- processes --------------------------------------------------------------------------------


def test_a_process_outside_can_be_neither_seen_nor_signalled(sandboxed: SandboxTool) -> None:
    victim = subprocess.Popen(["sleep", "60"])
    try:
        command = f"ls /proc | grep -qx {victim.pid} && echo seen; kill -9 {victim.pid}; ps -e"
        result = sandboxed("bash", command=command)
        time.sleep(0.2)
        assert victim.poll() is None, "the sandbox killed a process outside"
    finally:
        victim.kill()
        victim.wait()
    assert "seen" not in result.content.splitlines()
    assert "No such process" in result.content
    assert "sleep" not in result.content  # ps shows only the sandbox's own processes


@pytest.mark.parametrize("prefix", ["", "env -i "], ids=["setsid", "setsid-env-i"])
def test_nothing_started_with_setsid_survives_the_call(
    sandboxed: SandboxTool, workspace: Path, prefix: str
) -> None:
    # `env -i` drops the marker the unsandboxed cleanup looks for: only the PID
    # namespace can end such a process
    loop = "while :; do date +%s%N > alive; sleep 0.05; done"
    result = sandboxed("bash", command=f"setsid -f {prefix}sh -c '{loop}'; sleep 0.2; echo started")
    try:
        assert result.content == "started"
        assert settle(workspace) == []
        beat = (workspace / "alive").read_text()
        time.sleep(0.4)
        assert (workspace / "alive").read_text() == beat, "a process went on writing"
    finally:
        kill_leftovers(workspace)


# --- limits ------------------------------------------------------------------------------------


def test_filling_a_disk_outside_the_workspace_is_bounded(
    sandboxed: SandboxTool, small: SandboxPolicy, outside: Path
) -> None:
    name = f"bosun-fill-{os.getpid()}"
    command = (
        f"head -c 64M /dev/zero > /tmp/{name}; ls -l /tmp/{name};"
        f" for i in 1 2 3; do head -c 3M /dev/zero > /tmp/{name}.$i; done;"
        f" df -k /tmp | tail -1; head -c 64M /dev/zero > ~/{name};"
        f" head -c 64M /dev/zero > /dev/shm/{name}; head -c 1M /dev/zero > {outside.parent}/{name}"
    )
    result = sandboxed("bash", command=command, policy=small)
    assert "File size limit exceeded" in result.content  # one file: RLIMIT_FSIZE, 4 MB
    assert "No space left on device" in result.content  # many: the 8 MB tmpfs
    assert "Read-only file system" in result.content  # the real disk
    assert NOTE in result.content and "a file may grow to 4 MB" in result.content
    assert untouched(outside)
    home = Path(os.path.expanduser("~"))
    for where in (Path("/tmp"), home, Path("/dev/shm")):
        assert not list(where.glob(f"{name}*")), f"a file reached the real {where}"


def test_a_command_cannot_start_more_processes_than_the_limit(
    sandboxed: SandboxTool, small: SandboxPolicy
) -> None:
    limited = replace(small, max_processes=20)
    result = sandboxed("bash", command=f"python3 -c '{FORKS}'", policy=limited)
    assert 0 < int(result.content) < limited.max_processes, result.content


# The bomb must outlive its first shell: when the command's own shell ends, the PID
# namespace ends and takes every process in it along (that alone would stop a bomb).
BOMB = "bomb() { bomb | bomb & }; bomb; exec sleep 30"


def test_a_fork_bomb_is_bounded_and_the_machine_stays_responsive(
    sandboxed: SandboxTool, small: SandboxPolicy, workspace: Path
) -> None:
    peak, slowest = 0, 0.0
    done = threading.Event()

    def watch() -> None:  # counts the bomb from outside, and times this machine's answer
        nonlocal peak, slowest
        while not done.is_set():
            started = time.monotonic()
            peak = max(peak, len(processes_in(workspace)))
            subprocess.run(["true"], check=True)
            slowest = max(slowest, time.monotonic() - started)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    started = time.monotonic()
    try:
        result = sandboxed("bash", command=BOMB, timeout=4, policy=small)
    finally:
        done.set()
        watcher.join()
    took = time.monotonic() - started
    try:
        assert settle(workspace) == [], "processes of the bomb outlived the call"
    finally:
        kill_leftovers(workspace)
    assert took < 10, f"the call took {took:.1f} s"
    assert 0 < peak <= small.max_processes, peak
    assert slowest < 3, f"the machine took {slowest:.1f} s to run `true` during the bomb"
    assert result.is_error and "timed out after 4 s" in result.content
    assert f"at most {small.max_processes} processes" in result.content


def test_a_process_cannot_allocate_past_the_memory_limit(
    sandboxed: SandboxTool, small: SandboxPolicy
) -> None:
    limited = replace(small, memory_bytes=256 << 20)
    fits = "python3 -c 'print(len(bytearray(64 << 20)))'"
    grab = "python3 -c 'print(len(bytearray(512 << 20)))'"
    result = sandboxed("bash", command=f"{fits}; {grab}", policy=limited)
    assert str(64 << 20) in result.content  # what fits still runs
    assert "MemoryError" in result.content and str(512 << 20) not in result.content
    assert NOTE in result.content and "256 MB of memory" in result.content
