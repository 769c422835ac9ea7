"""Small helpers shared by test modules (importable as tests.helpers)."""

from __future__ import annotations

import json
from pathlib import Path

from agent.events import AgentEvent
from agent.history import Message, System
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
) -> tuple[Agent, ScriptedDriver, list[AgentEvent]]:
    driver = ScriptedDriver([s if isinstance(s, dict) else {"completion": s} for s in steps])
    events: list[AgentEvent] = []
    history: list[Message] = [System(system_prompt(str(workspace)))]
    agent = Agent(
        driver=driver,
        tools=default_registry(),
        workspace=workspace,
        history=history,
        emit=events.append,
        approve=approve,
        budget=budget or Budget(),
        wire=wire,
        harmony=harmony,
    )
    return agent, driver, events
