"""A session's MCP servers: which of the configured ones start, and the hub they run in.

Disabled servers are listed but not started; a server the workspace named starts only
once approved (`ask`, in chat, remembered per command line and the content of the
workspace files it runs from) or with `--allow-workspace-mcp`, and is restarted after
a crash only while those files are unchanged; everything else starts. Failures (and
listings refused as too large) are reported in one line each and leave the session
running without that server's tools.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from agent.mcp.connection import ServerState, warn
from agent.mcp.hub import Hub
from agent.mcp.servers import Approvals, ServerSpec
from agent.mcp.trust import server_files
from agent.session import bosun_home

Ask = Callable[[ServerSpec], bool]
MAX_SKIPPED_LINES = 3  # tools left out, one line each; more are said in one line
NOT_APPROVED = (
    "named by the workspace ({0.source}); it starts once approved in `bosun chat`"
    " or with --allow-workspace-mcp"
)
CHANGED = (
    "named by the workspace ({0.source}), and {1}; it starts once approved again in"
    " `bosun chat` or with --allow-workspace-mcp"
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
        if spec.origin == "workspace":
            verdict = store.verdict(workspace, spec) if not allow_workspace else None
            if verdict is not None and not verdict.approved:
                if ask is None or not ask(spec):
                    why = CHANGED if verdict.why else NOT_APPROVED
                    off.append(ServerState(spec, "not approved", why.format(spec, verdict.why)))
                    continue
                store.allow(workspace, spec)
            # what it runs from, as it starts: a restart mid-session needs the same
            spec = replace(spec, pinned=tuple(sorted(server_files(spec, workspace).items())))
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
        name = state.spec.name
        if state.status in ("failed", "not approved"):
            verb = "failed to start" if state.status == "failed" else "not started"
            report(f"MCP server {name} {verb}: {state.error}; its tools are absent")
        elif state.status == "refused":
            report(f"MCP server {name}: {state.error}; none of its tools are used")
        if len(state.skipped) > MAX_SKIPPED_LINES:  # a line each would bury the rest
            report(
                f"MCP server {name}: {len(state.skipped)} tools left out, the first as "
                f"tool {state.skipped[0]}; `bosun mcp list` says why for each"
            )
            continue
        for skipped in state.skipped:
            report(f"MCP server {name}: tool {skipped}; left out")
    return hub
