"""`/lint` and `/test` in chat: the lint/test loop's checks (agent.loop.checks) on
demand. What they find is shown, and, where it failed, waits in `pending` to go with
the next message, as a `!command`'s output does: the user decides when the model
hears of it.
"""

from __future__ import annotations

import shlex
from typing import Protocol

from rich.console import Console
from rich.text import Text

from agent.errors import UsageError
from agent.loop.checks import Checks, edited_files
from agent.run.chat import ChatSession
from agent.tools.checks import CheckCmd, refused
from agent.tools.permissions import decision
from agent.transcript import fence
from agent.untrusted import visible


class Screen(Protocol):
    chat: ChatSession
    console: Console

    def say(self, message: str, style: str = "dim") -> None: ...


def _checks(chat: ChatSession) -> Checks:
    if chat.agent.checks is None:  # set by the assembly for every chat
        chat.agent.checks = Checks()
    return chat.agent.checks


def lint(repl: Screen, arg: str) -> None:
    """`/lint [FILE…]`: the named files, or every file the model edited this session."""
    chat = repl.chat
    checks = _checks(chat)
    try:
        named = shlex.split(arg)
    except ValueError as exc:
        raise UsageError(f"/lint FILE…: {exc}") from None
    files = named or sorted(checks.touched)
    if not files:
        raise UsageError("nothing to lint yet: /lint FILE…, or once the model has edited files")
    found = edited_files(chat.workspace, files)
    if len(found) < len(files):
        gone = sorted(set(files) - set(found))
        repl.say("not files in the workspace: " + ", ".join(visible(f) for f in gone), "yellow")
    if not found:
        return
    agent = chat.agent
    report = checks.lint(found, chat.workspace, agent.gate, agent.emit)
    if report.ok:
        return
    repl.console.print(Text(visible(report.text())))
    chat.pending.append(
        f"I ran the linter on {', '.join(report.files)}; it reports:\n{fence(report.text())}"
    )
    repl.say("(the model sees this with your next message)")


def test(repl: Screen, arg: str) -> None:
    """`/test [CMD]`: the test command (or CMD, typed here: the user's own), under bash's
    sandbox; read-only mode runs no command, as with `!command`."""
    chat = repl.chat
    agent = chat.agent
    checks = _checks(chat)
    if decision(agent.approve, "shell", sandboxed=agent.sandbox is not None) == "deny":
        raise UsageError(f"approve mode {agent.approve}: /test runs no command")
    command = CheckCmd(arg, "user") if arg else checks.test_cmd
    if command is None:
        raise UsageError("no test command: /test CMD, test_cmd in config.toml, or --test-cmd")
    why = refused(command, agent.approve, agent.sandbox)
    if why is not None:
        raise UsageError(f"test_cmd {why}")
    repl.say(f"running {visible(command.command)} …")
    try:
        ran = checks.test(command, chat.workspace, agent.gate, agent.emit, 0)
    except KeyboardInterrupt:  # the runner has killed the command and its children
        repl.say("stopped", "yellow")
        return
    if ran is None or ran.ok:
        return
    repl.console.print(Text(visible(ran.output or "(no output)")))
    chat.pending.append(
        f"I ran the tests (`{ran.command}`); they {ran.said(checks.test_timeout)}:\n"
        + fence(ran.output or "(no output)")
    )
    repl.say("(the model sees this with your next message)")
