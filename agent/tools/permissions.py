"""Approval modes: which tool kinds may run without asking, and which never.

Where a path may lead is `agent.tools.confine`'s business; this module only decides
whether a call asks first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent.errors import ToolError
from agent.history import ToolCall
from agent.tools.confine import resolve_in_workspace
from agent.tools.registry import Tool, ToolKind

ApproveMode = Literal["ask", "auto-edit", "auto", "read-only"]
APPROVE_MODES: tuple[str, ...] = ("ask", "auto-edit", "auto", "read-only")


@dataclass(frozen=True)
class Decline:
    """ "No", with what the user wants instead (it goes to the model with the refusal)."""

    reason: str = ""


Approval = Literal["yes", "no", "always"] | Decline
Approver = Callable[[ToolCall, Tool], Approval]  # None where nobody can answer
# The two ways a call may not run, told apart by how a result begins: the user said no
# (the turn ends there), or the mode / nobody to ask refused it (the model goes on).
DECLINED = "Error: the user declined this call"
NEEDS_APPROVAL = "needs approval and nobody can approve here"


def touches_git(root: Path, path: object) -> bool:
    """Whether a path argument names something inside a `.git` folder, as spelled or
    through a symlink: hooks and config there run commands at the user's next git
    command."""
    if not isinstance(path, str):
        return False
    if ".git" in Path(path).parts:
        return True
    try:
        real = resolve_in_workspace(root, path)
    except ToolError:  # the call itself will fail
        return False
    return ".git" in real.relative_to(root.resolve()).parts


def into_git(mode: str, kind: ToolKind, paths: Iterable[object], root: Path) -> bool:
    """A write into `.git/` in a mode that may write but is not `auto`: it asks every
    time, whatever was answered before, since hooks and config there (core.fsmonitor)
    run commands at the user's next git command. `paths`: what the call would write
    (`Tool.written_paths`: every file of a patch, too)."""
    if kind != "write" or mode in ("auto", "read-only"):
        return False
    return any(touches_git(root, p) for p in paths)


def call_decision(
    mode: str, kind: ToolKind, paths: Iterable[object], root: Path, *, sandboxed: bool = False
) -> Literal["allow", "ask", "deny"]:
    """`decision`, with writes into `.git/` asking (see `into_git`)."""
    verdict = decision(mode, kind, sandboxed=sandboxed)
    if verdict == "allow" and into_git(mode, kind, paths, root):
        return "ask"
    return verdict


def decision(
    mode: str, kind: ToolKind, *, sandboxed: bool = False
) -> Literal["allow", "ask", "deny"]:
    """What the approval mode says about a tool of this kind. In auto-edit, bash runs
    unasked only in the sandbox, where a command can change nothing but the workspace
    (and not its .git/), which auto-edit lets the file tools change anyway. An MCP tool
    asks in every mode but auto unless its server is trusted in the user's config."""
    if kind == "read" or mode == "auto":
        return "allow"
    if mode == "read-only":
        return "deny"  # an MCP tool too: nothing says what it changes
    if kind == "mcp-trusted":
        return "allow"
    if mode == "auto-edit" and (kind == "write" or (kind == "shell" and sandboxed)):
        return "allow"
    return "ask"


def how_to_allow(mode: str, kind: ToolKind, sandboxed: bool = False) -> str:
    """What the user can do about a call that needed approval where nobody can give it:
    only the modes that would let this very call run, each named once."""
    if kind == "mcp":
        return (
            "MCP tools ask unless their server has trusted = true in the user's config.toml;"
            " the user can set that or rerun with --approve auto"
        )
    if kind == "shell" and not sandboxed:
        return (
            "bash runs unasked only inside the sandbox, which is off here, or with"
            " --approve auto; the user can rerun with --sandbox on (needs bubblewrap)"
            " and --approve auto-edit, or with --approve auto"
        )
    if kind == "shell":
        return "the user can rerun with --approve auto-edit (bash in the sandbox) or --approve auto"
    return "the user can rerun with --approve auto-edit or --approve auto"


def refused_run(mode: str) -> str:
    """Why a request ended with every call kept from running: in read-only mode nobody
    could have approved them, so no approval is talked of."""
    if mode == "read-only":
        return "every tool call was refused: read-only mode runs only tools that read"
    return "every tool call needed an approval nobody could give"


def refusal(
    mode: str,
    approver: Approver | None,
    always: set[str],
    call: ToolCall,
    tool: Tool,
    root: Path,
    sandboxed: bool = False,
    futile: Callable[[], str | None] = lambda: None,
) -> str | None:
    """Why this call may not run (the mode, or the user's answer), or None to run it.
    `always` remembers the tools the user allowed for the rest of the session; the
    approver's KeyboardInterrupt (Ctrl-C at the question) is the caller's to handle.
    `sandboxed`: bash runs in the sandbox, so auto-edit lets it run unasked. `futile`:
    why the call is already known to fail or change nothing, asked only where the call
    would need an approval: such a question's answer could not matter."""
    paths = tool.written_paths(call.arguments)
    verdict = call_decision(mode, tool.kind, paths, root, sandboxed=sandboxed)
    if verdict == "deny":
        return f"Error: {call.name} is not allowed in {mode} mode"
    # a write into .git/ asks each time: "always" for edits is not "always" for hooks
    git = into_git(mode, tool.kind, paths, root)
    if verdict != "ask" or (call.name in always and not git):
        return None
    pointless = futile()
    if pointless is not None:
        return pointless
    if approver is None:
        why = (
            "writes into .git/ run commands at the next git command, so they"
            " need approval; only --approve auto allows them unasked"
            if git
            else how_to_allow(mode, tool.kind, sandboxed)
        )
        return f"Error: {call.name} {NEEDS_APPROVAL}; {why}"
    try:
        answer = approver(call, tool)
    except EOFError:  # input closed: nobody said yes
        answer = "no"
    if answer == "always" and not git:
        always.add(call.name)
    elif isinstance(answer, Decline) and answer.reason.strip():
        reason = " ".join(answer.reason.split())
        return f"{DECLINED}; instead, they said: {reason}"
    elif answer not in ("yes", "always"):
        return DECLINED
    return None


def policy_refused(result: str) -> bool:
    """A result that says the mode, not the user, kept the call from running."""
    return result.startswith("Error: ") and (
        NEEDS_APPROVAL in result or " is not allowed in " in result
    )
