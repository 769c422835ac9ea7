"""The tools bosun gives a model: one file per family, assembled here.

Which of them a model is offered is its profile's word first (gpt-oss, trained on
Codex's patches, gets apply_patch in place of edit_file and write_file), then the user's
(`--tools +apply_patch,-bash`, or `tools = "…"` in a config file): both are lists of
changes to the default set, applied in order.
"""

import re
from collections.abc import Iterable

from agent.errors import UsageError
from agent.tools.edit import edit_file, write_file
from agent.tools.files import list_dir, read_file
from agent.tools.patch import apply_patch
from agent.tools.plan import update_plan
from agent.tools.registry import Tool, ToolContext, ToolError, ToolRegistry, tool
from agent.tools.search import glob, grep
from agent.tools.shell import bash
from agent.tools.skill import skill
from agent.tools.symbols import find_symbol, outline

# the default set (update_plan last: it does no work, and small models pick from the top)
BUILTIN = (read_file, list_dir, glob, grep, write_file, edit_file, bash, update_plan)
# offered only where a profile or the user adds them (outline and find_symbol: also
# where the repository map is in the prompt, agent.run.assemble)
OPTIONAL = (apply_patch, skill, outline, find_symbol)
KNOWN = (
    read_file, list_dir, glob, grep, outline, find_symbol, write_file, edit_file, apply_patch,
    bash, update_plan, skill,
)  # fmt: skip
# `skill` is added where there are skills (agent.run.assemble), never offered without them
_CHANGE = re.compile(r"[+-]?[a-z_]+")


def parse_tool_changes(spec: str, where: str = "--tools") -> tuple[str, ...]:
    """`"+apply_patch,-edit_file"` -> ("+apply_patch", "-edit_file"); a bare name adds
    it. A UsageError, one line naming the known tools, for anything else."""
    changes: list[str] = []
    known = [t.name for t in KNOWN]
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        if not _CHANGE.fullmatch(item):
            raise UsageError(
                f"{where}: {item[:40]!r} is not +NAME or -NAME (for example"
                " +apply_patch,-edit_file)"
            )
        name = item.lstrip("+-")
        if name not in known:
            raise UsageError(f"{where}: unknown tool {name!r} (known: {', '.join(known)})")
        changes.append(item if item[0] in "+-" else f"+{item}")
    return tuple(changes)


def tool_set(changes: Iterable[str] = ()) -> tuple[Tool, ...]:
    """The default tools with `changes` applied in order, in KNOWN's order (read tools
    first: small models tend to pick from the top of the list)."""
    names = {t.name for t in BUILTIN}
    for change in parse_tool_changes(",".join(changes), "tools"):
        (names.add if change[0] == "+" else names.discard)(change[1:])
    return tuple(t for t in KNOWN if t.name in names)


def default_registry(extra: Iterable[Tool] = (), changes: Iterable[str] = ()) -> ToolRegistry:
    """bosun's tools (the default set, with `changes`: see `tool_set`), then tools from
    MCP servers (`extra`) after bosun's own."""
    return ToolRegistry([*tool_set(changes), *extra])


__all__ = [
    "BUILTIN",
    "KNOWN",
    "OPTIONAL",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "default_registry",
    "parse_tool_changes",
    "tool",
    "tool_set",
]
