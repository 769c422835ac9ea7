"""Workspace confinement and approval modes.

Every path a tool touches is resolved (symlinks followed) and must land inside the
workspace root. Approval modes decide which tool kinds may run without asking.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from agent.errors import ToolError

ToolKind = Literal["read", "write", "shell"]
ApproveMode = Literal["ask", "auto-edit", "auto", "read-only"]
APPROVE_MODES: tuple[str, ...] = ("ask", "auto-edit", "auto", "read-only")


def is_inside(root: Path, path: Path) -> bool:
    return path == root or path.is_relative_to(root)


def resolve_in_workspace(root: Path, path: str) -> Path:
    """The real path for `path` (relative to the workspace), or a ToolError."""
    if "\x00" in path:
        raise ToolError("path contains a NUL byte")
    real_root = root.resolve()
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = real_root / candidate
    real = candidate.resolve()
    if not is_inside(real_root, real):
        raise ToolError(f"{path!r} is outside the workspace {real_root}; use paths inside it")
    return real


def decision(mode: str, kind: ToolKind) -> Literal["allow", "ask", "deny"]:
    """What the approval mode says about a tool of this kind."""
    if kind == "read" or mode == "auto":
        return "allow"
    if mode == "read-only":
        return "deny"
    if mode == "auto-edit" and kind == "write":
        return "allow"
    return "ask"
