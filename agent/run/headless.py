"""`bosun run`: one prompt, no screen needed; events out, an exit code that means something."""

from __future__ import annotations

import shutil
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from textwrap import indent

from agent import events as ev
from agent.errors import SessionWriteError
from agent.events import Status
from agent.history import ToolCall
from agent.run.assemble import Assembly, check_workspace, recording, start_session, trace_writer
from agent.run.output import SHORT, JsonlPrinter, TextPrinter
from agent.run.settings import Settings
from agent.session import SessionLog, new_session_id
from agent.tools import Tool, ToolContext, ToolRegistry
from agent.tools.checkpoints import Checkpoints
from agent.tools.permissions import Approval, Approver
from agent.untrusted import fold, one_line, visible


def terminal_approver(tools: ToolRegistry, workspace: Path) -> Approver:
    """Ask on the terminal, showing the diff a write or edit would make first."""

    def ask(call: ToolCall, tool: Tool) -> Approval:
        # the call itself was printed as it arrived (the event), each argument cut to a
        # line; the diff says the rest, or, where there is none, each argument that line
        # cut (a command padded with lines or spaces), folded to its start and its end
        preview = tools.preview(call, ToolContext(workspace))
        if preview:
            sys.stderr.write(visible(preview.rstrip("\n")) + "\n")
        else:
            width = max(40, shutil.get_terminal_size().columns - 4)
            for key, value in call.arguments.items():
                if isinstance(value, str) and ("\n" in value or len(repr(value)) > SHORT):
                    shown = indent(fold(value, width), "    ")
                    sys.stderr.write(f"  {one_line(key, width)}:\n{shown}\n")
        sys.stderr.write(f"Allow {visible(call.name)}? [y]es / [n]o / [a]lways: ")
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower()
        return {"y": "yes", "yes": "yes", "a": "always", "always": "always"}.get(answer, "no")

    return ask


def loading(model: str) -> AbstractContextManager[object]:
    """A spinner on stderr while a model loads (big GGUFs take seconds); silent in pipes."""
    if not sys.stderr.isatty():
        return nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(f"loading {model} …", spinner="dots")


def run_once(settings: Settings, prompt: str, *, attached: bool = False) -> int:
    """One request, start to exit code (the result's status says which). `attached`:
    the prompt carries piped text (`User.attached`)."""
    settings = settings.but(workspace=check_workspace(settings.workspace))
    trace = trace_writer(settings.trace) if settings.trace is not None else None
    printer: ev.Emit = JsonlPrinter() if settings.output == "jsonl" else TextPrinter()
    with Assembly.open(settings, loading=loading) as assembly:
        log = SessionLog(new_session_id())
        agent = assembly.agent(recording(lambda: log, printer), on_message=log.message, trace=trace)
        # `bosun checkpoints restore --session ID` puts back what the run changed
        agent.checkpoints = Checkpoints(
            settings.workspace, log.id, shell=True, max_mb=settings.checkpoint_max_mb
        )
        if sys.stdin.isatty() and sys.stderr.isatty():
            agent.approver = terminal_approver(agent.tools, settings.workspace)
        try:
            try:
                start_session(agent, log.id)
            except SessionWriteError as exc:  # before the loop: the result is still owed
                result = ev.RunFinished.of(Status.ERROR, error=str(exc))
                printer(result)
            else:
                with agent.cancel.on_sigint():
                    result = agent.run(prompt, attached=attached)
        finally:
            log.close()
    if settings.output == "jsonl" and result.status == Status.ERROR and result.error:
        # The result line says it for scripts; a person (a full disk, a server gone)
        # sees it on stderr too, as every failure of the command line is shown.
        sys.stderr.write(f"bosun: error: {visible(result.error)}\n")
    return result.exit_code
