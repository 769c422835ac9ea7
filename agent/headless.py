"""`bosun run`: one prompt, no screen needed; events out, an exit code that means something."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.constraint import constraint_for
from agent.errors import SessionWriteError, ToolError, UsageError
from agent.gguf import GGUFError
from agent.history import System, ToolCall
from agent.output import JsonlPrinter, TextPrinter
from agent.profile import ModelProfile, profile_for
from agent.prompt import system_prompt
from agent.runtime import Agent, Approval, Approver, Budget
from agent.session import SessionLog, new_session_id
from agent.tools import Tool, ToolContext, ToolRegistry, default_registry
from agent.tools.confine import open_in_workspace
from agent.tools.sandbox import SandboxPolicy
from agent.untrusted import json_line, visible
from drivers import open_driver
from drivers.base import Driver

EXIT_CODES = {"done": 0, "error": 1, "max_turns": 3, "stuck": 3, "interrupted": 130}


@dataclass
class RunOptions:
    prompt: str
    model: str
    workspace: Path
    output: str = "text"
    max_turns: int = 30
    approve: str = "ask"
    constrain: str = "auto"
    trace: Path | None = None
    wire: str | None = None
    ablate: frozenset[str] = frozenset()
    sandbox: SandboxPolicy | None = None  # bash in bubblewrap (the CLI resolves --sandbox)


def check_workspace(path: Path) -> Path:
    if not path.exists():
        raise UsageError(f"workspace does not exist: {path}")
    if not path.is_dir():
        raise UsageError(f"workspace is not a directory: {path}")
    return path.resolve()


def trace_writer(path: Path) -> Callable[[dict[str, Any]], None]:
    """Append one JSON line per model call; the file is opened per write so a crash
    leaves every completed call on disk."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.open("a", encoding="utf-8").close()
    except OSError as exc:
        raise UsageError(f"cannot write trace file {path}: {exc.strerror}") from None

    def write(record: dict[str, Any]) -> None:
        try:
            with path.open("a", encoding="utf-8") as fh:
                fh.write(json_line(record) + "\n")
        except OSError as exc:  # a full disk: the run ends as an error, with its result
            raise SessionWriteError(
                f"cannot write the trace file {path}: {exc.strerror or exc}"
            ) from None

    return write


def terminal_approver(tools: ToolRegistry, workspace: Path) -> Approver:
    """Ask on the terminal, showing the diff a write or edit would make first."""

    def ask(call: ToolCall, tool: Tool) -> Approval:
        preview = tools.preview(call, ToolContext(workspace))
        if preview:
            sys.stderr.write(visible(preview.rstrip("\n")) + "\n")
        args = visible(json_line(call.arguments))
        sys.stderr.write(f"Allow {visible(call.name)} {args}? [y]es / [n]o / [a]lways: ")
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower()
        return {"y": "yes", "yes": "yes", "a": "always", "always": "always"}.get(answer, "no")

    return ask


MAX_INSTRUCTIONS_BYTES = 16_000


def project_instructions(workspace: Path) -> tuple[str, str]:
    """AGENTS.md (or BOSUN.md), opened like any workspace file: a symlink out of the
    workspace, a FIFO or a device is skipped, and at most 16 kB are read, however large
    the file claims to be. It is repository content, so it goes into the prompt as data."""
    for name in ("AGENTS.md", "BOSUN.md"):
        try:
            fd = open_in_workspace(workspace, name, os.O_RDONLY | os.O_NONBLOCK)
        except (ToolError, OSError):
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            data = os.read(fd, MAX_INSTRUCTIONS_BYTES + 1)
        except OSError:
            continue
        finally:
            os.close(fd)
        text = data[:MAX_INSTRUCTIONS_BYTES].decode("utf-8", errors="replace")
        if len(data) > MAX_INSTRUCTIONS_BYTES:
            text += f"\n(… {name} is longer than {MAX_INSTRUCTIONS_BYTES} bytes; the rest is cut)"
        return text, name
    return "", "AGENTS.md"


def build_agent(
    driver: Driver,
    profile: ModelProfile,
    workspace: Path,
    emit: ev.Emit,
    session: SessionLog,
    *,
    budget: Budget,
    approve: str,
    constrain: str,
    approver: Approver | None = None,
    trace: Callable[[dict[str, Any]], None] | None = None,
    ablate: frozenset[str] = frozenset(),
    sandbox: SandboxPolicy | None = None,
) -> Agent:
    """The Agent behind `bosun run` and behind each `--tasks` task, built in one place so
    the two cannot drift apart. The caller emits SessionStarted, then adds
    `system_message(workspace)`, so the session file starts with the session line."""
    tools = default_registry()
    return Agent(
        driver=driver,
        tools=tools,
        workspace=workspace,
        history=[],
        emit=emit,
        budget=budget,
        approve=approve,
        approver=approver,
        on_message=session.message,
        trace=trace,
        constraint=constraint_for(constrain, driver, tools, profile),
        salvage="salvage" not in ablate,
        retain="retention" not in ablate,
        profile=profile,
        sandbox=sandbox,
    )


def workspace_files(workspace: Path, limit: int = 40) -> list[str]:
    """Top-level entries, so a small model can name real paths from its first call."""
    skip = {".git", ".venv", "node_modules", "__pycache__"}
    entries: list[str] = []
    count = 0
    try:
        with os.scandir(workspace) as it:
            for entry in it:
                if entry.name in skip:
                    continue
                count += 1
                if len(entries) < 10_000:  # a huge folder is counted, not held
                    folder = entry.is_dir(follow_symlinks=False)
                    entries.append(entry.name + ("/" if folder else ""))
    except OSError:
        return []
    names = sorted(entries)[:limit]
    return names + ([f"… ({count - limit} more)"] if count > limit else [])


def system_message(workspace: Path) -> System:
    instructions, source = project_instructions(workspace)
    return System(system_prompt(str(workspace), instructions, source, workspace_files(workspace)))


def profile_of(model: str) -> ModelProfile:
    """The model's profile, resolved before anything is loaded (this also validates
    capabilities.toml and reads the GGUF's metadata); a bad model file is a usage error."""
    try:
        return profile_for(model)
    except GGUFError as exc:
        raise UsageError(f"cannot read model {model}: {exc}") from None


def loading(model: str) -> AbstractContextManager[object]:
    """A spinner on stderr while a model loads (big GGUFs take seconds); silent in pipes."""
    if not sys.stderr.isatty():
        return nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(f"loading {model} …", spinner="dots")


def run_once(opts: RunOptions) -> int:
    workspace = check_workspace(opts.workspace)
    trace = trace_writer(opts.trace) if opts.trace is not None else None
    printer: Callable[[ev.AgentEvent], None] = (
        JsonlPrinter() if opts.output == "jsonl" else TextPrinter()
    )
    profile = profile_of(opts.model)
    with loading(opts.model):
        driver = open_driver(opts.model, wire=opts.wire)
    session = SessionLog(new_session_id())

    def emit(event: ev.AgentEvent) -> None:
        session.event(event)
        printer(event)

    interactive = sys.stdin.isatty() and sys.stderr.isatty()
    agent = build_agent(
        driver,
        profile,
        workspace,
        emit,
        session,
        budget=Budget(max_turns=opts.max_turns),
        approve=opts.approve,
        constrain=opts.constrain,
        trace=trace,
        ablate=opts.ablate,
        sandbox=opts.sandbox,
    )
    if interactive:
        agent.approver = terminal_approver(agent.tools, workspace)
    try:
        try:
            emit(ev.SessionStarted(session.id, driver.model, str(workspace)))
            agent.add(system_message(workspace))
        except SessionWriteError as exc:  # before the loop: the result is still owed
            result = ev.RunFinished("error", 0, 0, 0, 0, 0, 0, "", error=str(exc))
            printer(result)
        else:
            result = agent.run(opts.prompt)
    finally:
        session.close()
        driver.close()
    return EXIT_CODES.get(result.status, 1)
