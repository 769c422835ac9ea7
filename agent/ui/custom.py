"""Custom commands (agent.run.custom_commands) as REPL commands: each sends its
expansion as a message, so @file mentions in it attach and the approval mode applies as
to anything typed. Built-in commands win: one of the same name is left out (and /help
says so)."""

from __future__ import annotations

from pathlib import Path

from agent.run.custom_commands import CustomCommand, find_commands
from agent.ui.commands import COMMANDS, Command, Handler, Repl


def custom_commands(workspace: Path | None) -> dict[str, Command]:
    """Read afresh on each use: a file added mid-session counts from the next line."""
    out: dict[str, Command] = {}
    for name, custom in find_commands(workspace).items():
        if f"/{name}" in COMMANDS:
            continue
        hint = f" {custom.argument_hint}" if custom.argument_hint else ""
        about = custom.description or f"({custom.origin} command)"
        out[f"/{name}"] = Command(f"/{name}", f"{about}{hint} [{custom.origin}]", _sender(custom))
    return out


def hidden(workspace: Path | None) -> list[str]:
    """The custom commands a built-in of the same name hides."""
    return [f"/{name}" for name in find_commands(workspace) if f"/{name}" in COMMANDS]


def _sender(custom: CustomCommand) -> Handler:
    def send(repl: Repl, arg: str) -> None:
        repl.send(custom.expand(arg))

    return send
