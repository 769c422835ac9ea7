"""`bosun acp`: settings from flags and config files, then the ACP face (agent.run.acp)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import (
    WORKSPACE_MCP_HELP,
    ConfigModelOpt,
    ToolsOpt,
    WorkspaceOpt,
    tool_changes,
)

APPROVE_HELP = (
    "Approval mode a session starts in: ask, auto-edit, auto or read-only"
    " (the editor can switch it: ACP session modes). Default: config, else ask."
)


def acp(
    model: ConfigModelOpt = None,
    workspace: WorkspaceOpt = None,
    approve: Annotated[str | None, typer.Option(help=APPROVE_HELP)] = None,
    context_size: Annotated[
        int | None, typer.Option("--context-size", min=256, help="Context window in tokens.")
    ] = None,
    sandbox: Annotated[
        str | None, typer.Option(help="bash in bubblewrap: auto, on or off. Default: config.")
    ] = None,
    allow_workspace_mcp: Annotated[
        bool, typer.Option("--allow-workspace-mcp", help=WORKSPACE_MCP_HELP)
    ] = False,
    tools: ToolsOpt = None,
    max_turns: Annotated[
        int, typer.Option(min=1, help="Most model calls in one prompt turn.")
    ] = 30,
) -> None:
    """Serve the Agent Client Protocol on stdin/stdout, for editors such as Zed.

    Each session works in the folder the editor names; --workspace says where config
    files are read from (default: the current folder).
    """
    from agent.cli.common import EXIT_USAGE, fail
    from agent.run.acp import serve
    from agent.run.assemble import check_workspace
    from agent.run.config import settings_for
    from agent.tools.permissions import APPROVE_MODES

    if approve is not None and approve not in APPROVE_MODES:
        fail(f"--approve: choose from {', '.join(APPROVE_MODES)}, not {approve!r}", EXIT_USAGE)
    if sandbox is not None and sandbox not in ("auto", "on", "off"):
        fail(f"--sandbox: choose from auto, on, off, not {sandbox!r}", EXIT_USAGE)
    ws = check_workspace(workspace if workspace is not None else Path.cwd())
    flags = {
        "model": model,
        "approve": approve,
        "context_size": context_size,
        "sandbox_mode": sandbox,
        "tools": tool_changes(tools),
    }
    settings = settings_for(ws, flags).but(
        allow_workspace_mcp=allow_workspace_mcp, max_turns=max_turns
    )
    raise typer.Exit(serve(settings))
