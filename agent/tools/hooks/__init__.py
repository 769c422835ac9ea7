"""Hooks: commands the user configured to run at points of a session (Claude Code's
shape). `spec` reads them from config files, `runner` runs one command, bounded, and
`points` says where they run and what their answers do."""

from agent.tools.hooks.points import HookBlocked, Hooks, Verdict
from agent.tools.hooks.spec import EVENTS, HookSpec, parse_hooks, read_claude_settings

__all__ = [
    "EVENTS",
    "HookBlocked",
    "HookSpec",
    "Hooks",
    "Verdict",
    "parse_hooks",
    "read_claude_settings",
]
