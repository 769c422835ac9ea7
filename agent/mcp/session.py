"""A session's MCP servers: which of the configured ones start, and the hub they run in.

Disabled servers are listed but not started; a server the workspace named starts only
once approved (`ask`, in chat, remembered per command line) or with
`--allow-workspace-mcp`; everything else starts. Failures are reported in one line each
and leave the session running without that server's tools.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from agent.mcp.hub import Hub, ServerState, warn
from agent.mcp.servers import Approvals, ServerSpec
from agent.session import bosun_home

Ask = Callable[[ServerSpec], bool]
NOT_APPROVED = (
    "named by the workspace ({source}); it starts once approved in `bosun chat`"
    " or with --allow-workspace-mcp"
)


def approvals() -> Approvals:
    return Approvals(bosun_home() / "mcp-approvals.json")


def choose(
    servers: Sequence[ServerSpec], workspace: Path, *, allow_workspace: bool, ask: Ask | None
) -> tuple[list[ServerSpec], list[ServerState]]:
    """The servers to start, and the others with why they stay off."""
    store = approvals()
    start: list[ServerSpec] = []
    off: list[ServerState] = []
    for spec in servers:
        if not spec.enabled:
            off.append(ServerState(spec, "disabled", "enabled = false"))
            continue
        if (
            spec.origin == "workspace"
            and not allow_workspace
            and not store.allowed(workspace, spec)
        ):
            if ask is None or not ask(spec):
                off.append(ServerState(spec, "not approved", NOT_APPROVED.format(**vars(spec))))
                continue
            store.allow(workspace, spec)
        start.append(spec)
    return start, off


def start_hub(
    servers: Sequence[ServerSpec],
    workspace: Path,
    *,
    allow_workspace: bool = False,
    ask: Ask | None = None,
    reserved: Iterable[str] = (),
    report: Callable[[str], None] = warn,
) -> Hub | None:
    """Start the session's servers (None when none are configured) and wait for them;
    each one that did not start is reported through `report` in one line."""
    hub = begin_hub(servers, workspace, allow_workspace=allow_workspace, ask=ask, reserved=reserved)
    if hub is not None:
        finish_hub(hub, report)
    return hub


def begin_hub(
    servers: Sequence[ServerSpec],
    workspace: Path,
    *,
    allow_workspace: bool = False,
    ask: Ask | None = None,
    reserved: Iterable[str] = (),
) -> Hub | None:
    """Ask about workspace servers, then start the chosen ones without waiting for
    them (the model loads meanwhile); `finish_hub` waits."""
    if not servers:
        return None
    start, off = choose(servers, workspace, allow_workspace=allow_workspace, ask=ask)
    hub = Hub(workspace, bosun_home() / "logs")
    hub.begin(start, off, reserved)
    return hub


def finish_hub(hub: Hub, report: Callable[[str], None] = warn) -> None:
    """Wait for the servers begun; report in one line each what did not start."""
    try:
        hub.ready()
    except BaseException:
        hub.close()
        raise
    for state in hub.states():
        if state.status in ("failed", "not approved"):
            verb = "failed to start" if state.status == "failed" else "not started"
            report(f"MCP server {state.spec.name} {verb}: {state.error}; its tools are absent")
        for skipped in state.skipped:
            report(f"MCP server {state.spec.name}: tool {skipped}; left out")
    return hub
