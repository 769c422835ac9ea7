"""Small helpers shared by test modules (importable as tests.helpers)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from agent.events import AgentEvent
from agent.history import Message, System
from agent.loop.budget import Budget
from agent.loop.runtime import Agent, Seat
from agent.protocol.profile import ModelProfile, profile_for
from agent.run.system_prompt import system_prompt
from agent.tools import default_registry
from agent.tools.orchestrator import Gate
from drivers.bundled import BUNDLED, is_installed
from drivers.scripted import ScriptedDriver

GEMMA = BUNDLED["gemma3-270m"]
# The second bundled model is a dev extra (install.sh --dev); without it its tests skip.
needs_gemma = pytest.mark.skipif(
    not is_installed(GEMMA), reason=f"{GEMMA.pip_name} is not installed (./install.sh --dev)"
)


# One tool in the OpenAI function shape, as servers are sent it (driver tests).
READ_FILE = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file in the workspace.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}


def tool_call(name: str, **arguments: object) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def make_agent(
    steps: list[str | dict[str, object]],
    workspace: Path,
    *,
    approve: str = "auto",
    budget: Budget | None = None,
    wire: bool = False,
    harmony: bool = False,
    profile: ModelProfile | None = None,
) -> tuple[Agent, ScriptedDriver, list[AgentEvent]]:
    """An Agent on a strict scripted driver. `harmony`: a gpt-oss profile (bosun's
    harmony template and parser); `wire`: a profile with the <tool_call> remap on."""
    driver = ScriptedDriver([s if isinstance(s, dict) else {"completion": s} for s in steps])
    events: list[AgentEvent] = []
    history: list[Message] = [System(system_prompt(str(workspace)))]
    if profile is None:
        profile = profile_for("gpt-oss-20b" if harmony else driver.model)
    if wire:
        profile = replace(profile, wire_remap=True, remap_reason="a test asked for it")
    agent = Agent(
        seat=Seat(driver, profile),
        tools=default_registry(),
        workspace=workspace,
        history=history,
        emit=events.append,
        gate=Gate(approve),
        budget=budget or Budget(),
    )
    return agent, driver, events


def snapshot(tmp_path: Path, workspace: Path) -> dict[str, bytes | str]:
    """Every path under tmp_path outside the workspace, with its bytes or link target."""
    seen: dict[str, bytes | str] = {}
    for folder, dirs, files in os.walk(tmp_path):
        dirs[:] = [d for d in dirs if Path(folder, d) != workspace]
        for name in dirs + files:
            path = Path(folder, name)
            rel = str(path.relative_to(tmp_path))
            if path.is_symlink():
                seen[rel] = "-> " + os.readlink(path)
            elif path.is_file():
                seen[rel] = path.read_bytes()
            else:
                seen[rel] = "dir"
    return seen


@pytest.fixture(autouse=True, name="home")
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own (~/.claude/commands, ~/.codex/prompts): never the user's.
    Autouse where a module imports it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return home
