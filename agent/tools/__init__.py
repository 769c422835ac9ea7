"""The tools bosun gives a model: one file per family, assembled here."""

from collections.abc import Iterable

from agent.tools.edit import edit_file, write_file
from agent.tools.files import list_dir, read_file
from agent.tools.registry import Tool, ToolContext, ToolError, ToolRegistry, tool
from agent.tools.search import glob, grep
from agent.tools.shell import bash

BUILTIN = (read_file, list_dir, glob, grep, write_file, edit_file, bash)


def default_registry(extra: Iterable[Tool] = ()) -> ToolRegistry:
    """Read tools first: small models tend to pick from the top of the list; tools from
    MCP servers (`extra`) after bosun's own."""
    return ToolRegistry([*BUILTIN, *extra])


__all__ = [
    "BUILTIN",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "default_registry",
    "tool",
]
