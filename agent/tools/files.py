"""Reading tools. Paths are relative to the workspace and never leave it."""

from __future__ import annotations

import os
import stat

from agent.tools.confine import open_dir_in_workspace, open_in_workspace, resolve_in_workspace
from agent.tools.registry import ToolContext, ToolError, tool

MAX_READ_BYTES = 256 * 1024
MAX_LINE_CHARS = 2000
MAX_LIST_ENTRIES = 500
MAX_SCAN_ENTRIES = 20_000  # a folder of a million files is counted, not held
BINARY_SNIFF = 8192


def is_binary(head: bytes) -> bool:
    """NUL bytes do not occur in text a model could use, and do in nearly every binary."""
    return b"\x00" in head


def read_bytes(ctx: ToolContext, path: str, limit: int) -> bytes:
    """Up to `limit` bytes of a regular file, opened without following a swapped symlink.

    O_NONBLOCK keeps a FIFO in the workspace from hanging the agent; anything that is
    not a regular file is then refused.
    """
    real = resolve_in_workspace(ctx.workspace, path)
    if not real.exists():
        raise ToolError(f"{path}: no such file; use list_dir or glob to find it")
    if real.is_dir():
        raise ToolError(f"{path} is a directory; use list_dir")
    fd = open_in_workspace(ctx.workspace, path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ToolError(f"{path} is not a regular file")
        return fh.read(limit)


def editor_text(ctx: ToolContext, path: str, text: str) -> str:
    """The file's text as the editor holds it, where one does (unsaved changes win over
    the disk); `text` is what the disk says. The path was confined when the disk was read."""
    if ctx.editor is None:
        return text
    held = ctx.editor.read_text(resolve_in_workspace(ctx.workspace, path))
    return text if held is None else held


@tool("read")
def read_file(ctx: ToolContext, path: str, offset: int = 1, limit: int = 2000) -> str:
    """Read a text file from the workspace, with line numbers.

    Args:
        path: file path relative to the workspace root
        offset: first line to show (1-based)
        limit: how many lines to show at most
    """
    if limit < 1:
        raise ToolError(f"limit must be at least 1, not {limit}")
    data = read_bytes(ctx, path, MAX_READ_BYTES + 1)
    if is_binary(data[:BINARY_SNIFF]):
        raise ToolError(f"{path} is a binary file; not shown")
    truncated = len(data) > MAX_READ_BYTES
    text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
    held = editor_text(ctx, path, text)
    if held is not text:  # the editor's buffer: bounded the same way
        data = held.encode("utf-8", errors="replace")
        truncated = len(data) > MAX_READ_BYTES
        text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
    lines = text.splitlines()
    start = max(offset, 1)
    shown = lines[start - 1 : start - 1 + max(limit, 0)]
    width = len(str(start + len(shown)))
    body = "\n".join(f"{n:>{width}}\t{_clip(line)}" for n, line in enumerate(shown, start))
    notes: list[str] = []
    if not lines:
        notes.append("(empty file)")
    elif not shown:
        notes.append(f"(the file has {len(lines)} lines; offset {start} is past the end)")
    elif start - 1 + len(shown) < len(lines):
        notes.append(f"(showing lines {start}-{start + len(shown) - 1} of {len(lines)})")
    if truncated:
        notes.append(f"(file is larger than {MAX_READ_BYTES} bytes; the rest is not shown)")
    return "\n".join([body, *notes]) if body else "\n".join(notes)


def _clip(line: str) -> str:
    """Minified files have megabyte lines; one of them must not fill the context."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[:MAX_LINE_CHARS] + f" … ({len(line) - MAX_LINE_CHARS} more characters)"


@tool("read")
def list_dir(ctx: ToolContext, path: str = ".") -> str:
    """List a directory of the workspace; folders end with "/", symlinks with "@".

    Args:
        path: directory path relative to the workspace root
    """
    real = resolve_in_workspace(ctx.workspace, path)
    if not real.exists():
        raise ToolError(f"{path}: no such directory")
    if not real.is_dir():
        raise ToolError(f"{path} is a file; use read_file")
    try:
        fd = open_dir_in_workspace(ctx.workspace, path)
    except OSError as exc:
        raise ToolError(f"{path}: cannot be listed ({exc.strerror or exc})") from None
    names: list[tuple[bool, str]] = []
    more = 0
    try:
        with os.scandir(fd) as it:  # listed through the descriptor: no path to race
            for entry in it:
                if entry.name == ".git":
                    continue
                if len(names) >= MAX_SCAN_ENTRIES:
                    more += 1
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                mark = "/" if is_dir else "@" if entry.is_symlink() else ""
                names.append((not is_dir, entry.name + mark))
    finally:
        os.close(fd)
    if not names:
        return "(empty directory)"
    shown = [name for _, name in sorted(names)]
    extra = len(shown) - MAX_LIST_ENTRIES + more
    shown = shown[:MAX_LIST_ENTRIES]
    return "\n".join(shown + ([f"(and {extra} more)"] if extra > 0 else []))
