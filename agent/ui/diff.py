"""What a write or edit would change, as a unified diff shown before approval.

A tool may offer its own `preview` (a unified diff, through `ToolRegistry.preview`); for
a write_file or edit_file without one the diff is computed here, from the file as it is
now, because the question "allow this?" is only answerable with the change in view.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text

from agent.errors import ToolError
from agent.history import ToolCall
from agent.tools import ToolContext, ToolRegistry
from agent.tools.confine import resolve_in_workspace
from agent.tools.diffs import unified_diff
from agent.tools.patch import routed
from agent.untrusted import visible

MAX_DIFF_LINES = 60
_OLD_KEYS = ("old_string", "old_text", "old", "search", "find")
_NEW_KEYS = ("new_string", "new_text", "new", "replace", "replacement")


def _current(workspace: Path, path: str) -> str | None:
    try:
        real = resolve_in_workspace(workspace, path)
    except ToolError:
        return None
    if not real.is_file():
        return ""
    try:
        return real.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _first(arguments: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((v for k in keys if isinstance(v := arguments.get(k), str)), None)


def _unified(before: str, after: str, path: str) -> str:
    lines = unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def preview_diff(
    name: str, arguments: dict[str, Any], tools: ToolRegistry, workspace: Path
) -> str | None:
    """A unified diff for a file-changing call, or None when there is nothing to show."""
    if name == "bash" and isinstance(tools, ToolRegistry):  # `apply_patch <<EOF`: its diff
        call = routed(ToolCall("preview", name, arguments), tools)
        name, arguments = call.name, call.arguments
    registry_preview = getattr(tools, "preview", None)
    tool = tools.get(name)
    if callable(registry_preview) and getattr(tool, "preview", None) is not None:
        # The tool's own preview: it knows its semantics (and says why a call would fail).
        return registry_preview(ToolCall("preview", name, arguments), ToolContext(workspace))
    path = arguments.get("path")
    if not isinstance(path, str):
        return None
    if name == "write_file":
        content = arguments.get("content")
        before = _current(workspace, path)
        if not isinstance(content, str) or before is None:
            return None
        return _unified(before, content, path) or None
    if name == "edit_file":
        old, new = _first(arguments, _OLD_KEYS), _first(arguments, _NEW_KEYS)
        if old is None or new is None:
            return None
        before = _current(workspace, path)
        if before and old in before:  # the real change, with its surrounding lines
            return _unified(before, before.replace(old, new, 1), path) or None
        return _unified(old, new, path) or None
    return None


def diff_text(diff: str, limit: int = MAX_DIFF_LINES) -> Text:
    """Colour a unified diff (red/green, plain +/- under NO_COLOR) and cap its length."""
    lines = diff.splitlines()
    out = Text(no_wrap=False)
    for line in lines[:limit]:
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        out.append(visible(line) + "\n", style=style)  # file text: escapes shown, not run
    if len(lines) > limit:
        out.append(f"… {len(lines) - limit} more diff lines\n", style="dim")
    out.rstrip()
    return out
