"""Where a run is put together: a model opened into a driver and its profile, an Agent
built around them, and a session started. `bosun run`, each `--tasks` task and `bosun
chat` all come through here, so the three cannot drift apart.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.budget import Budget
from agent.cancel import Cancel
from agent.compact import Compactor
from agent.constraint import constraint_for
from agent.context import Counter, Limits, View
from agent.errors import ToolError, UsageError
from agent.gguf import GGUFError
from agent.history import Message, System
from agent.permissions import Approver
from agent.profile import ModelProfile, profile_for
from agent.prompt import system_prompt
from agent.runtime import Agent
from agent.session import bosun_home
from agent.tools import Tool, default_registry
from agent.tools.confine import open_in_workspace
from agent.tools.sandbox import SandboxPolicy
from drivers import llama_log, open_driver
from drivers.base import Driver


def profile_of(model: str) -> ModelProfile:
    """The model's profile, resolved before anything is loaded (this also validates
    capabilities.toml and reads the GGUF's metadata); a bad model file is a usage error."""
    try:
        return profile_for(model)
    except GGUFError as exc:
        raise UsageError(f"cannot read model {model}: {exc}") from None


def open_model(
    spec: str, *, api: str | None = None, context_size: int | None = None
) -> tuple[Driver, ModelProfile]:
    """The driver for `spec` and the profile of the model behind it. The profile comes
    first: a bad model file or capabilities.toml fails before seconds of loading."""
    profile = profile_of(spec)
    local = not spec.lower().startswith("openai:")  # a server sets its own context
    options: dict[str, Any] = {"n_ctx": context_size} if context_size and local else {}
    if local:
        llama_log.send_to(bosun_home() / "logs" / "llama.log")  # not into the terminal
    return open_driver(spec, api=api, **options), profile


def build_agent(
    driver: Driver,
    profile: ModelProfile,
    workspace: Path,
    emit: ev.Emit,
    *,
    on_message: Callable[[Message], None],
    budget: Budget,
    approve: str,
    constrain: str,
    approver: Approver | None = None,
    trace: Callable[[dict[str, Any]], None] | None = None,
    ablate: frozenset[str] = frozenset(),
    cancel: Cancel | None = None,
    context_size: int | None = None,
    compact_at: float | None = None,
    sandbox: SandboxPolicy | None = None,
    extra_tools: Sequence[Tool] = (),
) -> Agent:
    """An Agent with bosun's tools (and `extra_tools`, an MCP hub's); `on_message` sees
    every message added (a session file), `cancel` is shared where one Ctrl-C stops
    several agents (a batch)."""
    tools = default_registry(extra_tools)
    agent = Agent(
        driver=driver,
        tools=tools,
        workspace=workspace,
        history=[],
        emit=emit,
        budget=budget,
        approve=approve,
        approver=approver,
        on_message=on_message,
        trace=trace,
        constraint=constraint_for(constrain, driver, tools, profile),
        salvage="salvage" not in ablate,
        retain="retention" not in ablate,
        profile=profile,
        cancel=cancel if cancel is not None else Cancel(),
        sandbox=sandbox,
    )
    agent.compactor = compactor_for(driver, context_size, compact_at)
    return agent


def compactor_for(
    driver: Driver,
    context_size: int | None,
    compact_at: float | None,
    view: View | None = None,
) -> Compactor | None:
    """The context budget for this backend: its own context size where it knows it
    (the in-process model), else the one the user gave; none when neither is known."""
    n_ctx = driver.info.n_ctx or context_size
    if not n_ctx:
        return None
    limits = Limits(n_ctx, compact_at if compact_at is not None else Limits.compact_at)
    return Compactor(limits, Counter(driver.info.tokenize), view or View())


def start_session(
    agent: Agent,
    session_id: str,
    stored: list[Message] | None = None,
    compactions: Sequence[dict[str, Any]] = (),
) -> None:
    """The session line first, then the history: a new one gets the system prompt, read
    now (AGENTS.md may have changed); a stored one is taken as it was saved, compactions
    included, so the next prompt starts with the bytes the model saw before (a prefix
    cache still applies)."""
    agent.emit(ev.SessionStarted(session_id, agent.driver.model, str(agent.workspace)))
    agent.load(stored if stored is not None else [], compactions)
    if stored is None:
        agent.add(system_message(agent.workspace))


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
