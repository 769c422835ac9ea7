"""Hooks for tests: small Python programs as hook commands, and an agent that runs them."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from agent.events import AgentEvent, HookRan
from agent.loop.runtime import Agent
from agent.tools.hooks import Hooks, HookSpec
from tests.helpers import make_agent


def script(folder: Path, name: str, body: str) -> str:
    """A hook command that runs `body` with this Python (stdin: the hook's JSON)."""
    path = folder / f"{name}.py"
    path.write_text("import json, os, sys\n" + body, encoding="utf-8")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def hooked(
    steps: list[str | dict[str, object]],
    workspace: Path,
    *specs: HookSpec,
) -> tuple[Agent, object, list[AgentEvent]]:
    agent, driver, events = make_agent(steps, workspace)
    agent.gate.hooks = Hooks(specs, workspace, agent.emit, "session-1")
    return agent, driver, events


def ran(events: list[AgentEvent]) -> list[tuple[str, str]]:
    """(event, decision) of every hook that ran."""
    return [(e.event, e.decision) for e in events if isinstance(e, HookRan)]


def said(events: list[AgentEvent]) -> list[str]:
    return [getattr(e, "message", "") for e in events if e.type == "diagnostic"]
