"""`.git` at any depth of the workspace, for bash's sandbox.

git runs commands named in a repository's config (`core.fsmonitor`, hooks), and it
finds a repository by walking up from the folder it runs in, so a `.git` anywhere in
the workspace runs its commands at the user's next git command there: a submodule's
pointer file (`gitdir: ../elsewhere`) the top-level `git status` follows into the
submodule, a nested repository, or a new one planted in a folder the user later works
in. So, around each sandboxed call:

- before it, every `.git` in the workspace (a folder, a pointer file, a link, in any
  letter case: a case-folding folder finds `.GIT` too) is found, and bound read-only
  inside the sandbox, where it leads within the workspace; a bound one cannot be
  removed, renamed or replaced either (it is a mount point);
- after it, once the sandbox's processes are gone, a `.git` that was not there before
  (planted, moved in, or put where one was by renaming the folder that held it) is
  moved aside to `.git.bosun-refused`, its content kept for the user to look at, and
  the call's result says so; a `.git` link that was removed is put back.

Finding them walks the workspace twice a call (about 2 µs an entry each time: 30 ms
for 16,000 files); a workspace of more than MAX_ENTRIES entries is refused rather than
left half-guarded.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from agent.errors import ToolError

MAX_ENTRIES = 1_000_000
ASIDE = ".bosun-refused"

# What makes a `.git` the same one: device, inode, type and, for a link, where it leads.
Identity = tuple[int, int, int, str]


@dataclass
class GitEntries:
    """The `.git` entries of a workspace at one moment."""

    found: dict[Path, Identity] = field(default_factory=dict)
    parents: dict[Path, tuple[int, int]] = field(default_factory=dict)  # their folders
    unchecked: list[Path] = field(default_factory=list)  # folders that could not be read


def is_git_name(name: str) -> bool:
    return name.lower() == ".git"


def _identity(path: Path, info: os.stat_result) -> Identity:
    target = ""
    if stat.S_ISLNK(info.st_mode):
        with contextlib.suppress(OSError):
            target = os.readlink(path)
    return (info.st_dev, info.st_ino, stat.S_IFMT(info.st_mode), target)


def find_git_entries(workspace: Path, *, bounded: bool = True) -> GitEntries:
    """Every `.git` under `workspace` (links not followed; a `.git` folder is not looked
    into). A ToolError where the workspace holds more than MAX_ENTRIES entries, unless
    not `bounded`: before a call it is; after one it is not, or a command could hide a
    `.git` behind a million empty files (the next call is then refused)."""
    limit = MAX_ENTRIES if bounded else None
    out = GitEntries()
    seen = 0
    stack = [os.path.realpath(workspace)]  # strings: a Path per entry would triple the time
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except FileNotFoundError:
            continue
        except OSError:
            out.unchecked.append(Path(folder))
            continue
        seen += len(entries)
        if limit is not None and seen > limit:
            raise ToolError(
                f"the workspace holds more than {limit:,} files and folders: too many"
                " for bosun's sandbox to check for .git folders, which it must before and"
                " after each command. Use a smaller workspace, or run without the sandbox"
                " (--sandbox off; bash then asks before each command)"
            )
        for entry in entries:
            try:
                if len(entry.name) == 4 and is_git_name(entry.name):
                    path = Path(entry.path)
                    here = os.stat(folder, follow_symlinks=False)
                    out.found[path] = _identity(path, entry.stat(follow_symlinks=False))
                    out.parents[path] = (here.st_dev, here.st_ino)
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
            except OSError:
                continue
    return out


def git_binds(workspace: Path, entries: GitEntries, skip: tuple[Path, ...] = ()) -> list[str]:
    """bwrap options that show each `.git` read-only: a link is protected at its target
    inside the workspace (one that leads out is read-only already, one that leads
    nowhere has nothing to protect); none under `skip`, folders the sandbox hides."""
    root = Path(os.path.realpath(workspace))
    binds: list[str] = []
    done: set[Path] = set()
    for path in sorted(entries.found, key=lambda p: len(p.parts)):
        real = Path(os.path.realpath(path))
        if real in done or not real.is_relative_to(root) or not real.exists():
            continue  # out of the workspace, dangling, or a link loop
        if any(real.is_relative_to(hidden) for hidden in skip):
            continue
        done.add(real)
        binds += ["--ro-bind", str(real), str(real)]
    return binds


def refuse_new(workspace: Path, before: GitEntries) -> list[str]:
    """Move aside every `.git` that is new since `before`, put back removed `.git` links;
    one line for the model about what was done, or nothing."""
    root = Path(os.path.realpath(workspace))
    after = find_git_entries(root, bounded=False)
    known = set(before.found.values())
    moved, failed = [], []
    for path, identity in sorted(after.found.items()):
        if identity in known:
            continue
        aside = _move_aside(path, after.parents[path])
        shown = str(path.relative_to(root))
        if aside is None:
            failed.append(shown)
        else:
            moved.append(f"{shown} to {aside.relative_to(root)}")
    _restore_links(before)
    notes = []
    if moved:
        notes.append(
            f"[bosun moved {', '.join(moved)}: a .git made by a command would run its"
            " commands (hooks, core.fsmonitor) at your next git command; its content is"
            " kept there]"
        )
    if failed or after.unchecked:
        where = ", ".join(failed + [str(p) for p in after.unchecked])
        notes.append(f"[bosun could not check or move aside a .git at: {where}]")
    return notes


def _move_aside(path: Path, parent_id: tuple[int, int]) -> Path | None:
    """Rename `path` to `<name>.bosun-refused[.N]` in the folder the walk saw (opened
    without following a link, and checked to be that folder); None where it could not."""
    try:
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != parent_id:
            return None
        for n in range(1, 100):
            name = f"{path.name}{ASIDE}" + (f".{n}" if n > 1 else "")
            with contextlib.suppress(FileNotFoundError):
                os.stat(name, dir_fd=fd, follow_symlinks=False)
                continue  # taken
            try:
                os.rename(path.name, name, src_dir_fd=fd, dst_dir_fd=fd)
            except OSError:
                return None
            return path.with_name(name)
        return None
    finally:
        os.close(fd)


def _restore_links(before: GitEntries) -> None:
    """A `.git` link the command removed (or replaced) is put back where nothing stands
    now."""
    for path, (_dev, _ino, kind, target) in before.found.items():
        if kind == stat.S_IFLNK and not os.path.lexists(path):
            with contextlib.suppress(OSError):
                os.symlink(target, path)
