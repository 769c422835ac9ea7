"""What an approval of a workspace MCP server is for: its command line, and the content
of the workspace files it runs from.

A server the workspace names runs outside the sandbox, and its script is a workspace
file, which the model may rewrite (sandboxed bash in auto-edit does). An approval of
the command line alone would then start whatever the script became. So the approval
also records the state of every workspace path the command line names: the command
itself where it is a path, each argument and each `--option=VALUE` value (resolved
from the server's folder, or absolute), and for `-m MODULE` the module's file and its
top package's folder (Python looks in the current folder first). A file counts by its
SHA-256, a folder by every file below it (`.git` aside), a link by where it leads, and
a path that does not exist counts as absent, so a script created later changes the
server too. A folder too big to read (MAX_FILES, MAX_BYTES) is "unverifiable": never
equal to itself, so such a server is asked for each time.

Not covered: what the script imports or reads from elsewhere in the workspace.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol


class Launch(Protocol):
    """What of a server's settings says what it runs (a `ServerSpec`; servers.py
    imports this module, so it is not named here)."""

    @property
    def command(self) -> str | None: ...
    @property
    def args(self) -> tuple[str, ...]: ...
    @property
    def cwd(self) -> str | None: ...
    @property
    def url(self) -> str | None: ...


class Approvable(Launch, Protocol):
    """What an approval is given to: a server, or a workspace's hooks (agent.run.hooks),
    which share the store so that trust has one owner."""

    @property
    def name(self) -> str: ...
    def fingerprint(self) -> str: ...


MAX_FILES = 2000  # in the folders one server names, together
MAX_BYTES = 64 << 20
CHUNK = 1 << 20


class _TooBig(Exception):
    pass


class _Budget:
    def __init__(self) -> None:
        self.files = 0
        self.bytes = 0

    def take(self, size: int) -> None:
        self.files += 1
        self.bytes += size
        if self.files > MAX_FILES or self.bytes > MAX_BYTES:
            raise _TooBig


def _candidates(spec: Launch) -> Iterator[tuple[str, str]]:
    """(label, path as written) for each path the command line may name."""
    if spec.command is not None and "/" in spec.command:
        yield spec.command, spec.command
    args = list(spec.args)
    for i, arg in enumerate(args):
        if (arg == "-m" and i + 1 < len(args)) or (arg.startswith("-m") and len(arg) > 2):
            module = args[i + 1] if arg == "-m" else arg[2:]
            top = module.split(".")[0]
            if top:
                yield f"-m {module}", top
                yield f"-m {module}", module.replace(".", "/") + ".py"
        if arg.startswith("-") and "=" in arg:
            yield arg, arg.split("=", 1)[1]
        if arg:
            yield arg, arg


def server_files(spec: Launch, workspace: Path) -> dict[str, str]:
    """The state of each workspace path the server's command line names, keyed by the
    path relative to the workspace; {} for an HTTP server."""
    if spec.url is not None:
        return {}
    root = Path(os.path.realpath(workspace))
    cwd = Path(os.path.normpath(root / spec.cwd)) if spec.cwd else root
    out: dict[str, str] = {}
    budget = _Budget()
    for _label, written in _candidates(spec):
        if "\0" in written:
            continue
        lexical = Path(os.path.normpath(cwd / written))
        try:
            real = Path(os.path.realpath(lexical))
        except (OSError, ValueError):
            continue
        inside = lexical.is_relative_to(root) or real.is_relative_to(root)
        if not inside:
            continue
        key = str(lexical.relative_to(root)) if lexical.is_relative_to(root) else str(real)
        if key in out:
            continue
        out[key] = _state(lexical, real, root, budget)
    return out


def _state(lexical: Path, real: Path, root: Path, budget: _Budget) -> str:
    """One path's state: absent, a file's hash, a folder's, or where a link leads out."""
    try:
        info = os.stat(real)
    except FileNotFoundError:
        return "absent" if not os.path.lexists(lexical) else f"dangling:{os.readlink(lexical)}"
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    if not real.is_relative_to(root):
        return f"outside:{real}"  # the workspace's link leads here; its target is not ours
    try:
        if stat.S_ISREG(info.st_mode):
            budget.take(info.st_size)
            return f"file:{_file_hash(real)}"
        if stat.S_ISDIR(info.st_mode):
            return f"folder:{_tree_hash(real, budget)}"
    except _TooBig:
        return f"unverifiable:{secrets.token_hex(8)}"
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    return f"other:{stat.S_IFMT(info.st_mode)}"


def _file_hash(path: Path) -> str:
    """SHA-256 of a regular file, opened without following a link and without blocking
    (a FIFO swapped in must not hang bosun)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return f"not-a-file:{stat.S_IFMT(os.fstat(fd).st_mode)}"
        digest = hashlib.sha256()
        read = 0
        while chunk := fh.read(CHUNK):
            read += len(chunk)
            if read > MAX_BYTES:
                raise _TooBig
            digest.update(chunk)
    return digest.hexdigest()


def _tree_hash(folder: Path, budget: _Budget) -> str:
    """SHA-256 over every entry below `folder`: names, kinds, file contents, link targets."""
    digest = hashlib.sha256()
    for base, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        here = Path(base)
        for name in sorted(files) + [d for d in dirs if (here / d).is_symlink()]:
            path = here / name
            rel = str(path.relative_to(folder))
            with contextlib.suppress(FileNotFoundError):
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode):
                    budget.take(0)
                    digest.update(f"L {rel} {os.readlink(path)}\n".encode("utf-8", "replace"))
                elif stat.S_ISREG(info.st_mode):
                    budget.take(info.st_size)
                    digest.update(f"F {rel} {_file_hash(path)}\n".encode("utf-8", "replace"))
                else:
                    budget.take(0)
                    digest.update(f"O {rel} {stat.S_IFMT(info.st_mode)}\n".encode())
    return digest.hexdigest()


def changed(pinned: dict[str, str], now: dict[str, str]) -> list[str]:
    """The paths whose state differs (an unverifiable one always does)."""
    names = sorted(set(pinned) | set(now))
    return [
        n
        for n in names
        if pinned.get(n) != now.get(n) or now.get(n, "").startswith("unverifiable:")
    ]
