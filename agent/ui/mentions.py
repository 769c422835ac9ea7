"""`@path` in a chat message: the file's content goes to the model with the message.

A mention is an `@` at the start of a word followed by a path; the file is read exactly
as `read_file` reads it (confined to the workspace, no symlink out, no FIFO, no binary),
so a mention can show the model nothing a tool call could not. Words that only look like
mentions (`user@host`, `@decorator` with no such file) are left alone: only a path that
names a file is attached, and one the user plainly meant that names no readable file (a
missing `calc.py`, a folder, a binary, a path outside the workspace) is reported back
instead of silently dropped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agent.errors import ToolError
from agent.tools.files import BINARY_SNIFF, is_binary, read_bytes
from agent.tools.registry import ToolContext

MENTION = re.compile(r"(?<!\S)@((?:[^\s\\]|\\ )+)")
MAX_ATTACH_BYTES = 64 * 1024
MAX_FILES = 10
_TRAILING = ".,;:!?)]}'\""
# A word the user plainly meant as a file (`src/x`, `calc.py`), unlike `@decorator`:
# missing, it is said, not silently dropped.
_LOOKS_LIKE_A_FILE = re.compile(r"[\w.-]*/[\w./ -]*|[\w-][\w.-]*\.[A-Za-z0-9]{1,5}")


@dataclass
class Expanded:
    text: str  # the message with the files' contents appended
    attached: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _paths(text: str) -> Iterator[str]:
    for match in MENTION.finditer(text):
        path = match.group(1).replace("\\ ", " ").rstrip(_TRAILING)
        if path:
            yield path


def _names_something(candidate: Path) -> bool:
    """Whether anything (a symlink too) is there. A name the filesystem refuses (too
    long, ENAMETOOLONG; a NUL byte) names nothing, so it is text, not a mention."""
    try:
        return candidate.exists() or candidate.is_symlink()
    except (OSError, ValueError):
        return False


def expand(text: str, workspace: Path) -> Expanded:
    out = Expanded(text)
    ctx = ToolContext(workspace)
    blocks: list[str] = []
    for path in dict.fromkeys(_paths(text)):
        if len(out.attached) >= MAX_FILES:
            out.problems.append(f"@{path}: not attached, at most {MAX_FILES} files a message")
            continue
        if not _names_something(workspace / path):
            if _LOOKS_LIKE_A_FILE.fullmatch(path):  # `@missing.py`: meant, and not there
                out.problems.append(f"@{path}: no such file in the workspace; not attached")
            continue  # not a mention of a file (an email address, a decorator)
        try:
            data = read_bytes(ctx, path, MAX_ATTACH_BYTES + 1)
        except ToolError as exc:
            out.problems.append(f"@{path}: {exc}")
            continue
        if is_binary(data[:BINARY_SNIFF]):
            out.problems.append(f"@{path}: a binary file; not attached")
            continue
        body = data[:MAX_ATTACH_BYTES].decode("utf-8", errors="replace")
        if len(data) > MAX_ATTACH_BYTES:
            body += f"\n[… cut at {MAX_ATTACH_BYTES // 1024} kB; read_file shows the rest]"
        blocks.append(f'<file path="{path}">\n{body.rstrip()}\n</file>')
        out.attached.append(path)
    if blocks:
        out.text = text.rstrip() + "\n\n" + "\n\n".join(blocks)
    return out


def complete(prefix: str, workspace: Path, limit: int = 50) -> list[str]:
    """Workspace paths that start with `prefix` (folders end in /), for the @ completer.
    Hidden entries only when the prefix asks for them; never outside the workspace."""
    folder, _, stem = prefix.rpartition("/")
    try:
        base = (workspace / folder).resolve() if folder else workspace.resolve()
        root = workspace.resolve()
    except (OSError, RuntimeError, ValueError):  # a loop (3.11 raises RuntimeError), NUL
        return []
    if base != root and root not in base.parents:
        return []
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        if not entry.name.startswith(stem) or (entry.name.startswith(".") and not stem):
            continue
        name = f"{folder}/{entry.name}" if folder else entry.name
        found.append(name + "/" if entry.is_dir(follow_symlinks=False) else name)
        if len(found) >= limit:
            break
    return found
