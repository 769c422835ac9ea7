"""What the agent's file tools changed, per user request: `/undo` and `/diff` in chat.

Before a `write`-kind tool (write_file, edit_file) runs, the file it names is saved as it
is then (its bytes and mode, or the fact that it did not exist), and after it ran, a
fingerprint of what the write left (a sha256 of the bytes) is kept; the first save of a
path in a request is the one that counts, the last fingerprint is the one that counts.
`/undo` puts the last request's files back; `/diff` compares every file the session
touched with how it was before bosun first changed it. Nothing is committed anywhere and
git is never called: the workspace may not be a repository, and a user's index is theirs.

Undo restores only what bosun recorded, and only where the file is still exactly as
bosun's last write left it. A file the user (or a shell command) edited, deleted,
recreated, or swapped for a link or a folder since is theirs: undo refuses, naming every
such path, and then restores *nothing* of that request (all or nothing: half a request
undone is a state nobody had). The request stays, so a later `/undo` can try again. A
path whose write changed nothing (it failed, or wrote the same bytes) is not touched.

Every read, write and delete walks down from the workspace root one folder at a time
with O_NOFOLLOW (`confine.open_dir_in_workspace`'s technique, without resolving links
first: a recorded path is already real, so a link anywhere on it now means it changed).
A restore writes a new file beside the old one and renames it over the name, so it never
writes into a file that a hard link also names outside the workspace.

Like Claude Code's checkpoints, changes made by shell commands are not tracked (a
command can touch anything); /undo says so rather than pretend.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agent.errors import ToolError, UsageError
from agent.tools.confine import resolve_in_workspace

MAX_SNAPSHOT_BYTES = 4 * 1024 * 1024  # a bigger file is not snapshotted (and says so)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO never blocks
ABSENT = "absent"


@dataclass(frozen=True)
class Found:
    """A path as the checkpoints see it: its fingerprint (`ABSENT`, `sha256:…`, or
    `other:…` for a link, folder, FIFO or oversized file) and, for a regular file under
    the cap, its bytes and mode."""

    fingerprint: str
    content: bytes | None = None
    mode: int = 0o644

    @property
    def saved(self) -> bool:
        """Whether this is a state undo can put back (no file, or a file's bytes)."""
        return self.fingerprint == ABSENT or self.content is not None


@dataclass
class RequestFiles:
    before: dict[str, Found] = field(default_factory=dict)  # as the first write found it
    after: dict[str, str] = field(default_factory=dict)  # fingerprint the last write left
    too_big: list[str] = field(default_factory=list)  # not saved: over the cap, not a file

    def changed(self) -> list[str]:
        """The paths bosun's writes in this request changed (a failed write did not)."""
        return [k for k, found in self.before.items() if self.after.get(k) != found.fingerprint]


@dataclass(frozen=True)
class Undone:
    restored: list[str]  # put back, or deleted where bosun had created them
    not_saved: list[str]  # changed by bosun but never saved (too big, not a regular file)
    removed: list[str] = field(default_factory=list)  # of `restored`: created, so deleted


def _open_parent(root: Path, key: str, *, create: bool = False) -> tuple[int, str]:
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


def _look_at(dir_fd: int, name: str) -> Found:
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return Found(ABSENT)
    except OSError as exc:
        link = exc.errno == errno.ELOOP
        return Found("other:a link" if link else f"other:unreadable ({exc.strerror})")
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            return Found("other:not a regular file")
        if info.st_size > MAX_SNAPSHOT_BYTES:  # any later change moves its mtime
            return Found(f"other:big {info.st_size} {info.st_mtime_ns} {info.st_ino}")
        data = f.read(MAX_SNAPSHOT_BYTES + 1)
    if len(data) > MAX_SNAPSHOT_BYTES:
        return Found("other:grew while read")
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    return Found(digest, data, stat.S_IMODE(info.st_mode))


class Checkpoints:
    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.requests: list[RequestFiles] = []
        self.original: dict[str, Found] = {}  # as the session found each file
        self.undone = 0  # requests put back so far (what "nothing to undo" says)

    def new_request(self) -> None:
        if not self.requests or self.requests[-1].before or self.requests[-1].too_big:
            self.requests.append(RequestFiles())

    def look(self, key: str) -> Found:
        """`key` as it is now, read without following any link on its way."""
        try:
            dir_fd, name = _open_parent(self.workspace, key)
        except FileNotFoundError:
            return Found(ABSENT)
        except OSError:  # ELOOP, ENOTDIR: a folder on the way is a link or a file now
            return Found("other:a folder on its path is a link or a file")
        try:
            return _look_at(dir_fd, name)
        finally:
            os.close(dir_fd)

    @contextlib.contextmanager
    def recording(self, path: str) -> Iterator[None]:
        """Around one write: save `path` before it, fingerprint what it left after
        (whatever way the tool ended, an interrupt included)."""
        key = self.before_write(path)
        try:
            yield
        finally:
            if key is not None:
                self.after_write(key)

    def before_write(self, path: str) -> str | None:
        """Save `path` before a tool changes it; its key, or None for a path the tool
        will refuse (outside the workspace: the tool reports that itself)."""
        try:
            real = resolve_in_workspace(self.workspace, path)
        except ToolError:
            return None
        key = str(real.relative_to(self.workspace.resolve()))
        if key == ".":
            return None
        if not self.requests:
            self.requests.append(RequestFiles())
        request = self.requests[-1]
        if key in request.before or key in request.too_big:
            return key
        found = self.look(key)
        if not found.saved:
            request.too_big.append(key)
            return key
        request.before[key] = found
        self.original.setdefault(key, found)
        return key

    def after_write(self, key: str) -> None:
        """Fingerprint what the write left at `key`: undo restores only from there."""
        if self.requests and key in self.requests[-1].before:
            self.requests[-1].after[key] = self.look(key).fingerprint

    def undo(self) -> Undone:
        """Put the latest request that changed files back, all or nothing: a UsageError
        naming the paths changed since bosun's write, and nothing restored, if any was."""
        while self.requests and not (self.requests[-1].changed() or self.requests[-1].too_big):
            self.requests.pop()
        if not self.requests:
            if self.undone:
                raise UsageError(
                    f"nothing more to undo: the {self.undone} request(s) of this session that"
                    " changed files are undone already"
                )
            raise UsageError("nothing to undo: bosun's file tools changed nothing yet")
        request = self.requests[-1]
        keys = request.changed()
        moved = [k for k in keys if self.look(k).fingerprint != request.after.get(k)]
        if moved:
            raise UsageError(
                "nothing restored: "
                + ", ".join(moved)
                + " changed after bosun wrote them (edited, deleted or replaced since);"
                " they stay as they are (/diff shows them)"
            )
        done: list[str] = []
        for key in keys:
            try:
                self._restore(key, request.before[key], request.after[key])
            except (OSError, _Moved) as exc:
                for k in done:  # the rest stays undoable
                    del request.before[k]
                why = "it changed meanwhile" if isinstance(exc, _Moved) else exc.strerror
                restored = f" (restored: {', '.join(done)})" if done else ""
                raise UsageError(f"cannot restore {key}: {why}{restored}") from None
            done.append(key)
        self.requests.pop()
        self.undone += 1
        for key in done:
            if all(key not in t.before for t in self.requests):
                self.original.pop(key, None)
        removed = [key for key in done if request.before[key].content is None]
        return Undone(done, list(request.too_big), removed)

    def _restore(self, key: str, saved: Found, expect: str) -> None:
        """Put `saved` back at `key`, checked once more through the same descriptor."""
        dir_fd, name = _open_parent(self.workspace, key, create=saved.content is not None)
        try:
            if _look_at(dir_fd, name).fingerprint != expect:
                raise _Moved(key)
            if saved.content is None:
                os.unlink(name, dir_fd=dir_fd)  # removes the name, never a link's target
                return
            tmp = f".{name}.bosun-undo-{secrets.token_hex(4)}"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(saved.content)
                    os.fchmod(out.fileno(), saved.mode)
                os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dir_fd)
                raise
        finally:
            os.close(dir_fd)

    def diff(self) -> str:
        """Unified diff of every touched file: as the session found it -> as it is now."""
        parts = []
        for key, before in sorted(self.original.items()):
            now = self.look(key)
            if now.fingerprint == before.fingerprint:
                continue
            if not now.saved:
                parts.append(f"{key}: changed (now a link, not a regular file, or too big)\n")
                continue
            old = (before.content or b"").decode("utf-8", errors="replace")
            new = (now.content or b"").decode("utf-8", errors="replace")
            a = "/dev/null" if before.content is None else f"a/{key}"
            b = "/dev/null" if now.content is None else f"b/{key}"
            lines = difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True), a, b
            )
            parts.append("".join(lines))
        return "".join(parts)


class _Moved(Exception):
    """A file changed between undo's check and its restore."""
