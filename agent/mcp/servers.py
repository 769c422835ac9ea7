"""Which MCP servers a session may start: their settings, checked, and who named them.

Two shapes are read, so people can bring the servers they already configured:
`[mcp_servers.NAME]` tables in `config.toml` / `.bosun.toml` (Codex CLI's shape) and a
workspace's `.mcp.json` (`{"mcpServers": {NAME: {...}}}`, Claude Code's shape). A server
named by the workspace (its `.bosun.toml` or `.mcp.json`) is repository content: a
cloned repository must not get to run a program just by being opened, so such a server
starts only once the user approved it (in chat; the approval is remembered for that exact
command line and the content of the workspace files it runs from: `trust`) or with
`--allow-workspace-mcp`, and it can never mark itself trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from agent.errors import UsageError
from agent.mcp.trust import Approvable, changed, server_files
from agent.untrusted import json_file, json_line, loads

Origin = Literal["user", "workspace"]
MCP_JSON = ".mcp.json"
NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")
_KEYS = (
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "enabled",
    "startup_timeout",
    "tool_timeout",
    "trusted",
)
# Codex CLI spells the two timeouts with a unit; accepted so its tables paste unchanged.
_ALIASES = {"startup_timeout_sec": "startup_timeout", "tool_timeout_sec": "tool_timeout"}


@dataclass(frozen=True)
class ServerSpec:
    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None  # streamable HTTP instead of a command
    enabled: bool = True
    startup_timeout: float = 10.0  # seconds to start and list its tools
    tool_timeout: float = 60.0  # seconds one call may take
    trusted: bool = False  # its tools run without asking
    origin: Origin = "user"
    source: str = field(default="", compare=False)  # the file that named it
    # a workspace server's files as it was started (`trust`): a restart needs the same
    pinned: tuple[tuple[str, str], ...] | None = field(default=None, compare=False)

    def fingerprint(self) -> str:
        """What an approval is for: a changed command line needs a new one."""
        what = [self.command, list(self.args), sorted(self.env), self.cwd, self.url]
        return hashlib.sha256(json_line(what).encode()).hexdigest()[:16]

    def describe(self) -> str:
        if self.url is not None:
            return self.url
        return " ".join([self.command or "", *self.args])


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
        raise UsageError(f"{where} must be a number of seconds (0 < s <= 3600)")
    return float(value)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{where} must be a list of strings")
    if any("\0" in v for v in value):
        raise UsageError(f"{where} holds a NUL character")
    return tuple(value)


def _env(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise UsageError(f"{where} must be a table of strings")
    if any("\0" in k + v or "=" in k or not k for k, v in value.items()):
        raise UsageError(f"{where} holds a name or value no environment can carry")
    return tuple(sorted(value.items()))


def server_spec(name: str, table: Any, source: str, origin: Origin) -> ServerSpec:
    """One server's table, checked; every error names the file and the key."""
    where = f"{source}: mcp_servers.{name}"
    if not NAME.fullmatch(name):
        raise UsageError(f"{where}: a server name is 1-32 letters, digits, '_' or '-'")
    if not isinstance(table, Mapping):
        raise UsageError(f"{where} must be a table")
    values: dict[str, Any] = {}
    for key, value in table.items():
        key = _ALIASES.get(key, key)
        if key not in _KEYS:
            raise UsageError(f"{where}: unknown setting {key!r} (known: {', '.join(_KEYS)})")
        values[key] = value
    spec: dict[str, Any] = {"name": name, "origin": origin, "source": source}
    for key in ("command", "cwd", "url"):
        if key in values:
            if not isinstance(values[key], str) or not values[key].strip() or "\0" in values[key]:
                raise UsageError(f"{where}.{key} must be a non-empty string")
            spec[key] = values[key]
    if ("command" in spec) == ("url" in spec):
        raise UsageError(f"{where} needs exactly one of command (stdio) or url (HTTP)")
    if "url" in spec and urlsplit(spec["url"]).scheme not in ("http", "https"):
        raise UsageError(f"{where}.url must be an http:// or https:// address")
    if "args" in values:
        spec["args"] = _strings(values["args"], f"{where}.args")
    if "env" in values:
        spec["env"] = _env(values["env"], f"{where}.env")
    for key in ("enabled", "trusted"):
        if key in values:
            if not isinstance(values[key], bool):
                raise UsageError(f"{where}.{key} must be true or false")
            spec[key] = values[key]
    for key in ("startup_timeout", "tool_timeout"):
        if key in values:
            spec[key] = _number(values[key], f"{where}.{key}")
    return ServerSpec(**spec)


def parse_servers(value: Any, source: str, origin: Origin) -> tuple[ServerSpec, ...]:
    """The `mcp_servers` table of a config file."""
    if not isinstance(value, Mapping):
        raise UsageError(f"{source}: mcp_servers must be a table of [mcp_servers.NAME] tables")
    return tuple(server_spec(name, table, source, origin) for name, table in value.items())


def read_mcp_json(workspace: Path, read: Any) -> tuple[ServerSpec, ...]:
    """The servers a workspace's `.mcp.json` names (`read` is the config reader: a
    regular file of at most 64 kB). Claude Code's `"type": "stdio" | "http"` is
    accepted; everything else in an entry is a setting bosun knows or an error."""
    path = workspace / MCP_JSON
    try:
        data = json_file(path, read)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if data is None:
        return ()
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise UsageError(f'{path} must hold {{"mcpServers": {{NAME: {{...}}}}}}')
    specs = []
    for name, entry in servers.items():
        if isinstance(entry, dict) and entry.get("type") in ("stdio", "http", "streamable-http"):
            entry = {k: v for k, v in entry.items() if k != "type"}
        specs.append(server_spec(name, entry, str(path), "workspace"))
    return tuple(specs)


def merge(*groups: tuple[ServerSpec, ...], warn: Any) -> tuple[ServerSpec, ...]:
    """Earlier groups win a name: the user's own file before the workspace's. A
    workspace server may not trust itself."""
    out: dict[str, ServerSpec] = {}
    for group in groups:
        for spec in group:
            if spec.name in out:
                if out[spec.name].source != spec.source:
                    warn(
                        f"ignoring MCP server {spec.name!r} in {spec.source}: the one in"
                        f" {out[spec.name].source} has that name"
                    )
                continue
            if spec.origin == "workspace" and spec.trusted:
                warn(
                    f"ignoring trusted = true for MCP server {spec.name!r} in {spec.source}:"
                    " only your own config.toml can trust a server"
                )
                spec = ServerSpec(**{**spec.__dict__, "trusted": False})
            out[spec.name] = spec
    return tuple(out.values())


@dataclass(frozen=True)
class Verdict:
    """Whether a workspace server may start unasked, and if not, why (one clause)."""

    approved: bool
    why: str = ""


class Approvals:
    """Workspace servers the user allowed to start (a JSON file in bosun's data
    folder): per workspace and server, the command line's fingerprint and the state of
    the workspace files it runs from (`trust`), so a rewritten script is asked for
    again. An approval from before files were recorded approves nothing."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict[str, Any]:
        try:
            data = loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def verdict(self, workspace: Path, spec: Approvable) -> Verdict:
        entry = self._load().get(str(workspace))
        held = entry.get(spec.name) if isinstance(entry, dict) else None
        if not isinstance(held, dict) or held.get("command") != spec.fingerprint():
            return Verdict(False)
        pinned = held.get("files")
        if not isinstance(pinned, dict):
            return Verdict(False)
        differ = changed(pinned, server_files(spec, workspace))
        if differ:
            shown = ", ".join(differ[:3]) + (", …" if len(differ) > 3 else "")
            return Verdict(False, f"its files changed since you approved it ({shown})")
        return Verdict(True)

    def allowed(self, workspace: Path, spec: Approvable) -> bool:
        return self.verdict(workspace, spec).approved

    def allow(self, workspace: Path, spec: Approvable) -> None:
        data = self._load()
        entry = data.get(str(workspace))
        entry = entry if isinstance(entry, dict) else {}
        entry[spec.name] = {
            "command": spec.fingerprint(),
            "files": server_files(spec, workspace),
        }
        data[str(workspace)] = entry
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, self.path)
