"""The file tools through the editor (`fs/read_text_file`, `fs/write_text_file`), where
the client offers them: a buffer with unsaved changes is the file the person sees, and
a write the editor makes lands in that buffer instead of under it.

Only text passes here; every path has been confined to the workspace before it gets
here (agent.tools.confine), and the disk checks (regular file, no second hard link)
ran first, so an editor changes what bosun reads and writes, never where.
"""

from __future__ import annotations

from pathlib import Path

from agent.errors import ToolError
from agent.loop.cancel import Cancel
from agent.run.acp.outbox import Outbox
from agent.untrusted import visible

TIMEOUT_S = 30.0


class EditorFiles:
    """`agent.tools.registry.Editor` over an ACP client."""

    def __init__(self, outbox: Outbox, cancel: Cancel, *, read: bool, write: bool) -> None:
        self.outbox = outbox
        self.cancel = cancel
        self.can_read = read
        self.can_write = write

    def read_text(self, path: Path) -> str | None:
        if not self.can_read:
            return None
        conn, sid = self.outbox.conn, self.outbox.session_id
        try:
            response = self.outbox.ask(
                lambda: conn.read_text_file(session_id=sid, path=str(path)),
                self.cancel,
                TIMEOUT_S,
            )
        except KeyboardInterrupt:
            raise
        except Exception:  # the editor does not have it: the disk's text stands
            return None
        content = getattr(response, "content", None)
        return content if isinstance(content, str) else None

    def write_text(self, path: Path, text: str) -> bool:
        if not self.can_write:
            return False
        conn, sid = self.outbox.conn, self.outbox.session_id
        try:
            self.outbox.ask(
                lambda: conn.write_text_file(session_id=sid, path=str(path), content=text),
                self.cancel,
                TIMEOUT_S,
            )
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            why = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise ToolError(f"the editor could not write {path.name}: {visible(why)}") from None
        return True
