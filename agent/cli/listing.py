"""Read-only commands' heavy halves (profiles, templates): what models are here, what a
prompt looks like. Imported only when such a command runs, so `bosun --help` stays instant."""

from __future__ import annotations

from pathlib import Path

from agent.errors import UsageError
from agent.history import Message
from agent.protocol.gguf import GGUFError
from agent.protocol.profile import bundled_models, profile_for
from agent.protocol.render import read_messages_json, render_for_model
from agent.session import session_history
from agent.tools import default_registry


def models_rows(extra: list[str]) -> list[dict[str, str]]:
    """One row per GGUF path given, or per bundled model (installed or not)."""
    rows = []
    for name, path in () if extra else bundled_models().items():
        row = profile_for(name).summary()
        row["size"] = f"{path.stat().st_size / 1e6:.0f} MB" if path else "not installed"
        rows.append(row)
    for spec in extra:
        if spec.lower().startswith("openai:"):
            rows.append(served_row(spec))
            continue
        if not Path(spec).is_file():
            raise UsageError(f"model file not found: {spec}")
        try:
            row = profile_for(spec).summary()
        except GGUFError as exc:
            raise UsageError(f"cannot read model {spec}: {exc}") from None
        row["size"] = f"{Path(spec).stat().st_size / 1e6:.0f} MB"
        rows.append(row)
    return rows


def served_row(spec: str) -> dict[str, str]:
    """A served model's row: its profile (from its name) and what the server says of
    its window, where that came from, its kind and its parallel slots."""
    from drivers.openai_http import open_openai

    driver = open_openai(spec)
    try:
        info = driver.info
        row = profile_for(spec).summary()
        row["size"] = "served"
        row["server"] = info.server or "unknown"
        row["context"] = f"{info.n_ctx:,}" if info.n_ctx else "unknown"
        row["context_source"] = info.context_source or "the server does not say"
        slots = driver.server.slots if driver.server is not None else None
        row["slots"] = str(slots) if slots else "unknown"
        return row
    finally:
        driver.close()


NEW_TASK = "(your task)"


def render_command(
    model: str, session_id: str | None, messages_file: Path | None, workspace: Path | None = None
) -> str:
    """A session's or a messages file's prompt; with neither, the first prompt a new
    session in `workspace` would send (system prompt, tools, a placeholder task)."""
    if session_id is not None and messages_file is not None:
        raise UsageError("give one of --session ID or --messages FILE.json, not both")
    if session_id is None and messages_file is None:
        from agent.history import User
        from agent.run.system_prompt import system_message

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
