"""The tools bosun gives a model: one file per family, assembled here."""

from agent.tools.edit import edit_file, write_file
from agent.tools.files import list_dir, read_file
from agent.tools.registry import Tool, ToolContext, ToolError, ToolRegistry, tool
from agent.tools.search import glob, grep
from agent.tools.shell import bash


def default_registry() -> ToolRegistry:
    """Read tools first: small models tend to pick from the top of the list."""
    return ToolRegistry([read_file, list_dir, glob, grep, write_file, edit_file, bash])


__all__ = ["Tool", "ToolContext", "ToolError", "ToolRegistry", "default_registry", "tool"]
