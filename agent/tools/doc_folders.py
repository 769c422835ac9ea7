"""Markdown files with front matter, read from folders bosun does not own: custom
commands (.bosun/commands/, ~/.codex/prompts/ …) and skills (…/skills/NAME/SKILL.md).

Those folders are often repository content, so every file is read as untrusted input:
a symlink that leads out of its folder is skipped, a FIFO or a device is never waited
on, a file over its size cap or not UTF-8 is skipped, and a folder holds at most
MAX_ENTRIES of them. Each problem is one warning line, said once per process (a batch
scans the same folders for every task), never a traceback.

They are read afresh on every use (each `/` typed, each task), so a walk must stay
cheap whatever the folder holds: `walk` enters real folders only, never a link to one
(200 links to `.` would otherwise make 200**4 folders to list), and looks at MAX_WALK
entries in all, however deep and wide the tree.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from agent.tools.confine import open_in_workspace
from agent.tools.registry import ToolError

MAX_ENTRIES = 200  # files (or skill folders) looked at per folder
MAX_DEPTH = 3  # subfolders of a commands folder (`/frontend:component`)
MAX_WALK = 5 * MAX_ENTRIES  # entries looked at in a whole tree, every folder of it
MAX_FRONT_MATTER = 8 * 1024
MAX_DESCRIPTION = 300  # characters of a description shown in a listing

Warn = Callable[[str], None]
_said: set[str] = set()


def warn_once(line: str) -> None:
    """A problem with a user's or a repository's file, on stderr, once per process."""
    if line in _said:
        return
    _said.add(line)
    sys.stderr.write(f"bosun: {line}\n")


@dataclass(frozen=True)
class Doc:
    """One Markdown file: its front matter (string values only) and its body."""

    path: Path  # as found (inside its folder; the folder may itself be a link)
    meta: dict[str, str]
    body: str


def read_doc(root: Path, relative: str, cap: int, warn: Warn = warn_once) -> Doc | None:
    """The file `relative` below `root`, or None (with a warning) when it is a link out
    of `root`, not a regular file, over `cap` bytes, unreadable or not UTF-8."""
    shown = root / relative
    try:
        fd = open_in_workspace(root, relative, os.O_RDONLY | os.O_NONBLOCK)
    except ToolError:
        warn(f"skipping {shown}: it leads outside {root}")
        return None
    except OSError as exc:
        warn(f"skipping {shown}: {exc.strerror or exc}")
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            warn(f"skipping {shown}: not a regular file")
            return None
        if info.st_size > cap:
            warn(f"skipping {shown}: {info.st_size} bytes, over the cap of {cap}")
            return None
        data = os.read(fd, cap + 1)
    except OSError as exc:
        warn(f"skipping {shown}: {exc.strerror or exc}")
        return None
    finally:
        os.close(fd)
    if len(data) > cap:  # grew since fstat
        warn(f"skipping {shown}: over the cap of {cap} bytes")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        warn(f"skipping {shown}: not UTF-8 text")
        return None
    meta, body = split_front_matter(text.removeprefix("\ufeff"), shown, warn)
    return Doc(shown, meta, body)


_FENCE = re.compile(r"---[ \t]*\r?\n")
_END = re.compile(r"^---[ \t]*$", re.MULTILINE)
_LINE = re.compile(r"^([A-Za-z][\w-]*)[ \t]*:[ \t]*(.*?)[ \t]*$")


def split_front_matter(
    text: str, shown: Path | str = "", warn: Warn = warn_once
) -> tuple[dict[str, str], str]:
    """(front matter, body). YAML first; where that fails (Claude Code's files often
    say `description: Fix: the bug`, which YAML refuses), plain `key: value` lines.
    Values that are not strings are dropped: a description is never a list or a tree.
    Without a closing `---` the whole text is the body."""
    start = _FENCE.match(text)
    if start is None:
        return {}, text
    end = _END.search(text, start.end())
    if end is None or end.start() - start.end() > MAX_FRONT_MATTER:
        return {}, text
    block = text[start.end() : end.start()]
    body = text[end.end() :].removeprefix("\r").removeprefix("\n")
    meta = _yaml_mapping(block)
    if meta is None:
        meta = {}
        for line in block.splitlines():
            m = _LINE.match(line)
            if m:
                meta[m.group(1)] = m.group(2).strip("'\"")
    out: dict[str, str] = {}
    for key, value in meta.items():
        if isinstance(value, bool | int | float):
            value = str(value)
        if isinstance(key, str) and isinstance(value, str):
            out[key] = value
        elif isinstance(key, str) and value is not None:
            warn(f"{shown}: front matter {key!r} is not text; ignored")
    return out, body


def _yaml_mapping(block: str) -> dict[object, object] | None:
    import yaml  # lazily: only where a file has front matter

    try:
        data = yaml.safe_load(block)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def one_line(text: str, limit: int = MAX_DESCRIPTION) -> str:
    """A description as a listing shows it: one line, at most `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def roots(
    folders: list[tuple[Path, str]], workspace: Path | None, warn: Warn = warn_once
) -> Iterator[tuple[Path, str, Path]]:
    """(folder, origin, its resolved root) of each folder there is, in order; a
    workspace's folder that leads outside the workspace is skipped, and said."""
    real_workspace = workspace.resolve() if workspace is not None else None
    for folder, origin in folders:
        if not folder.is_dir():
            continue
        root = folder.resolve()
        if origin == "workspace" and real_workspace and not root.is_relative_to(real_workspace):
            warn(f"skipping {folder}: it leads outside the workspace")
            continue
        yield folder, origin, root


def entries(folder: Path, warn: Warn = warn_once) -> Iterator[os.DirEntry[str]]:
    """The entries of `folder` in name order, at most MAX_ENTRIES (a warning says the
    rest were left out); nothing when it is missing or not a folder."""
    try:
        with os.scandir(folder) as it:
            found: list[os.DirEntry[str]] = []
            for entry in it:
                if len(found) >= 10 * MAX_ENTRIES:  # a huge folder is not held
                    break
                found.append(entry)
    except OSError:
        return
    found.sort(key=lambda e: e.name)
    if len(found) > MAX_ENTRIES:
        warn(f"{folder}: more than {MAX_ENTRIES} entries; only the first {MAX_ENTRIES} are read")
    yield from found[:MAX_ENTRIES]


def is_folder_inside(entry: os.DirEntry[str], root: Path, warn: Warn = warn_once) -> bool:
    """Whether `entry` is a folder whose real path stays below `root`'s (a link to a
    folder elsewhere is skipped, with a warning)."""
    try:
        if not entry.is_dir():
            return False
        if entry.is_symlink():
            real = Path(entry.path).resolve()
            if not real.is_relative_to(root.resolve()):
                warn(f"skipping {entry.path}: it leads outside {root}")
                return False
    except OSError:
        return False
    return True


def walk(
    root: Path,
    depth: int,
    warn: Warn = warn_once,
    enter: Callable[[str], bool] = lambda _relative: True,
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(path relative to root, entry) of each entry below `root` whose name does not
    start with a dot, in name order, a folder before what it holds; `depth` levels of
    real subfolders are entered where `enter(relative)` allows. A link to a folder is
    yielded but never entered: inside the tree it is only another name for a folder
    that is walked anyway, and a loop of them (`x -> .`) multiplies the walk by the
    number of links at every level. At most MAX_WALK entries in all (said once)."""
    budget = [MAX_WALK]
    yield from _walk(root, "", depth, warn, enter, budget)


def _walk(
    root: Path,
    prefix: str,
    depth: int,
    warn: Warn,
    enter: Callable[[str], bool],
    budget: list[int],
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    for entry in entries(root / prefix if prefix else root, warn):
        if entry.name.startswith("."):
            continue
        if budget[0] <= 0:
            warn(f"{root}: more than {MAX_WALK} entries below it; the rest are not read")
            return
        budget[0] -= 1
        relative = f"{prefix}/{entry.name}" if prefix else entry.name
        yield relative, entry
        if depth > 0 and _real_folder(entry) and enter(relative):
            yield from _walk(root, relative, depth - 1, warn, enter, budget)


def _real_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
