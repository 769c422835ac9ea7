"""Putting the workspace back to a shell-covering snapshot (agent.tools.shadow).

Rewinding to request N restores every path that bosun's requests N, N+1, … changed
(what differs between each request's before and after snapshots) to how it was before
request N: files bash deleted come back, files it changed revert, files it created go.
Nothing else is touched: an ignored file, a file over the size cap, a file nobody in
those requests changed.

The rule of the file-tool checkpoints holds here too: a path is restored only where it
is still exactly as the last of those requests left it. One the user changed since is
theirs, and then nothing is restored at all (all or nothing), naming every such path.
"As it was left" is what a snapshot taken now would record, as git sees a tree: a
folder is nothing of itself (its files are the entries), and a path below a link or a
file is not there. So a path that changed kind in the request (a folder swapped for a
link, a file for a folder) is just another change to put back.

Every read, write and delete walks down from the workspace root with O_NOFOLLOW
(agent.tools.confine), so a folder swapped for a link fails instead of leading out, and
a file is replaced by renaming a new one over its name, never written through. Once the
check passed, each path is put back on its own: one that cannot be (a folder that must
become a file again still holds an ignored file, a permission) is reported with why,
and the others are restored anyway; giving up half way would leave a state nobody had.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from dataclasses import dataclass, field

from agent.errors import UsageError
from agent.tools.confine import open_parent_nofollow
from agent.tools.shadow import ABSENT_MODE, Entry, ShadowRepo, SnapshotError, blob_id

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_OTHER = Entry("other", "")


@dataclass
class Rewound:
    restored: list[str] = field(default_factory=list)  # put back, or deleted
    removed: list[str] = field(default_factory=list)  # of `restored`: created, so deleted
    skipped: list[str] = field(default_factory=list)  # over the size cap: not covered
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, why) not put back


def _state(dir_fd: int, name: str, cap: int) -> Entry:
    """`name` in the folder as a snapshot entry, read without following a link; a
    folder is no entry (absent), as in a snapshot."""
    try:
        info = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return Entry()
    if stat.S_ISDIR(info.st_mode):
        return Entry()
    if stat.S_ISLNK(info.st_mode):
        return Entry("120000", blob_id(os.fsencode(os.readlink(name, dir_fd=dir_fd))))
    if not stat.S_ISREG(info.st_mode) or info.st_size > cap:
        return _OTHER
    fd = os.open(name, _READ, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as f:
        data = f.read(cap + 1)
    mode = "100755" if info.st_mode & 0o100 else "100644"
    return Entry(mode, blob_id(data))


def state_of(repo: ShadowRepo, path: str) -> Entry:
    try:
        dir_fd, name = open_parent_nofollow(repo.root, path)
    except FileNotFoundError:
        return Entry()
    except OSError as exc:  # a folder on the way is a link or a file now: as in git
        return Entry() if exc.errno in (errno.ELOOP, errno.ENOTDIR) else _OTHER
    try:
        return _state(dir_fd, name, repo.max_bytes)
    except OSError:
        return _OTHER
    finally:
        os.close(dir_fd)


def plan(repo: ShadowRepo, number: int) -> tuple[dict[str, Entry], dict[str, Entry], list[str]]:
    """For rewinding to request `number`: each path to restore with its target entry
    and the entry the last request left there, and the skipped files."""
    before = repo.ref(number, "before")
    if before is None:
        raise UsageError(f"request {number} has no snapshot")
    target_all = repo.listing(before)
    expect: dict[str, Entry] = {}
    skipped: set[str] = set()
    for n in (n for n in repo.numbers() if n >= number):
        start, end = repo.ref(n, "before"), repo.ref(n, "after")
        if start is None:
            continue
        notes = [start]
        if end is None:  # stopped before its after-snapshot: now is after
            end, big = repo.tree()
            skipped.update(big)
        else:
            notes.append(end)
        for commit in notes:
            listed = repo.note(commit).get("skipped")
            if isinstance(listed, list):
                skipped.update(str(p) for p in listed)
        for path, (_, after) in repo.diff(start, end).items():
            expect[path] = after
    for path in skipped:
        expect.pop(path, None)
    target = {path: target_all.get(path, Entry()) for path in expect}
    return target, expect, sorted(skipped)


def rewind_files(repo: ShadowRepo, number: int) -> Rewound:
    """Restore what requests `number`… changed: nothing where one of those paths changed
    since, else every path that can be, naming the others; forget their snapshots."""
    try:
        target, expect, skipped = plan(repo, number)
        moved = [p for p in sorted(expect) if state_of(repo, p) != expect[p]]
        if moved:
            raise UsageError(
                "nothing restored: "
                + ", ".join(moved)
                + " changed after bosun's request (edited, deleted or replaced since);"
                " they stay as they are"
            )
        done = Rewound(skipped=skipped)
        # deletions first: a file where a folder must come back, and the other way round
        order = sorted(target, key=lambda p: (target[p].mode != ABSENT_MODE, p))
        for path in order:
            try:
                _put(repo, path, target[path], expect[path])
            except (OSError, _Moved, SnapshotError) as exc:
                why = "it changed meanwhile" if isinstance(exc, _Moved) else str(exc)
                if isinstance(exc, OSError):
                    why = exc.strerror or why
                if isinstance(exc, OSError) and exc.errno == errno.ENOTEMPTY:
                    why = "a folder is in its place, holding files no snapshot has"
                done.failed.append((path, why))
                continue
            done.restored.append(path)
            if target[path].mode == ABSENT_MODE:
                done.removed.append(path)
        _tidy(repo, done.removed, set(repo.listing(repo.ref(number, "before") or "")))
        repo.drop_from(number)
    except SnapshotError as exc:
        raise UsageError(f"cannot restore the snapshot: {exc}") from None
    return done


def _put(repo: ShadowRepo, path: str, want: Entry, expect: Entry) -> None:
    """Put `want` at `path`, checked once more through the descriptor it writes with."""
    creating = want.mode != ABSENT_MODE
    dir_fd, name = open_parent_nofollow(repo.root, path, create=creating)
    try:
        if _state(dir_fd, name, repo.max_bytes) != expect:
            raise _Moved(path)
        if creating and _is_folder(dir_fd, name):  # a file or link was here: empty now?
            os.rmdir(name, dir_fd=dir_fd)  # only an empty one: ENOTEMPTY is reported
        if not creating:
            if expect.mode != ABSENT_MODE:
                os.unlink(name, dir_fd=dir_fd)  # the name, never a link's target
            return
        data = repo.blob(want.blob)
        tmp = f".{name}.bosun-undo-{secrets.token_hex(4)}"
        try:
            if want.mode == "120000":
                os.symlink(os.fsdecode(data), tmp, dir_fd=dir_fd)
            else:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                    os.fchmod(out.fileno(), 0o755 if want.mode == "100755" else 0o644)
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    finally:
        os.close(dir_fd)


def _is_folder(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(name, dir_fd=dir_fd).st_mode)
    except FileNotFoundError:
        return False


def _tidy(repo: ShadowRepo, removed: list[str], before: set[str]) -> None:
    """Folders left empty by deleting what the requests created, and not there before,
    go too (rmdir: only an empty folder, and never through a link)."""
    folders = {str(p) for path in removed for p in _parents(path)}
    kept = {str(p) for path in before for p in _parents(path)}
    for folder in sorted(folders - kept, key=lambda f: -f.count("/")):
        with contextlib.suppress(OSError):
            dir_fd, name = open_parent_nofollow(repo.root, folder)
            try:
                os.rmdir(name, dir_fd=dir_fd)
            finally:
                os.close(dir_fd)


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


class _Moved(Exception):
    """A file changed between the check and its restore."""
