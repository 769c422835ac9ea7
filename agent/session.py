"""Append-only JSONL transcripts.

Every line is written and flushed as it happens, so a crash (even a native segfault in
the model backend) loses at most the line being written; the loader skips a torn last
line. Messages are stored in `agent.history`'s JSON form, so resuming rebuilds the
structured history exactly.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import IO, Any

from agent.events import AgentEvent
from agent.history import Message, message_from_dict, message_to_dict


def bosun_home() -> Path:
    """bosun's data folder: $BOSUN_HOME, else the platform's user data dir."""
    env = os.environ.get("BOSUN_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("bosun", appauthor=False))


def sessions_dir() -> Path:
    return bosun_home() / "sessions"


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


class SessionLog:
    """One session's transcript file, opened for appending."""

    def __init__(self, session_id: str, directory: Path | None = None) -> None:
        self.id = session_id
        folder = directory if directory is not None else sessions_dir()
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{session_id}.jsonl"
        self._fh: IO[str] | None = self.path.open("a", encoding="utf-8")

    def _write(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            return
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()

    def message(self, message: Message) -> None:
        self._write({"type": "message", "message": message_to_dict(message)})

    def event(self, event: AgentEvent) -> None:
        if event.type in ("text", "reasoning"):
            return  # deltas are reconstructable from messages; keep files small
        self._write(event.to_dict())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def load_messages(path: Path) -> list[Message]:
    """The structured history stored in a session file; a torn last line is skipped."""
    messages: list[Message] = []
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if i >= len(lines) - 2:
                break  # torn final line from a crash: everything before it is intact
            raise
        if isinstance(record, dict) and record.get("type") == "message":
            messages.append(message_from_dict(record.get("message")))
    return messages
