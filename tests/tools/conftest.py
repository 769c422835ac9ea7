"""Fixtures for the tool tests: call a tool the way the loop does, through the registry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agent.history import ToolCall, ToolResult
from agent.tools import ToolContext, default_registry

RunTool = Callable[..., ToolResult]


@pytest.fixture
def run_tool(workspace: Path) -> RunTool:
    """run_tool("read_file", path="x") -> ToolResult, never an exception."""
    registry = default_registry()

    def run(name: str, **arguments: object) -> ToolResult:
        return registry.execute(ToolCall("t1", name, dict(arguments)), ToolContext(workspace))

    return run
