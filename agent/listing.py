"""Read-only commands: what models are here, what a prompt looks like, past sessions."""

from __future__ import annotations

import json
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


def render_command(model: str, session_id: str | None, messages_file: Path | None) -> str:
    if (session_id is None) == (messages_file is None):
        raise UsageError("give exactly one of --session ID or --messages FILE.json")
    if messages_file is not None:
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
    folder = sessions_dir()
    rows = []
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        first: dict[str, str] = {}
        prompt = ""
        with path.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if record.get("type") == "session" and not first:
                    first = record
                msg = record.get("message") or {}
                if record.get("type") == "message" and msg.get("kind") == "user":
                    prompt = str(msg.get("content", ""))
                    break
        rows.append(
            {
                "id": path.stem,
                "model": str(first.get("model", "")),
                "workspace": str(first.get("workspace", "")),
                "prompt": prompt.replace("\n", " ")[:60],
            }
        )
    return rows
