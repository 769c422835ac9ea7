"""What `bosun mcp list` and chat's `/mcp` show: one row per server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.mcp.hub import Hub
from agent.mcp.servers import ServerSpec
from agent.mcp.session import start_hub
from agent.tools import KNOWN
from agent.untrusted import visible


def rows(hub: Hub) -> list[dict[str, Any]]:
    out = []
    for state in hub.states():
        spec = state.spec
        notes = [state.error] if state.error else []
        notes += [f"left out {s}" for s in state.skipped]
        if spec.trusted:
            notes.append("trusted")
        if state.restarts:
            notes.append(f"restarted {state.restarts}×")
        out.append(
            {
                "server": spec.name,
                "from": spec.source or spec.origin,
                "command": visible(spec.describe()),
                "status": state.status,
                "tools": list(state.tools),
                "note": visible("; ".join(notes)),
            }
        )
    return out


def list_servers(
    servers: tuple[ServerSpec, ...], workspace: Path, allow_workspace: bool
) -> list[dict[str, Any]]:
    """Start them (workspace servers only where approved or allowed), read, stop."""
    hub = start_hub(
        servers,
        workspace,
        allow_workspace=allow_workspace,
        reserved=(t.name for t in KNOWN),
        report=lambda _line: None,  # the table says it
    )
    if hub is None:
        return []
    try:
        return rows(hub)
    finally:
        hub.close()
