"""Files under a `--results DIR`, which is often on a filesystem other people write to.

The folder the user names may be a link (their choice), but nothing bosun finds under
it is trusted: a link planted at a result's name would have a task's lines written
through it, over a file outside DIR (CWE-59), and a FIFO named `*.jsonl` would hang the
reader. So every name under DIR is reached from a descriptor of DIR, one component at
a time, with O_NOFOLLOW: a link is refused, never followed and never removed (it says
someone tampered with the folder). A file bosun writes is always new (an old regular
file of that name is unlinked, then the name is created with O_EXCL, so a link or a hard
link swapped in meanwhile fails the create instead of being written through); a file
bosun reads must be a regular file, opened without blocking and read up to a cap.

What this cannot pin: a task's workspace is a path that git and the tools open by name,
so `made_folder` checks it before the build and `same_folder` after; a folder swapped
for a link while the task runs is outside what a path can guard.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from agent.errors import UsageError

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Refused(UsageError):
    """Something under the results folder that bosun did not make (a link, a FIFO, a
    file too big to be a result): left alone, and named."""


@contextmanager
def folder(path: Path) -> Iterator[int]:
    """A descriptor of a folder the user named (followed if it is a link: their choice);
    every name below it is then opened relative to it."""
    fd = os.open(path, _DIR)
    try:
        yield fd
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    return "not a regular file"


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return None


def _refused(shown: Path, what: str) -> Refused:
    return Refused(f"{shown} is {what}, which bosun never makes under a results folder; refused")


def read_regular(dir_fd: int, name: str, limit: int, shown: Path) -> bytes:
    """The bytes of the regular file `name`: a link, FIFO, folder or device is Refused
    without being opened through, and a file over `limit` bytes without being read."""
    try:
        fd = os.open(name, _READ, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refused(shown, "a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(shown, _kind(info.st_mode))
        if info.st_size > limit:
            raise Refused(f"{shown} is larger than {limit} bytes; not read")
        data = fh.read(limit + 1)
    if len(data) > limit:  # it grew while being read
        raise Refused(f"{shown} is larger than {limit} bytes; not read")
    return data


def create_file(dir_fd: int, name: str, shown: Path) -> int:
    """A descriptor to write a new file at `name`: a regular file there (an earlier run's)
    is unlinked first, anything else is Refused; O_EXCL makes a name that was filled
    again in between fail rather than be written through."""
    info = _lstat(dir_fd, name)
    if info is not None:
        if not stat.S_ISREG(info.st_mode):
            raise _refused(shown, _kind(info.st_mode))
        os.unlink(name, dir_fd=dir_fd)  # unlinks the name only, never what it links to
    try:
        return os.open(name, _CREATE, 0o666, dir_fd=dir_fd)
    except FileExistsError:
        raise Refused(f"{shown} was made again while bosun replaced it; refused") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refused(shown, "a symbolic link") from None
        raise


def replace_file(dir_fd: int, name: str, data: bytes, shown: Path) -> None:
    """`name` replaced whole (a reader never sees half of it): written to a new
    `.NAME.part`, then renamed over `name`, which must be absent or a regular file."""
    part = f".{name}.part"
    fd = create_file(dir_fd, part, shown.with_name(part))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        info = _lstat(dir_fd, name)
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise _refused(shown, _kind(info.st_mode))
        os.replace(part, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(part, dir_fd=dir_fd)
        raise


def _open_folder(dir_fd: int, name: str, shown: Path) -> int:
    try:
        return os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            info = _lstat(dir_fd, name)
            raise _refused(shown, _kind(info.st_mode) if info else "not a folder") from None
        raise


def made_folder(parent: Path, names: tuple[str, str]) -> tuple[int, int]:
    """`parent/A/B` made anew (A kept, made if missing; an old B, a real folder, removed
    with everything in it), neither of them a link; its (device, inode), for
    `same_folder` to check once the folder is filled through its path."""
    outer, inner = names
    with folder(parent) as top:
        with suppress(FileExistsError):
            os.mkdir(outer, dir_fd=top)
        fd = _open_folder(top, outer, parent / outer)
        try:
            shown = parent / outer / inner
            info = _lstat(fd, inner)
            if info is not None:
                if not stat.S_ISDIR(info.st_mode):
                    raise _refused(shown, _kind(info.st_mode))
                shutil.rmtree(inner, dir_fd=fd)  # fd-based: never follows a link inside
            try:
                os.mkdir(inner, dir_fd=fd)
            except FileExistsError:
                raise Refused(f"{shown} was made again while bosun emptied it; refused") from None
            made = os.lstat(inner, dir_fd=fd)
            return made.st_dev, made.st_ino
        finally:
            os.close(fd)


def same_folder(parent: Path, names: tuple[str, str], made: tuple[int, int]) -> bool:
    """Whether `parent/A/B`, walked without following links, is still the folder made."""
    try:
        with folder(parent) as top:
            fd = os.open(names[0], _DIR | os.O_NOFOLLOW, dir_fd=top)
            try:
                info = os.lstat(names[1], dir_fd=fd)
            finally:
                os.close(fd)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and (info.st_dev, info.st_ino) == made
