"""The tool tests' shared type; the `run_tool` fixture lives in tests/conftest.py."""

from __future__ import annotations

from collections.abc import Callable

from agent.history import ToolResult

RunTool = Callable[..., ToolResult]
