"""Workspaces that travel: a task's own folder, built where the task runs.

A task line may say `"copy_workspace": true` (its workspace is copied, so tasks that
run at once never edit one folder) or name `"repo"` and `"commit"` (cloned and checked
out): either way the folder is made on the machine that runs the task, which is what
lets a worker elsewhere (a Slurm node, a Ray worker) run it. With `--results DIR` the
folder is kept in `DIR/workspaces/`, beside the task's result, so its changes can be
looked at; without, it is a temporary folder, removed when the task ends. A link
planted at `DIR/workspaces` or at the task's folder fails the task, never followed
(agent.run.batch.safe_files).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agent.errors import HarnessError
from agent.run.batch.safe_files import Refused, made_folder, same_folder
from agent.run.tasks_file import CopyOf, GitCheckout, Task
from agent.untrusted import visible

CLONE_TIMEOUT_S = 900


class WorkspaceError(HarnessError):
    """The task's workspace could not be built (the copy or clone failed)."""


def _special(folder: str, names: list[str]) -> set[str]:
    """What a copy leaves out: sockets, FIFOs, devices (copying a FIFO would block)."""
    left = set()
    for name in names:
        try:
            mode = os.lstat(os.path.join(folder, name)).st_mode
        except OSError:
            left.add(name)
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            left.add(name)
    return left


def copy_into(source: Path, dest: Path) -> None:
    """Links are copied as links, never followed: a copy holds nothing from outside.
    `dest` may be an empty folder already (the one `task_workspace` made)."""
    try:
        shutil.copytree(source, dest, symlinks=True, ignore=_special, dirs_exist_ok=True)
    except (OSError, shutil.Error) as exc:
        raise WorkspaceError(f"cannot copy the workspace {source}: {exc}") from None


def _git(what: str, *args: str, cwd: Path | None = None) -> None:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=CLONE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise WorkspaceError("git is not installed on this machine") from None
    except subprocess.TimeoutExpired:
        raise WorkspaceError(f"{what}: git took over {CLONE_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        said = proc.stderr.strip().splitlines()
        raise WorkspaceError(
            f"{what}: {visible(said[-1] if said else f'git exit {proc.returncode}')}"
        )


def clone_into(source: GitCheckout, dest: Path) -> None:
    _git(f"cannot clone {source.repo}", "clone", "--quiet", "--no-checkout", "--",
         source.repo, str(dest))  # fmt: skip
    _git(f"cannot check out {source.commit} of {source.repo}", "-c",
         "advice.detachedHead=false", "checkout", "--quiet", "--detach", source.commit,
         "--", cwd=dest)  # fmt: skip


@contextmanager
def task_workspace(task: Task, keep_in: Path | None, name: str) -> Iterator[Task]:
    """The task with its own workspace built (a task with none: as it is). `keep_in`:
    the folder to build it in and leave it (`DIR/workspaces`), else a temporary one."""
    source = task.source
    if source is None:
        yield task
        return
    made: tuple[int, int] | None = None
    if keep_in is not None:
        dest = keep_in / name
        made = _fresh_folder(keep_in, name)  # a task done again starts afresh
        scratch = None
    else:
        scratch = Path(tempfile.mkdtemp(prefix="bosun-task-"))
        dest = scratch / "ws"
    try:
        if isinstance(source, CopyOf):
            copy_into(source.path, dest)
        else:
            clone_into(source, dest)
        if (
            keep_in is not None
            and made is not None
            and not same_folder(keep_in.parent, (keep_in.name, name), made)
        ):
            raise WorkspaceError(f"{dest} was swapped for another file while it was built; refused")
        yield task.but(workspace=dest.resolve())
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _fresh_folder(keep_in: Path, name: str) -> tuple[int, int]:
    """`keep_in/name` made empty, walked without following links: git and the copy
    write into a folder bosun made, never through a link planted in its place."""
    try:
        return made_folder(keep_in.parent, (keep_in.name, name))
    except Refused as exc:
        raise WorkspaceError(f"no workspace for this task: {exc}") from None
    except OSError as exc:
        raise WorkspaceError(f"cannot make the workspace {keep_in / name}: {exc}") from None
