"""Append-only JSONL transcripts, and reading them back for `--resume` / `--continue`.

Every line is written and flushed as it happens (so before each model call and after
each tool result), and a crash (even a native segfault in the model backend, or kill -9)
loses at most the line being written: the OS keeps what was flushed, and the loader skips
a torn last line. Messages are stored in `agent.history`'s JSON form, so resuming
rebuilds the structured history exactly, and re-rendering it gives the same prompt.

File format (stable; older files stay readable): one JSON object per line,
`{"type": "session", "id", "model", "workspace"}` first (again after a resume or a model
switch), `{"type": "message", "message": {...}}` for each history message, and the
agent's other events (`tool_call`, `tool_result`, `turn`, `result`, ...) in between.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from agent import untrusted
from agent.errors import SessionWriteError, UsageError
from agent.events import AgentEvent
from agent.history import (
    AssistantToolUse,
    Message,
    ToolCall,
    ToolResult,
    message_from_dict,
    message_to_dict,
)

PICK = "?"  # `chat --resume` with no ID: pick one of this folder's sessions


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


def drop_torn_tail(path: Path) -> None:
    """Make `path` end at a line boundary before appending to it again.

    Without this, the first line written after a crash would be glued onto the torn
    fragment and the damage would move from the (tolerated) last line to the middle.
    A fragment that is in fact a whole JSON object only lacks its newline, so it stays.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return
    with path.open("rb+") as fh:
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n":
            return
        fh.seek(0)
        data = fh.read()
        start = data.rfind(b"\n") + 1
        try:
            untrusted.loads(data[start:].decode("utf-8"))
        except ValueError:  # torn, undecodable or absurdly deep: not a record
            fh.truncate(start)
        else:
            fh.seek(0, os.SEEK_END)
            fh.write(b"\n")


class SessionLog:
    """One session's transcript file, opened for appending (a resumed session appends
    to its old file, so one id names one conversation however often it is continued)."""

    def __init__(self, session_id: str, directory: Path | None = None) -> None:
        self.id = session_id
        folder = directory if directory is not None else sessions_dir()
        self.path = folder / f"{session_id}.jsonl"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            drop_torn_tail(self.path)
            self._fh: IO[str] | None = self.path.open("a", encoding="utf-8")
        except OSError as exc:  # BOSUN_HOME is a file, unwritable, on a full disk …
            raise UsageError(
                f"cannot write sessions in {folder}: {exc.strerror or exc} "
                "(set BOSUN_HOME to a writable folder)"
            ) from None
        self.failed = ""

    def _write(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            return
        try:
            # One write per line: a kill between two lines never tears either of them.
            self._fh.write(untrusted.json_line(record) + "\n")
            self._fh.flush()
        except OSError as exc:
            # Say it once, then stop writing: the run ends as an error, with its result.
            self.failed = f"cannot write the session file {self.path}: {exc.strerror or exc}"
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None
            raise SessionWriteError(self.failed) from None

    def message(self, message: Message) -> None:
        self._write({"type": "message", "message": message_to_dict(message)})

    def event(self, event: AgentEvent) -> None:
        if event.type in ("text", "reasoning") or event.transient:
            return  # deltas are reconstructable from messages; keep files small
        self._write(event.to_dict())

    def close(self) -> None:
        if self._fh is not None:
            with contextlib.suppress(OSError):  # a full disk was reported when it happened
                self._fh.close()
            self._fh = None


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every complete record in a session file; a torn last line is skipped.

    Only the last line may be torn (the writer appends whole lines and repairs the tail
    before appending again), so damage anywhere else is reported, not skipped.
    """
    records: list[dict[str, Any]] = []
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = untrusted.loads(line)
        except ValueError as exc:
            if i == last:
                break  # torn final line from a crash: everything before it is intact
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise ValueError(f"{path.name}: line {i + 1} is not valid JSON ({why})") from None
        if isinstance(record, dict):
            records.append(record)
    return records


def load_messages(path: Path) -> list[Message]:
    """The structured history stored in a session file; a torn last line is skipped."""
    return _replay(read_records(path))[0]


def _replay(records: list[dict[str, Any]]) -> tuple[list[Message], list[dict[str, Any]]]:
    """Messages and compaction records in order, a `rewind` record cutting both back."""
    messages: list[Message] = []
    compactions: list[dict[str, Any]] = []
    for record in records:
        kind = record.get("type")
        if kind == "message":
            messages.append(message_from_dict(record.get("message")))
        elif kind == "compaction":
            compactions.append(record)
        elif kind == "rewind":
            keep = record.get("keep")
            if isinstance(keep, int) and not isinstance(keep, bool) and keep >= 0:
                del messages[keep:]
                compactions.clear()  # they counted messages that are gone
    return messages, compactions


@dataclass
class StoredSession:
    """What a session file says: its id, where and with what it ran, its history."""

    id: str
    path: Path
    model: str = ""
    workspace: str = ""
    messages: list[Message] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)  # to rebuild the view
    plan: dict[str, Any] | None = None  # the last `plan` record: the plan as it stood


def load_session(path: Path) -> StoredSession:
    records = read_records(path)
    first = next((r for r in records if r.get("type") == "session"), {})
    messages, compactions = _replay(records)
    return StoredSession(
        id=str(first.get("id") or path.stem),
        path=path,
        model=str(first.get("model", "")),
        workspace=str(first.get("workspace", "")),
        messages=messages,
        compactions=compactions,
        plan=next((r for r in reversed(records) if r.get("type") == "plan"), None),
    )


def _workspace_of(path: Path) -> str | None:
    """The workspace named by the file's first record (cheap: reads one line)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            record = untrusted.loads(fh.readline())
    except (OSError, ValueError):
        return None
    if isinstance(record, dict) and record.get("type") == "session":
        return str(record.get("workspace", ""))
    return None


def latest_session(workspace: Path, directory: Path | None = None) -> Path | None:
    """The most recently written session of `workspace` (what `--continue` resumes).

    Recency is the file's modification time, not its id, so a resumed old session
    counts as recent: `--continue` means "where I left off", not "the newest id".
    """
    folder = directory if directory is not None else sessions_dir()
    if not folder.is_dir():
        return None
    want = str(workspace.resolve())
    mine = [p for p in folder.glob("*.jsonl") if _workspace_of(p) == want]
    if not mine:
        return None
    return max(mine, key=lambda p: (p.stat().st_mtime_ns, p.name))


# What a resumed session answers such a call with (chat's --resume, ACP's session/load)
LOST_CALL = (
    "Error: bosun stopped before this call finished; its effect is unknown,"
    " so check before repeating it"
)


def unanswered_calls(messages: list[Message]) -> list[ToolCall]:
    """Tool calls with no result: the process died (or was stopped hard) while they ran.

    A resumed history must answer them, or the next prompt would show the model a call
    that never returned.
    """
    answered = {m.call_id for m in messages if isinstance(m, ToolResult)}
    return [
        m.call for m in messages if isinstance(m, AssistantToolUse) and m.call.id not in answered
    ]


_CALL_NUMBER = re.compile(r"^(?:call|salvage)[_-](\d+)$")


def last_call_number(messages: list[Message]) -> int:
    """The highest N in `call_N`/`salvage-N` ids, so a resumed agent keeps ids unique."""
    numbers = [
        int(m.group(1))
        for msg in messages
        if isinstance(msg, AssistantToolUse) and (m := _CALL_NUMBER.match(msg.call.id))
    ]
    return max(numbers, default=0)


def session_path(session_id: str) -> Path:
    folder = sessions_dir()
    exact = folder / f"{session_id}.jsonl"
    if exact.is_file():
        return exact
    matches = sorted(folder.glob(f"{session_id}*.jsonl")) if folder.is_dir() else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UsageError(f"no session {session_id!r} (see 'bosun sessions list')")
    raise UsageError(f"session id {session_id!r} is ambiguous: {len(matches)} sessions match")


def session_history(session_id: str) -> list[Message]:
    try:
        return load_messages(session_path(session_id))
    except ValueError as exc:
        raise UsageError(f"session {session_id} is damaged: {exc}") from None


def sessions_rows() -> list[dict[str, str]]:
    """One row per session file, oldest first: id, when it was last written, model,
    workspace, how its latest request ended, its first prompt."""
    folder = sessions_dir()
    rows = []
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        first: dict[str, str] = {}
        prompt = status = ""
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if not isinstance(record, dict):
                    continue
                kind = record.get("type")
                if kind == "session" and not first:
                    first = record
                elif kind == "result":
                    status = str(record.get("status", ""))
                msg = record.get("message") or {}
                if kind == "message" and isinstance(msg, dict) and msg.get("kind") == "user":
                    prompt = prompt or str(msg.get("content", ""))
        try:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))
        except OSError:
            when = ""
        rows.append(
            {
                "id": path.stem,
                "when": when,
                "model": str(first.get("model", "")),
                "workspace": str(first.get("workspace", "")),
                "status": status,
                "prompt": prompt.replace("\n", " ")[:60],
            }
        )
    return rows
