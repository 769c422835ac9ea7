"""A real Ray cluster on this machine, for the Ray tests and bench/batch_bench.py: `ray
start --head` on 127.0.0.1 (a cluster of its own, never one `ray.init()` would find or
make), stopped by ending its own processes only (`ray stop` would stop every cluster of
this user on the machine)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

RAY = Path(sys.executable).with_name("ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _proc(pid: str, name: str) -> bytes:
    try:
        return (Path("/proc") / pid / name).read_bytes()
    except OSError:
        return b""


def _ours(temp_dir: str, port: int) -> list[int]:
    """The cluster's own processes: those whose command line names its folder or port,
    and those its raylet started (their environment names the raylet)."""
    pids = [p.name for p in Path("/proc").iterdir() if p.name.isdigit()]
    core = {p for p in pids if temp_dir.encode() in _proc(p, "cmdline")}
    core |= {p for p in pids if f":{port} ".encode() in _proc(p, "cmdline").replace(b"\0", b" ")}
    raylets = {f"RAY_RAYLET_PID={p}".encode() for p in core}
    spawned = {p for p in pids if any(r + b"\0" in _proc(p, "environ") for r in raylets)}
    found = core | spawned
    parents = {p: _ppid(p) for p in pids}
    while True:  # and their children (the raylet's agents, its workers)
        more = {p for p, parent in parents.items() if parent in found} - found
        if not more:
            return sorted(int(p) for p in found if int(p) != os.getpid())
        found |= more


def _ppid(pid: str) -> str:
    for line in _proc(pid, "status").splitlines():
        if line.startswith(b"PPid:"):
            return line.split()[1].decode()
    return ""


AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_TOKEN")


@contextlib.contextmanager
def local_cluster(num_cpus: int = 2) -> Iterator[str]:
    """The cluster's address while it runs. It has a token of its own (Ray's token
    authentication, which Ray turns on by itself once ~/.ray/auth_token exists): set in
    this process's environment meanwhile, so the clients it starts (bosun, in process or
    as a child) use it, and never the user's ~/.ray."""
    temp_dir = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # Ray's socket paths must be short
    token = Path(temp_dir) / "auth_token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    saved = {k: os.environ.get(k) for k in AUTH_VARS}
    os.environ.pop("RAY_AUTH_TOKEN", None)
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
    _forget_token()
    port = _free_port()
    start = [str(RAY), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
             f"--num-cpus={num_cpus}", f"--temp-dir={temp_dir}", "--include-dashboard=false",
             "--object-store-memory=200000000",  # the default takes 30 % of RAM in /dev/shm
             "--disable-usage-stats"]  # fmt: skip
    try:
        proc = subprocess.run(start, capture_output=True, text=True, timeout=180)
        if proc.returncode != 0:
            raise RuntimeError(f"ray start failed:\n{proc.stdout}\n{proc.stderr}")
        yield f"127.0.0.1:{port}"
    finally:
        pids = _ours(temp_dir, port)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while any(Path(f"/proc/{p}").exists() for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in _ours(temp_dir, port):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(temp_dir, ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        _forget_token()


def _forget_token() -> None:
    """Ray, once imported, keeps the token it read first (~/.ray/auth_token, where one
    exists): it reads this cluster's again (as Ray's own tests do)."""
    if "ray" not in sys.modules:
        return
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()
