"""Which configured hooks a session runs: the user's own always, the workspace's only
once the user trusted them.

Hooks a workspace names (its `.bosun.toml`, its `.claude/settings.json`) are repository
content: a cloned repository must not run a program just by being opened, so they are
trusted exactly as workspace MCP servers are, by the same store (agent.mcp.servers'
`Approvals`, one owner of trust): in chat the user is asked once, and the approval is
remembered for those exact command lines and the content of the workspace files they
name (a rewritten hook script is asked for again); headless, they run only with
`--allow-workspace-hooks` or an approval given before. The workspace's hooks are one
approval, all or none, since they are one file's worth of configuration.
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.mcp.session import approvals
from agent.tools.hooks import HookSpec
from agent.untrusted import json_line

AskHooks = Callable[[Sequence[HookSpec]], bool]
NOT_APPROVED = (
    "{n} hook{s} named by the workspace ({files}) not run: {why}; they run once approved"
    " in `bosun chat` or with --allow-workspace-hooks"
)
PROJECT_DIR = (
    "${CLAUDE_PROJECT_DIR}",
    "$CLAUDE_PROJECT_DIR",
    "${BOSUN_WORKSPACE}",
    "$BOSUN_WORKSPACE",
)


@dataclass(frozen=True)
class WorkspaceHooks:
    """The workspace's hooks as the approval store sees them (a `trust.Launch`): one
    entry whose "command line" is every word of every hook command, so the files they
    name are pinned as a server's are. The name cannot be an MCP server's (a space)."""

    specs: tuple[HookSpec, ...]
    workspace: Path
    name: str = "workspace hooks"
    command: str | None = None
    cwd: str | None = None
    url: str | None = None

    @property
    def args(self) -> tuple[str, ...]:
        words: list[str] = []
        for spec in self.specs:
            try:
                split = shlex.split(spec.command)
            except ValueError:  # an unclosed quote: the shell will say so; pin the words
                split = spec.command.split()
            words += [_expand(w, self.workspace) for w in split]
        return tuple(words)

    def fingerprint(self) -> str:
        what = [[s.event, s.matcher, s.command, s.timeout] for s in self.specs]
        return hashlib.sha256(json_line(what).encode()).hexdigest()[:16]


def _expand(word: str, workspace: Path) -> str:
    """A hook names its scripts by the project folder's variable: pin the file it means."""
    for name in PROJECT_DIR:
        word = word.replace(name, str(workspace))
    return word


def trusted_hooks(
    specs: Sequence[HookSpec],
    workspace: Path,
    *,
    allow_workspace: bool,
    ask: AskHooks | None,
    report: Callable[[str], None],
) -> tuple[HookSpec, ...]:
    """The hooks to run: the user's, and the workspace's where trusted (asking through
    `ask` where there is someone to ask); a line to `report` for the ones left out."""
    own = tuple(s for s in specs if s.origin == "user")
    theirs = tuple(s for s in specs if s.origin == "workspace")
    if not theirs or allow_workspace:
        return (*own, *theirs)
    entry = WorkspaceHooks(theirs, workspace)
    store = approvals()
    verdict = store.verdict(workspace, entry)
    if verdict.approved:
        return (*own, *theirs)
    if ask is not None and ask(theirs):
        store.allow(workspace, entry)
        return (*own, *theirs)
    files = ", ".join(sorted({s.source for s in theirs}))
    why = verdict.why or "not approved"
    n = len(theirs)
    report(NOT_APPROVED.format(n=n, s="" if n == 1 else "s", files=files, why=why))
    return own
