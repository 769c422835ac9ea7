"""The tools bosun gives a model: one file per family, assembled here."""

from agent.tools.files import list_dir, read_file
from agent.tools.registry import Tool, ToolContext, ToolError, ToolRegistry, tool


def default_registry() -> ToolRegistry:
    return ToolRegistry([read_file, list_dir])


__all__ = ["Tool", "ToolContext", "ToolError", "ToolRegistry", "default_registry", "tool"]
