"""Workspace confinement: every path a tool touches stays inside the workspace root.

Every path is resolved (symlinks followed) and must land inside the root. Resolving is
a check, and a check can race with the filesystem, so files are then opened by walking
down from the root one component at a time with O_NOFOLLOW: a symlink that appears
after the check makes the open fail instead of following it out of the workspace.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

from agent.errors import ToolError

# O_NOFOLLOW on every component, O_DIRECTORY on the intermediate ones: a component that
# is (now) a symlink fails with ELOOP or ENOTDIR instead of leading elsewhere.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def is_inside(root: Path, path: Path) -> bool:
    return path == root or path.is_relative_to(root)


def resolve_in_workspace(root: Path, path: str) -> Path:
    """The real path for `path` (relative to the workspace), or a ToolError.

    `~` is deliberately not expanded: a model's "~/x" is a folder named "~" here, so
    it cannot name the user's home by accident.
    """
    if "\x00" in path:
        raise ToolError("path contains a NUL byte")
    real_root = root.resolve()
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = real_root / candidate
    try:
        real = candidate.resolve()
    except RuntimeError:  # Python 3.11 reports a symlink loop this way
        raise ToolError(f"{path!r} runs into a symlink loop") from None
    except OSError as exc:  # ELOOP, ENAMETOOLONG, EACCES on the way
        raise ToolError(f"{path!r} cannot be resolved: {exc.strerror or exc}") from None
    if not is_inside(real_root, real):
        raise ToolError(f"{path!r} is outside the workspace {real_root}; use paths inside it")
    return real


def _parts_below(real_root: Path, real: Path, shown: str) -> list[str]:
    """Components of `real` under the root; a second line of defence after is_inside."""
    try:
        parts = list(real.relative_to(real_root).parts)
    except ValueError:
        raise ToolError(f"{shown!r} is outside the workspace {real_root}") from None
    if any(p in ("", ".", "..") for p in parts):
        raise ToolError(f"{shown!r} is outside the workspace {real_root}")
    return parts


def _refuse(exc: OSError, fd: int, part: str, shown: str) -> Exception:
    """A clear refusal when a component is a symlink (it was not one when checked)."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        try:
            is_link = stat.S_ISLNK(os.lstat(part, dir_fd=fd).st_mode)
        except OSError:
            is_link = False
        if is_link:
            return ToolError(f"{shown!r} changed into a symlink while it was being opened; refused")
        if exc.errno == errno.ENOTDIR:
            return ToolError(f"{shown!r}: {part!r} is a file, not a folder")
    return exc


def open_in_workspace(
    root: Path, path: str, flags: int, mode: int = 0o644, *, make_parents: bool = False
) -> int:
    """A file descriptor for `path`, opened without following any symlink on the way.

    The path is resolved and checked first (so symlinks *inside* the workspace work,
    through their real path), then opened component by component from the root with
    O_NOFOLLOW. With `make_parents`, missing folders are created, all inside the root.
    """
    real_root = root.resolve()
    real = resolve_in_workspace(real_root, path)
    parts = _parts_below(real_root, real, path)
    if not parts:
        raise ToolError(f"{path!r} is the workspace folder itself, not a file")
    fd = os.open(real_root, _DIR_FLAGS)
    part = "."
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not make_parents:
                    raise
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        part = parts[-1]
        return os.open(part, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
    except OSError as exc:
        refusal = _refuse(exc, fd, part, path)
        if refusal is exc:
            raise
        raise refusal from exc
    finally:
        os.close(fd)


def open_dir_in_workspace(root: Path, path: str) -> int:
    """A descriptor for the folder `path`, opened one component at a time without
    following a symlink, so a folder swapped for a link after the check is refused."""
    real_root = root.resolve()
    real = resolve_in_workspace(real_root, path)
    parts = _parts_below(real_root, real, path)
    if not parts:
        return os.open(real_root, _DIR_FLAGS)
    return open_in_workspace(real_root, path, os.O_RDONLY | os.O_DIRECTORY)


def refuse_hardlinked(fd: int, shown: str) -> None:
    """A file with more than one name may also be named outside the workspace: writing
    through this name would change that file too."""
    links = os.fstat(fd).st_nlink
    if links > 1:
        raise ToolError(
            f"{shown} has {links} hard links, so it may also be a file outside the "
            "workspace; not written (copy it to a new file and edit that instead)"
        )


def open_parent_nofollow(root: Path, key: str, *, create: bool = False) -> tuple[int, str]:
    """A descriptor for the folder holding `key` (a real path relative to the root) and
    the file's name in it, walked down with O_NOFOLLOW: a folder on the way that is now
    a link fails (ELOOP/ENOTDIR) instead of leading out of the workspace."""
    *folders, name = PurePosixPath(key).parts
    fd = os.open(root.resolve(), _DIR_FLAGS)
    try:
        for part in folders:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd, name
