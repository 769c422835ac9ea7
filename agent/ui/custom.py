"""Custom commands (agent.run.custom_commands) as REPL commands: each sends its
expansion as a message, so @file mentions in it attach and the approval mode applies as
to anything typed. Built-in commands win: one of the same name is left out (and /help
says so)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import Protocol

from agent.run.custom_commands import CustomCommand, find_commands


class Sends(Protocol):
    def send(self, text: str) -> None: ...


Entry = tuple[str, str, Callable[[Sends, str], None]]  # "/name", help, handler


def custom_entries(workspace: Path | None, builtins: Collection[str]) -> list[Entry]:
    """Read afresh on each use: a file added mid-session counts from the next line."""
    out: list[Entry] = []
    for name, custom in find_commands(workspace).items():
        if f"/{name}" in builtins:
            continue
        hint = f" {custom.argument_hint}" if custom.argument_hint else ""
        about = custom.description or f"({custom.origin} command)"
        out.append((f"/{name}", f"{about}{hint} [{custom.origin}]", _sender(custom)))
    return out


def hidden(workspace: Path | None, builtins: Collection[str]) -> list[str]:
    """The custom commands a built-in of the same name hides."""
    return [f"/{name}" for name in find_commands(workspace) if f"/{name}" in builtins]


def _sender(custom: CustomCommand) -> Callable[[Sends, str], None]:
    def send(repl: Sends, arg: str) -> None:
        repl.send(custom.expand(arg))

    return send
