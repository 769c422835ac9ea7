"""What the agent's file tools changed, per user request: `/undo` and `/diff` in chat.

Before a `write`-kind tool (write_file, edit_file) runs, the file it names is saved as it
is then (its bytes, or the fact that it did not exist); the first save of a path in a
request is the one that counts. `/undo` puts the last request's files back, newest
first; `/diff` compares every file the session touched with how it was before bosun
first changed it. Nothing is committed anywhere and git is never called: the workspace
may not be a repository, and a user's index is theirs.

Like Claude Code's checkpoints, changes made by shell commands are not tracked (a
command can touch anything); /undo says so rather than pretend.
"""

from __future__ import annotations

import contextlib
import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path

from agent.errors import ToolError, UsageError
from agent.tools.confine import open_in_workspace, resolve_in_workspace

MAX_SNAPSHOT_BYTES = 4 * 1024 * 1024  # a bigger file is not snapshotted (and says so)


@dataclass
class RequestFiles:
    before: dict[str, bytes | None] = field(default_factory=dict)  # None: did not exist
    too_big: list[str] = field(default_factory=list)


class Checkpoints:
    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.requests: list[RequestFiles] = []
        self.original: dict[str, bytes | None] = {}  # as the session found each file

    def new_request(self) -> None:
        if not self.requests or self.requests[-1].before or self.requests[-1].too_big:
            self.requests.append(RequestFiles())

    def before_write(self, path: str) -> None:
        """Save `path` before a tool changes it. A path the tool will refuse (outside
        the workspace) is not saved: the tool reports that itself."""
        try:
            real = resolve_in_workspace(self.workspace, path)
        except ToolError:
            return
        key = str(real.relative_to(self.workspace.resolve()))
        if not self.requests:
            self.requests.append(RequestFiles())
        request = self.requests[-1]
        if key in request.before or key in request.too_big:
            return
        content = self._read(key)
        if content is False:
            request.too_big.append(key)
            return
        assert not isinstance(content, bool)
        request.before[key] = content
        self.original.setdefault(key, content)

    def _read(self, key: str) -> bytes | bool | None:
        path = self.workspace / key
        if not path.exists():
            return None
        if not path.is_file() or path.stat().st_size > MAX_SNAPSHOT_BYTES:
            return False
        return path.read_bytes()

    def undo(self) -> list[str]:
        """Put the latest request's files back; the paths restored (or deleted)."""
        while self.requests and not (self.requests[-1].before or self.requests[-1].too_big):
            self.requests.pop()
        if not self.requests:
            raise UsageError("nothing to undo: bosun's file tools changed nothing yet")
        request = self.requests.pop()
        done = []
        for key, content in request.before.items():
            try:
                self._restore(key, content)
            except (OSError, ToolError) as exc:
                raise UsageError(f"cannot restore {key}: {exc}") from None
            done.append(key)
            if all(key not in t.before for t in self.requests):
                self.original.pop(key, None)
        return done

    def _restore(self, key: str, content: bytes | None) -> None:
        if content is None:
            with contextlib.suppress(FileNotFoundError):
                (self.workspace / key).unlink()
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        fd = open_in_workspace(self.workspace, key, flags, make_parents=True)
        with os.fdopen(fd, "wb") as out:
            out.write(content)

    def diff(self) -> str:
        """Unified diff of every touched file: as the session found it -> as it is now."""
        parts = []
        for key, before in sorted(self.original.items()):
            now = self._read(key)
            if now is False:
                parts.append(f"{key}: changed (too big or not a file now)\n")
                continue
            assert not isinstance(now, bool)
            if now == before:
                continue
            old = (before or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
            new = (now or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
            a = "/dev/null" if before is None else f"a/{key}"
            b = "/dev/null" if now is None else f"b/{key}"
            parts.append("".join(difflib.unified_diff(old, new, a, b)))
        return "".join(parts)
