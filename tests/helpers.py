"""Small helpers shared by test modules (importable as tests.helpers)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from agent.events import AgentEvent
from agent.history import Message, System
from agent.profile import ModelProfile, profile_for
from agent.prompt import system_prompt
from agent.runtime import Agent, Budget
from agent.tools import default_registry
from drivers.scripted import ScriptedDriver


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
        driver=driver,
        tools=default_registry(),
        workspace=workspace,
        history=history,
        emit=events.append,
        approve=approve,
        budget=budget or Budget(),
        profile=profile,
    )
    return agent, driver, events
