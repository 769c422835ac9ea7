"""What a slash command is and what it may use of the REPL: apart from the commands
themselves, so a command kept in its own module (/rewind, /lint, /test) imports this
and not the table of all commands that imports it."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rich.console import Console

from agent.run.chat import ChatSession
from agent.ui.render import Renderer

__all__ = ["Command", "Handler", "Repl"]


class Repl(Protocol):
    """What a command may use of the REPL: the session, the screen, and the few REPL
    actions a command repeats (send, resume, load a model). The REPL class satisfies it;
    nothing here needs to know that class."""

    chat: ChatSession
    console: Console
    renderer: Renderer

    def say(self, message: str, style: str = "dim") -> None: ...
    def send(self, text: str) -> None: ...
    def resume(self, path: Path) -> None: ...
    def loading(self, model: str) -> AbstractContextManager[None]: ...
    def confirm_assembly(self, model: str) -> None: ...


Handler = Callable[[Repl, str], bool | None]


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    run: Handler
