"""The read-only commands: `bosun models`, `render` and `sessions`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import ConfigModelOpt, WorkspaceOpt, table


def models(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="GGUF files, or openai:URL#MODEL served models, to inspect."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Bundled models, or each given GGUF's (or served model's) resolved profile:
    template, tool format, reasoning markers, wire remap and every adaptation bosun
    makes, with its reason; for a served model, the context its server gives and where
    that was read."""
    from agent.cli.listing import models_rows
    from agent.untrusted import visible

    rows = models_rows(paths or [])
    if json_out:  # JSON escapes control characters itself
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    # Names, markers and stops come from the model file: shown, never sent as escapes.
    rows = [{key: visible(value) for key, value in row.items()} for row in rows]
    if paths:
        for row in rows:
            width = max(map(len, row))
            for key, value in row.items():
                typer.echo(f"{key:<{width}}  {value}")
            typer.echo("")
        return
    cols = ["model", "size", "template", "tool_format", "reasoning", "wire_remap", "path"]
    table(rows, cols)


def render(
    model: ConfigModelOpt = None,
    session: Annotated[str | None, typer.Option(help="Render this session's history.")] = None,
    messages: Annotated[
        Path | None, typer.Option(help="Render a JSON list of messages (history format).")
    ] = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Print the exact prompt a model would be sent (wire form where it applies); with no
    --session or --messages, the first prompt of a new session in this folder."""
    from agent.cli.listing import render_command
    from agent.run.config import settings_for

    chosen = settings_for(workspace, {"model": model}).model  # as `run` and `chat` choose
    prompt = render_command(chosen, session, messages, workspace)
    if sys.stdout.isatty():  # the model file's template wrote it: shown, not run
        from agent.untrusted import visible

        prompt = visible(prompt)
    sys.stdout.write(prompt)


sessions_app = typer.Typer(help="Past sessions (append-only JSONL files).", no_args_is_help=True)


@sessions_app.command("list")
def sessions_list() -> None:
    """List saved sessions, oldest first."""
    from agent.session import sessions_rows

    table(sessions_rows(), ["id", "when", "model", "status", "workspace", "prompt"])


@sessions_app.command("show")
def sessions_show(
    session_id: Annotated[str, typer.Argument(help="Session id (or prefix).")],
    as_json: Annotated[
        bool, typer.Option("--json", help="The structured history, one JSON message a line.")
    ] = False,
) -> None:
    """Print a session as a Markdown transcript (--json: its structured history)."""
    from agent.history import message_to_dict
    from agent.session import session_history

    history = session_history(session_id)
    if not as_json:
        from agent.transcript import transcript

        typer.echo(transcript(history), nl=False)
        return
    for message in history:
        typer.echo(json.dumps(message_to_dict(message), ensure_ascii=False))
