"""Read-only commands: what models are here, what a prompt looks like, past sessions."""

from __future__ import annotations

import json
import time
from pathlib import Path

from agent.errors import UsageError
from agent.gguf import GGUFError
from agent.history import Message
from agent.profile import bundled_models, profile_for
from agent.prompt import read_messages_json, render_for_model
from agent.session import load_messages, sessions_dir
from agent.tools import default_registry


def models_rows(extra: list[str]) -> list[dict[str, str]]:
    """One row per GGUF path given, or per bundled model (installed or not)."""
    rows = []
    for name, path in () if extra else bundled_models().items():
        row = profile_for(name).summary()
        row["size"] = f"{path.stat().st_size / 1e6:.0f} MB" if path else "not installed"
        rows.append(row)
    for spec in extra:
        if not Path(spec).is_file():
            raise UsageError(f"model file not found: {spec}")
        try:
            row = profile_for(spec).summary()
        except GGUFError as exc:
            raise UsageError(f"cannot read model {spec}: {exc}") from None
        row["size"] = f"{Path(spec).stat().st_size / 1e6:.0f} MB"
        rows.append(row)
    return rows


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


NEW_TASK = "(your task)"


def render_command(
    model: str, session_id: str | None, messages_file: Path | None, workspace: Path | None = None
) -> str:
    """A session's or a messages file's prompt; with neither, the first prompt a new
    session in `workspace` would send (system prompt, tools, a placeholder task)."""
    if session_id is not None and messages_file is not None:
        raise UsageError("give one of --session ID or --messages FILE.json, not both")
    if session_id is None and messages_file is None:
        from agent.assemble import system_message
        from agent.history import User

        history: list[Message] = [
            system_message(workspace or Path.cwd()),
            User(NEW_TASK),
        ]
    elif messages_file is not None:
        try:
            history = read_messages_json(messages_file)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    else:
        history = session_history(str(session_id))
    try:
        return render_for_model(model, history, default_registry().specs())
    except GGUFError as exc:
        raise UsageError(f"cannot read model {model}: {exc}") from None


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
