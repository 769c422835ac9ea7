"""`bosun chat`: the read-eval-print loop around a ChatSession."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from agent import events as ev
from agent.chat import ChatSession
from agent.config import Config, resolve
from agent.errors import DriverError, UsageError
from agent.headless import check_workspace
from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    System,
    ToolCall,
    ToolResult,
    User,
)
from agent.listing import session_path
from agent.mcp.servers import ServerSpec
from agent.permissions import Approval, Decline
from agent.session import bosun_home, latest_session, load_session
from agent.tools import Tool
from agent.tools.sandbox import SandboxPolicy, resolve_sandbox
from agent.ui import commands
from agent.ui.diff import preview_diff
from agent.ui.input import Input, SlashCompleter
from agent.ui.render import Renderer
from agent.untrusted import visible

REPLAY_MESSAGES = 6
_ANSWERS: dict[str, Approval] = {"y": "yes", "yes": "yes", "n": "no", "no": "no"}
_ANSWERS.update({"a": "always", "always": "always"})


@contextlib.contextmanager
def no_echo() -> Iterator[None]:
    """Keys typed while the model streams are not echoed: the tty's "^C" (or any typed
    character) would land inside the live region and leave a duplicated line behind."""
    try:
        import termios

        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError):
        yield
        return
    quiet = termios.tcgetattr(fd)
    quiet[3] &= ~(termios.ECHO | termios.ECHOCTL)
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


def _short(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


class Repl:
    """Owns the screen: input, rendering, and the dispatch of slash commands."""

    def __init__(
        self,
        console: Console,
        config: Config,
        workspace: Path,
        show_reasoning: bool,
        sandbox: SandboxPolicy | None = None,
        allow_workspace_mcp: bool = False,
    ):
        self.console = console
        self.renderer = Renderer(console, self._preview, show_reasoning)
        self.say(f"loading {config.model} …")
        self.chat = ChatSession(
            config,
            workspace,
            self.renderer,
            self.approve,
            sandbox,
            ask_server=self.ask_server,
            allow_workspace_mcp=allow_workspace_mcp,
            report=lambda line: self.say(line, "yellow"),
        )
        self.renderer.stop_requested = lambda: self.chat.agent.cancel.is_set()
        completer = SlashCompleter(
            {name: c.help for name, c in commands.COMMANDS.items()},
            commands.argument_sources(self),
        )
        self.input = Input(bosun_home() / "input_history", completer, self.status_line)

    def say(self, message: str, style: str = "dim") -> None:
        self.console.print(Text(message, style=style))

    def _preview(self, name: str, arguments: dict[str, object]) -> str | None:
        return preview_diff(name, dict(arguments), self.chat.tools, self.chat.workspace)

    def status_line(self) -> str:
        """Model, context used / size, speed, cache hits: one line, under 80 columns."""
        s = self.chat.stats
        size = self.chat.context_size
        model = self.chat.driver.model
        model = model if len(model) <= 24 else "…" + model[-23:]
        cached = _short(s.last.cached_tokens) if s.last else "0"
        return (
            f" {model} │ ctx {_short(s.context_used)}/{_short(size) if size else '?'}"
            f" │ {s.tokens_per_s:.0f} tok/s │ cached {cached} │ {self.chat.agent.approve} "
        )

    def ask_server(self, spec: ServerSpec) -> bool:
        """Once per workspace and command line: a server the repository names runs a
        program of its choosing, so the user sees exactly which before it starts."""
        self.say(f"{spec.source} names an MCP server {spec.name!r}:", "yellow")
        self.console.print(Text("  " + visible(spec.describe())))
        try:
            answer = self.console.input("Start it (remembered for this command)? [y/N] ")
        except EOFError:
            return False
        return answer.strip().lower() in ("y", "yes")

    def approve(self, call: ToolCall, tool: Tool) -> Approval:
        self.renderer.finish_stream()  # no spinner under the question
        question = f"Allow {call.name}? [y]es / [n]o / [a]lways for this tool: "
        while True:
            answer = _ANSWERS.get(self.input.ask(question).strip().lower())
            if answer == "no":  # the turn ends; what to do instead goes to the model
                reason = self.input.ask("What should it do instead? (Enter: just stop) ")
                return Decline(reason)
            if answer is not None:
                return answer
            self.say("answer y, n or a")

    def resume(self, path: Path) -> None:
        stored = self.chat.resume(path)
        if stored.model and stored.model != self.chat.driver.model:
            self.say(
                f"this session ran with {stored.model}; continuing with {self.chat.driver.model}"
            )
        self.replay(stored.messages)

    def replay(self, messages: list[Message]) -> None:
        """The end of a resumed conversation, so the user sees where it stands."""
        shown = [m for m in messages if not isinstance(m, System)][-REPLAY_MESSAGES:]
        self.say(f"resumed: {len(messages)} messages; the last {len(shown)}:")
        for message in shown:
            if isinstance(message, User):
                self.console.print(Text("> " + visible(message.content), style="bold"))
            elif isinstance(message, Assistant):
                self.console.print(Markdown(visible(message.content)))
            elif isinstance(message, AssistantToolUse):
                c = message.call
                call = ev.ToolCallEvent(c.id, c.name, c.arguments, c.salvaged)
                self.renderer.tool_call(call, preview=False)
            elif isinstance(message, ToolResult):
                self.renderer.tool_result(
                    ev.ToolResultEvent(message.call_id, message.is_error, message.content)
                )

    def command(self, text: str) -> bool:
        name, _, arg = text.strip().partition(" ")
        return bool(commands.find(name).run(self, arg.strip()))

    def loop(self) -> int:
        armed = False  # one Ctrl-C at an empty prompt arms exit, the second exits
        while True:
            try:
                text = self.input.read()
            except KeyboardInterrupt:
                if armed:
                    return 0
                armed = True
                self.say("(Ctrl-C again or Ctrl-D to exit)")
                continue
            except EOFError:
                return 0
            armed = False
            if not text.strip():
                continue
            try:
                if text.startswith("/"):
                    if self.command(text):
                        return 0
                else:
                    self.renderer.waiting()
                    with no_echo():
                        try:
                            self.chat.send(text)
                        finally:
                            self.renderer.finish_stream()
            except (UsageError, DriverError) as exc:
                self.renderer.finish_stream()
                self.say(f"error: {exc}", style="red")
            except Exception as exc:
                if os.environ.get("BOSUN_DEBUG"):
                    raise
                self.renderer.finish_stream()
                self.say(f"internal error: {type(exc).__name__}: {exc}", style="red")

    def close(self) -> None:
        self.renderer.finish_stream()
        self.chat.close()


def chat_command(
    model: str | None,
    workspace: Path | None,
    approve: str | None,
    resume: str | None,
    continue_: bool,
    show_reasoning: bool,
    constrain: str | None,
    context_size: int | None = None,
    *,
    sandbox: str | None = None,
    allow_net: bool | None = None,
    allow_git_writes: bool | None = None,
    allow_workspace_mcp: bool = False,
) -> int:
    """Run the REPL until the user leaves; the exit code (0) for `bosun chat`."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("bosun chat needs a terminal; for scripts use bosun run")
    if resume and continue_:
        raise UsageError("give --resume ID or --continue, not both")
    ws = check_workspace(workspace if workspace is not None else Path.cwd())
    path: Path | None = None
    if resume:
        path = session_path(resume)
        try:
            stored_ws = load_session(path).workspace
        except ValueError as exc:
            raise UsageError(f"session {resume} is damaged: {exc}") from None
        if workspace is None and stored_ws and Path(stored_ws).is_dir():
            ws = Path(stored_ws)  # its settings apply, as they did when it ran
    elif continue_:
        path = latest_session(ws)
        if path is None:
            raise UsageError(f"no earlier session in {ws}; start one with 'bosun chat'")
    config = resolve(
        ws,
        model=model,
        approve=approve,
        constrain=constrain,
        context_size=context_size,
        sandbox=sandbox,
        allow_net=allow_net,
        allow_git_writes=allow_git_writes,
    )
    policy = resolve_sandbox(
        config.sandbox,
        allow_net=config.allow_net,
        allow_git_writes=config.allow_git_writes,
        read_only=config.sandbox_read,
    )
    console = Console(highlight=False)
    repl = Repl(console, config, ws, show_reasoning, policy, allow_workspace_mcp)
    try:
        if path is not None:
            repl.resume(path)
        else:
            repl.chat.start_new()
        repl.say("/help lists commands · Enter sends · Esc-Enter new line")
        return repl.loop()
    finally:
        repl.close()
