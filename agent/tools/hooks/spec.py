"""Which hooks are configured: `[[hooks.EVENT]]` tables of config.toml / .bosun.toml, and
the `hooks` of a workspace's `.claude/settings.json` (Claude Code's shape), checked.

Both shapes carry the same thing, so people can bring the hooks they already wrote: an
event, a matcher on the tool name (Claude Code's semantics: empty or "*" matches every
tool, anything else is a regular expression that must match the whole name), a shell
command and a time limit. bosun's own files are strict (an unknown key is an error that
names the file); a Claude Code settings file is written for Claude Code, so its events
and hook types bosun does not have are skipped with a warning, not refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agent.errors import UsageError
from agent.untrusted import json_file

Origin = Literal["user", "workspace"]
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "Stop")
CLAUDE_SETTINGS = Path(".claude") / "settings.json"
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
MAX_MATCHER = 256  # characters: a tool name is short, a matcher need not be long
_KEYS = ("matcher", "command", "timeout", "hooks", "type")
# Claude Code's tool names, for matchers written for it (a .claude/settings.json, or a
# habit): a matcher matches a bosun tool by bosun's name or by one of these.
CLAUDE_NAMES: dict[str, tuple[str, ...]] = {
    "bash": ("Bash",),
    "read_file": ("Read",),
    "write_file": ("Write",),
    "edit_file": ("Edit", "MultiEdit"),
    "apply_patch": ("Edit", "MultiEdit"),
    "list_dir": ("LS",),
    "glob": ("Glob",),
    "grep": ("Grep",),
}


@dataclass(frozen=True)
class HookSpec:
    event: str
    command: str
    matcher: str = ""  # "" or "*": every tool (or every source / trigger)
    timeout: float = DEFAULT_TIMEOUT
    origin: Origin = "user"
    source: str = ""  # the file that named it

    @property
    def name(self) -> str:
        """What events and listings call it: the command, clipped to one short line."""
        first = " ".join(self.command.split())
        return first if len(first) <= 60 else first[:59] + "…"

    def matches(self, subject: str | None) -> bool:
        """Whether this hook is for `subject` (a tool's name, SessionStart's source,
        PreCompact's trigger; None for events that have none: always)."""
        if subject is None or self.matcher in ("", "*"):
            return True
        pattern = re.compile(self.matcher)
        names = (subject, *CLAUDE_NAMES.get(subject, ()))
        return any(pattern.fullmatch(n) for n in names)


def _timeout(value: Any, where: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 < value <= MAX_TIMEOUT
    ):
        raise UsageError(f"{where}.timeout must be a number of seconds (0 < s <= 600)")
    return float(value)


def _matcher(value: Any, where: str) -> str:
    if not isinstance(value, str) or len(value) > MAX_MATCHER or "\0" in value:
        raise UsageError(f"{where}.matcher must be a tool name or pattern (at most 256 characters)")
    if value not in ("", "*"):
        try:
            re.compile(value)
        except re.error as exc:
            raise UsageError(f"{where}.matcher is not a valid pattern: {exc}") from None
    return value


def _command(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise UsageError(f"{where}.command must be a non-empty string")
    return value


def _entry(
    event: str, table: Any, where: str, source: str, origin: Origin, skip: Callable[[str], None]
) -> list[HookSpec]:
    """One `[[hooks.EVENT]]` table: `command` itself, or Claude Code's `hooks` list of
    {type = "command", command, timeout} under one matcher."""
    if not isinstance(table, Mapping):
        raise UsageError(f"{where} must be a table")
    unknown = [k for k in table if k not in _KEYS]
    if unknown:
        raise UsageError(
            f"{where}: unknown setting {unknown[0]!r} (known: matcher, command, timeout)"
        )
    matcher = _matcher(table.get("matcher", ""), where)
    if ("command" in table) == ("hooks" in table):
        raise UsageError(f"{where} needs exactly one of command or (Claude Code's) hooks")
    inner = table.get("hooks", [table])
    if not isinstance(inner, list):
        raise UsageError(f"{where}.hooks must be a list")
    out = []
    for i, hook in enumerate(inner):
        at = f"{where}.hooks[{i}]" if "hooks" in table else where
        if not isinstance(hook, Mapping):
            raise UsageError(f"{at} must be a table")
        kind = hook.get("type", "command")
        if kind != "command":
            skip(f"{at}: hook type {kind!r} is not one bosun runs (only command)")
            continue
        timeout = _timeout(hook["timeout"], at) if "timeout" in hook else DEFAULT_TIMEOUT
        out.append(
            HookSpec(event, _command(hook.get("command"), at), matcher, timeout, origin, source)
        )
    return out


def parse_hooks(
    value: Any, source: str, origin: Origin, skip: Callable[[str], None] | None = None
) -> tuple[HookSpec, ...]:
    """The `hooks` table of a config file: {EVENT: [table, …]}. `skip` set: events and
    hook types bosun does not have are reported there and left out (a file written for
    Claude Code); unset, they are errors."""
    if not isinstance(value, Mapping):
        raise UsageError(f"{source}: hooks must be a table of [[hooks.EVENT]] tables")
    out: list[HookSpec] = []
    for event, tables in value.items():
        where = f"{source}: hooks.{event}"
        if event not in EVENTS:
            if skip is None:
                raise UsageError(f"{where}: unknown event (known: {', '.join(EVENTS)})")
            skip(f"{where}: bosun has no such event; skipped")
            continue
        if not isinstance(tables, list):
            raise UsageError(f"{where} must be a list of tables ([[hooks.{event}]])")
        for i, table in enumerate(tables):
            out += _entry(event, table, f"{where}[{i}]", source, origin, skip or _refuse)
    return tuple(out)


def _refuse(message: str) -> None:
    raise UsageError(message)


def read_claude_settings(
    workspace: Path, read: Callable[[Path], str], warn: Callable[[str], None]
) -> tuple[HookSpec, ...]:
    """The hooks of a workspace's `.claude/settings.json` (`read`: the config reader, a
    regular file of at most 64 kB); its other settings are Claude Code's own."""
    path = workspace / CLAUDE_SETTINGS
    try:
        data = json_file(path, read)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if data is None:
        return ()
    if not isinstance(data, dict):
        raise UsageError(f"{path} must hold a JSON object")
    if "hooks" not in data:
        return ()
    return parse_hooks(data["hooks"], str(path), "workspace", skip=warn)
