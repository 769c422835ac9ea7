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
Once that check passed, a path that still cannot be put back (a permission, a race) is
named with why, and the rest are restored: stopping at the first would leave the
request half undone with nothing said about the other half.

Every read, write and delete walks down from the workspace root one folder at a time
with O_NOFOLLOW (`confine.open_dir_in_workspace`'s technique, without resolving links
first: a recorded path is already real, so a link anywhere on it now means it changed).
A restore writes a new file beside the old one and renames it over the name, so it never
writes into a file that a hard link also names outside the workspace.

Where git is installed, a chat (and a headless run) also snapshots the whole workspace
before each request that may write or run bash, and after it (agent.tools.shadow): then
/undo and /rewind restore what bash changed too (agent.tools.restore), by the same rule.
Without git, only the file tools' writes are covered, and that is said once.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agent.errors import ToolError, UsageError
from agent.tools.confine import open_parent_nofollow as _open_parent
from agent.tools.confine import resolve_in_workspace
from agent.tools.diffs import unified_diff
from agent.tools.permissions import decision
from agent.tools.registry import ToolRegistry
from agent.tools.restore import rewind_files
from agent.tools.shadow import ShadowRepo, SnapshotError, git_available

MAX_SNAPSHOT_BYTES = 4 * 1024 * 1024  # a bigger file is not snapshotted (and says so)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO never blocks
ABSENT = "absent"
NO_GIT = (
    "checkpoints: git is not installed; /undo covers bosun's file tools only, not what"
    " shell commands change"
)


def may_change_files(tools: ToolRegistry, approve: str, sandboxed: bool) -> bool:
    """Whether a request could write or run bash (what makes a snapshot worth taking)."""
    kinds = {tool.kind for name in tools.names if (tool := tools.get(name)) is not None}
    return any(
        decision(approve, kind, sandboxed=sandboxed) != "deny"
        for kind in kinds & {"write", "shell"}
    )


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
    number: int = 0  # the request's number in its conversation (1 = the first)
    shell: bool = False  # snapshotted whole (agent.tools.shadow): restored from there

    def changed(self) -> list[str]:
        """The paths bosun's writes in this request changed (a failed write did not)."""
        return [k for k, found in self.before.items() if self.after.get(k) != found.fingerprint]


@dataclass(frozen=True)
class Undone:
    restored: list[str]  # put back, or deleted where bosun had created them
    not_saved: list[str]  # changed by bosun but never saved (too big, not a regular file)
    removed: list[str] = field(default_factory=list)  # of `restored`: created, so deleted
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, why) not put back


def _look_at(dir_fd: int, name: str) -> Found:
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return Found(ABSENT)
    except OSError as exc:
        link = exc.errno == errno.ELOOP
        return Found("other:a link" if link else f"other:unreadable ({exc.strerror})")
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # a folder: fdopen would raise IsADirectoryError
        os.close(fd)
        return Found("other:not a regular file")
    with os.fdopen(fd, "rb") as f:
        if info.st_size > MAX_SNAPSHOT_BYTES:  # any later change moves its mtime
            return Found(f"other:big {info.st_size} {info.st_mtime_ns} {info.st_ino}")
        data = f.read(MAX_SNAPSHOT_BYTES + 1)
    if len(data) > MAX_SNAPSHOT_BYTES:
        return Found("other:grew while read")
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    return Found(digest, data, stat.S_IMODE(info.st_mode))


class Checkpoints:
    def __init__(
        self, workspace: Path, session: str = "", *, shell: bool = False, max_mb: float = 10
    ) -> None:
        """`shell`: snapshot the whole workspace around requests (session: whose)."""
        self.workspace = workspace
        self.requests: list[RequestFiles] = []
        self.original: dict[str, Found] = {}  # as the session found each file
        self.undone = 0  # requests put back so far (what "nothing to undo" says)
        self.notices: list[str] = []  # for the loop to say, once each
        self._said: set[str] = set()
        self.shadow: ShadowRepo | None = None
        if shell and session:
            self.shadow = self._open_shadow(session, int(max_mb * 1024 * 1024))
        # request number -> (its message's index in history, its prompt): for /rewind
        self.marks: dict[int, tuple[int, str]] = {}
        self.next_number = 1
        if self.shadow is not None:
            with contextlib.suppress(SnapshotError):
                for number in self.shadow.numbers():  # a resumed session's earlier ones
                    note = self.shadow.note(self.shadow.ref(number, "before") or "")
                    at, prompt = note.get("at"), note.get("prompt")
                    if isinstance(at, int) and at >= 0:
                        self.marks[number] = (at, str(prompt or ""))
                    self.next_number = number + 1

    def _open_shadow(self, session: str, max_bytes: int) -> ShadowRepo | None:
        if not git_available():
            self.say("git", NO_GIT)
            return None
        try:
            repo = ShadowRepo(self.workspace, session, max_bytes=max_bytes)
            repo.prune()
        except SnapshotError as exc:
            self.say("git", f"checkpoints: {exc}; {NO_GIT.split('; ', 1)[1]}")
            return None
        return repo

    def say(self, key: str, text: str) -> None:
        if key not in self._said:
            self._said.add(key)
            self.notices.append(text)

    def new_request(self, *, snapshot: bool = False, prompt: str = "", at: int = -1) -> None:
        """A user request starts (its message goes to history[at]); `snapshot`: it may
        write or run bash, so the whole workspace is saved first (where git is)."""
        number = self.next_number
        self.next_number += 1
        if at >= 0:
            self.marks[number] = (at, prompt)
        last = self.requests[-1] if self.requests else None
        if last is None or last.before or last.too_big or last.shell:
            self.requests.append(RequestFiles(number=number))
        else:
            last.number = number
        if snapshot and self.shadow is not None:
            mark = {"prompt": prompt[:200], "at": at}
            self.requests[-1].shell = self._snapshot(number, "before", mark)

    def around(self, prompt: str | None, writes: bool, at: int) -> list[str]:
        """The loop's one call: before a request (its prompt) or after it (None); the
        notices to say."""
        if prompt is None:
            self.end_request()
        else:
            self.new_request(snapshot=writes, prompt=prompt, at=at)
        said, self.notices = self.notices, []
        return said

    def end_request(self) -> None:
        """The request ended (however): what it left is its after-snapshot."""
        if self.requests and self.requests[-1].shell and self.shadow is not None:
            self._snapshot(self.requests[-1].number, "after")

    def _snapshot(self, number: int, which: str, mark: dict[str, object] | None = None) -> bool:
        assert self.shadow is not None
        try:
            shot = self.shadow.snapshot(number, which, mark)
        except SnapshotError as exc:
            self.say("snapshot", f"checkpoints: no snapshot ({exc}); /undo covers file tools only")
            return False
        cap = self.shadow.max_bytes // (1024 * 1024)
        for path in shot.skipped:
            self.say(f"big:{path}", f"checkpoints: {path} is over {cap} MB, so /undo skips it")
        return True

    def rewind(self, number: int) -> Undone:
        """Put the files back as they were before request `number` (and forget the
        requests from there): shell-covering where it was snapshotted, else undoing the
        file tools' requests one by one (each all or nothing)."""
        if self.shadow is not None and self.shadow.ref(number, "before") is not None:
            done = rewind_files(self.shadow, number)
            self._forget(number)
            return Undone(done.restored, done.skipped, done.removed, done.failed)
        total = Undone([], [], [])
        while any(r.number >= number and (r.changed() or r.too_big) for r in self.requests):
            one = self.undo()
            total.restored.extend(one.restored)
            total.not_saved.extend(one.not_saved)
            total.removed.extend(one.removed)
            total.failed.extend(one.failed)
        self._forget(number)
        return total

    def _forget(self, number: int) -> None:
        """Requests `number`… are gone (rewound): their numbers are given out again."""
        self.requests = [r for r in self.requests if r.number < number]
        self.marks = {n: m for n, m in self.marks.items() if n < number}
        self.next_number = number

    def _changed(self, request: RequestFiles) -> bool:
        if request.changed() or request.too_big:
            return True
        if not request.shell or self.shadow is None:
            return False
        try:
            start = self.shadow.ref(request.number, "before")
            end = self.shadow.ref(request.number, "after")
            now = end if end is not None else self.shadow.tree()[0]
            return start is not None and bool(self.shadow.diff(start, now))
        except SnapshotError:
            return False

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
        while self.requests and not self._changed(self.requests[-1]):
            self.requests.pop()
        if not self.requests:
            if self.undone:
                raise UsageError(
                    f"nothing more to undo: the {self.undone} request(s) of this session that"
                    " changed files are undone already"
                )
            what = "bosun" if self.shadow is not None else "bosun's file tools"
            raise UsageError(f"nothing to undo: {what} changed nothing yet")
        request = self.requests[-1]
        if request.shell and self.shadow is not None:
            rewound = rewind_files(self.shadow, request.number)
            self.requests.pop()
            self.undone += 1
            return Undone(rewound.restored, rewound.skipped, rewound.removed, rewound.failed)
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
        failed: list[tuple[str, str]] = []
        for key in keys:  # each on its own: one that fails is named, the rest restored
            try:
                self._restore(key, request.before[key], request.after[key])
            except (OSError, _Moved) as exc:
                why = "it changed meanwhile" if isinstance(exc, _Moved) else exc.strerror
                failed.append((key, why or str(exc)))
                continue
            done.append(key)
        self.requests.pop()
        self.undone += 1
        for key in done:
            if all(key not in t.before for t in self.requests):
                self.original.pop(key, None)
        removed = [key for key in done if request.before[key].content is None]
        return Undone(done, list(request.too_big), removed, failed)

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
            lines = unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), a, b)
            parts.append("".join(lines))
        return "".join(parts)


class _Moved(Exception):
    """A file changed between undo's check and its restore."""
