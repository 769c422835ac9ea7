"""cgroups for the sandbox's process limit: where this process may make a `pids`
cgroup, and removing one once its processes are gone. Apart from the sandbox itself so
probing for it imports nothing of the per-call machinery."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path


def _own_cgroups() -> dict[str, str]:
    """controller -> this process's cgroup path ("" is the cgroup v2 hierarchy)."""
    own: dict[str, str] = {}
    with open("/proc/self/cgroup", encoding="utf-8") as fh:
        for line in fh:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                own[name] = path
    return own


def _candidates() -> Iterator[Path]:
    """Folders where a child pids cgroup could be made: cgroup v1's pids hierarchy, or
    v2 where `pids` is already enabled for children (bosun changes no cgroup setting)."""
    own = _own_cgroups()
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        mounts = [line.split(" - ", 1) for line in fh if " - " in line]
    for pre, post in mounts:
        fstype, _source, options = [*post.split(), "", "", ""][:3]
        point = Path(pre.split()[4].replace("\\040", " "))
        if fstype == "cgroup" and "pids" in options.split(",") and "pids" in own:
            yield point / own["pids"].lstrip("/")
        elif fstype == "cgroup2" and "" in own:
            base = point / own[""].lstrip("/")
            with contextlib.suppress(OSError):
                if "pids" in (base / "cgroup.subtree_control").read_text().split():
                    yield base


def cgroup_base() -> Path | None:
    """A folder where this process can make a pids cgroup, tried for real; None if none."""
    try:
        for base in _candidates():
            trial = base / f"bosun-probe-{os.getpid()}-{secrets.token_hex(4)}"
            try:
                trial.mkdir()
            except OSError:
                continue
            try:
                (trial / "pids.max").write_text("8")
                _sweep(base)
                return base
            except OSError:
                continue
            finally:
                with contextlib.suppress(OSError):
                    trial.rmdir()
    except (OSError, ValueError, IndexError):  # no /proc, an unexpected line
        return None
    return None


def _sweep(base: Path) -> None:
    """Remove the empty cgroups of bosun processes that have ended (a call's cgroup is
    left behind only if its namespace took over 2 s to die)."""
    for group in base.glob("bosun-*-*"):
        try:
            pid = int(group.name.split("-")[1])
            if pid != os.getpid() and not Path(f"/proc/{pid}").exists():
                group.rmdir()
        except (ValueError, OSError):
            continue


def remove_cgroup(group: Path) -> None:
    """rmdir once the PID namespace has finished dying (it takes everything with it).
    The last task leaves a moment after it was reaped (EBUSY for about 0.3 ms), so the
    waits start short."""
    deadline = time.monotonic() + 2
    pause = 0.0002
    while True:
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return  # left behind, it holds nothing: the namespace is gone
        time.sleep(pause)
        pause = min(pause * 2, 0.01)
