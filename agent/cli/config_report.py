"""`bosun config`: which files are in force, and where each setting comes from.

A setting that surprises (a workspace that made approval stricter, a model from the
user file) is only debuggable when its source is visible, so every value is printed
with the file that set it. The files are read through `load_config`, with its checks and
warnings, so what is shown is what a run would use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.mcp.servers import MCP_JSON
from agent.mcp.session import approvals
from agent.run.config import WORKSPACE_FILE, resolved, user_config_path
from agent.run.hooks import WorkspaceHooks
from agent.run.settings import config_keys
from agent.tools.hooks import HookSpec
from agent.tools.hooks.spec import CLAUDE_SETTINGS
from agent.untrusted import one_line, visible


def report(workspace: Path) -> dict[str, Any]:
    """Files (path, present), settings (name, value, source) and MCP servers: what
    `run` and `chat` would use here with no flags (agent.run.config.resolved)."""
    config, sources = resolved(workspace)
    user, local, mcp = user_config_path(), workspace / WORKSPACE_FILE, workspace / MCP_JSON
    claude = workspace / CLAUDE_SETTINGS
    settings = []
    for name, f in config_keys().items():
        if name in ("mcp_servers", "hooks"):  # listed on their own
            continue
        value = getattr(config, f.name)
        settings.append({"name": name, "value": _plain(name, value), "source": sources[name]})
    return {
        "files": [
            {"role": "user", "path": str(user), "present": user.is_file()},
            {"role": "workspace", "path": str(local), "present": local.is_file()},
            {"role": "mcp", "path": str(mcp), "present": mcp.is_file()},
            {"role": "claude", "path": str(claude), "present": claude.is_file()},
        ],
        "settings": settings,
        "mcp_servers": [
            {"name": s.name, "source": s.source, "enabled": s.enabled, "trusted": s.trusted}
            for s in config.mcp_servers
        ],
        "hooks": hook_rows(config.hooks, workspace),
    }


def _plain(name: str, value: Any) -> Any:
    """lint_cmd as {extension: command}, test_cmd as its command (JSON and text)."""
    if name == "lint_cmd":
        return {c.ext: c.command for c in value}
    if name == "test_cmd" and value is not None:
        return value.command
    return value


def hook_rows(hooks: tuple[HookSpec, ...], workspace: Path) -> list[dict[str, Any]]:
    """Each hook, with whether it runs unasked: the user's always, the workspace's once
    approved (agent.run.hooks)."""
    theirs = tuple(h for h in hooks if h.origin == "workspace")
    approved = bool(theirs) and approvals().allowed(workspace, WorkspaceHooks(theirs, workspace))
    return [
        {
            "event": h.event,
            "matcher": h.matcher,
            "command": h.command,
            "timeout": h.timeout,
            "source": h.source,
            "origin": h.origin,
            "approved": h.origin == "user" or approved,
        }
        for h in hooks
    ]


def text(data: dict[str, Any]) -> str:
    lines = ["files:"]
    for f in data["files"]:
        state = "" if f["present"] else "  (absent)"
        lines.append(f"  {f['role']:<10} {f['path']}{state}")
    lines.append("settings:")
    for s in data["settings"]:
        value = s["value"]
        shown = "(model's own)" if value is None else repr(value)
        if value is None and s["name"] == "test_cmd":
            shown = "(none)"
        lines.append(f"  {s['name']:<17} {shown:<24} {s['source']}")
    if data["mcp_servers"]:
        lines.append("mcp servers:")
        for s in data["mcp_servers"]:
            notes = [
                n for n, on in (("disabled", not s["enabled"]), ("trusted", s["trusted"])) if on
            ]
            lines.append(
                f"  {s['name']:<17} {s['source']}{'  ' + ', '.join(notes) if notes else ''}"
            )
    if data.get("hooks"):
        lines.append("hooks:")
        for h in data["hooks"]:
            matcher = f" [{one_line(h['matcher'], 60)}]" if h["matcher"] not in ("", "*") else ""
            note = "" if h["approved"] else "  (not approved: runs with --allow-workspace-hooks)"
            lines.append(f"  {h['event'] + matcher:<17} {h['command']}{note}")
            lines.append(f"  {'':<17} {h['source']}, timeout {h['timeout']:g} s")
    # every line quotes the workspace's files (a matcher, a command, a path): shown
    return "\n".join(visible(line) for line in lines) + "\n"
