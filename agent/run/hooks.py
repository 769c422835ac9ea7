"""Which configured hooks a session runs: the user's own always, the workspace's only
while the user's trust in them holds, checked every time one is about to run.

Hooks a workspace names (its `.bosun.toml`, its `.claude/settings.json`) are repository
content: a cloned repository must not run a program just by being opened, so they are
trusted exactly as workspace MCP servers are, by the same store (agent.mcp.servers'
`Approvals`, one owner of trust). An approval covers:

- the hook commands as they were shown (event, matcher, command line, time limit);
- the content of every workspace file those command lines can name: each word, the
  words of a command inside a word (`bash -c '…'`), `$PWD` and the project-folder
  variables expanded, a glob's matches, and the whole folder of every file named (a
  script's siblings: what it imports);
- one workspace: the one whose files named the hooks. They never run in another (a
  `--tasks` line or an MCP caller naming another workspace).

Trust is checked when the session starts and again before every run of a workspace
hook, since the model may have rewritten a script in between. A change asks again in
chat and skips the hooks headless, with one line saying which files changed. What a
program reads on its own (a Makefile, a conftest.py) is no word of its command line,
so workspace hooks run inside the sandbox, like the model's bash; where there is no
sandbox they run unasked only where nothing could have changed the workspace unseen
(approve ask or read-only) or where the user let everything run (approve auto).
"""

from __future__ import annotations

import glob
import hashlib
import os
import shlex
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.mcp.session import approvals
from agent.mcp.trust import changed, server_files
from agent.tools.hooks import HookSpec
from agent.tools.orchestrator import Gate
from agent.tools.permissions import decision
from agent.tools.sandbox import SandboxPolicy
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
    "${PWD}",
    "$PWD",
    "$(pwd)",
    "`pwd`",
)
MAX_DEPTH = 4  # commands inside words inside commands
MAX_GLOB = 200  # matches pinned for one glob
_GLOB = frozenset("*?[")
_OPERATORS = frozenset("();<>|&")


@dataclass(frozen=True)
class WorkspaceHooks:
    """The workspace's hooks as the approval store sees them (a `trust.Launch`): one
    entry whose "command line" is every path their commands can name, so those files
    are pinned as a server's are. The name cannot be an MCP server's (a space)."""

    specs: tuple[HookSpec, ...]
    workspace: Path
    name: str = "workspace hooks"
    command: str | None = None
    cwd: str | None = None
    url: str | None = None

    @property
    def args(self) -> tuple[str, ...]:
        root = Path(os.path.realpath(self.workspace))
        out: dict[str, None] = {}
        for spec in self.specs:
            for word in _words(spec.command, self.workspace, 0):
                for path in _reach(word, root):
                    out[path] = None
        return tuple(out)

    def fingerprint(self) -> str:
        what = [[s.event, s.matcher, s.command, s.timeout] for s in self.specs]
        return hashlib.sha256(json_line(what).encode()).hexdigest()[:16]


def _words(command: str, workspace: Path, depth: int) -> list[str]:
    """Every word of a command line, and of the command lines inside its words."""
    for name in PROJECT_DIR:
        command = command.replace(name, str(workspace))
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        split = list(lexer)
    except ValueError:  # an unclosed quote: the shell will say so; pin the words
        split = command.split()
    words: list[str] = []
    for word in split:
        if not word or set(word) <= _OPERATORS:
            continue
        if depth < MAX_DEPTH and any(c.isspace() or c in _OPERATORS for c in word):
            words += _words(word, workspace, depth + 1)  # bash -c '…', eval "…"
        words.append(word)
    return words


def _reach(word: str, root: Path) -> Iterator[str]:
    """The workspace paths one word may name: itself, a glob's matches and the folder
    it looks in, and each named file's folder; never the workspace itself, which the
    model is there to change."""
    words = [word.split("=", 1)[1]] if word.startswith("-") and "=" in word else []
    words.append(word)
    for each in words:
        if _GLOB & set(each):
            matches = sorted(glob.glob(each, root_dir=root))[:MAX_GLOB]
            fixed = each[: min(each.find(c) for c in _GLOB if c in each)]
            yield from _named(os.path.dirname(fixed) or ".", root)
            for match in matches:
                yield from _named(match, root)
        else:
            yield from _named(each, root)


def _named(path: str, root: Path) -> Iterator[str]:
    if "\0" in path:
        return
    full = Path(os.path.normpath(root / path))
    if full == root or not full.is_relative_to(root):
        return
    yield str(full)
    parent = full.parent
    if parent != root and full.is_file():
        yield str(parent)  # the script's folder: what it imports or runs beside it


def pins(entry: WorkspaceHooks) -> dict[str, str]:
    return server_files(entry, entry.workspace)


class HookTrust:
    """The trust in one workspace's hooks, for one session: decided at its start, and
    checked again before each run (`admit`) against what was trusted then.

    `--allow-workspace-hooks` trusts the hooks as they are when the run starts, without
    a stored approval; the files are pinned all the same, so a script the model
    rewrites during the run is not run."""

    def __init__(
        self,
        specs: Sequence[HookSpec],
        workspace: Path,
        *,
        allow_workspace: bool,
        ask: AskHooks | None,
        report: Callable[[str], None],
    ) -> None:
        self.own = tuple(s for s in specs if s.origin == "user")
        self.theirs = tuple(s for s in specs if s.origin == "workspace")
        self.home = workspace
        self.entry = WorkspaceHooks(self.theirs, workspace)
        self.allow_workspace = allow_workspace
        self.ask = ask
        self.report = report
        self.pinned: dict[str, str] | None = None  # None: not trusted

    def start(self) -> tuple[HookSpec, ...]:
        """The hooks this session has: the user's, and the workspace's if trusted now."""
        if not self.theirs:
            return self.own
        if self.allow_workspace:
            self.pinned = pins(self.entry)
            return (*self.own, *self.theirs)
        store = approvals()
        verdict = store.verdict(self.home, self.entry)
        if verdict.approved or (self.ask is not None and self.ask(self.theirs)):
            if not verdict.approved:
                store.allow(self.home, self.entry)
            self.pinned = pins(self.entry)
            return (*self.own, *self.theirs)
        files = ", ".join(sorted({s.source for s in self.theirs}))
        why = verdict.why or "not approved"
        n = len(self.theirs)
        self.report(NOT_APPROVED.format(n=n, s="" if n == 1 else "s", files=files, why=why))
        return self.own

    def admit(self, workspace: Path, approve: str, sandboxed: bool) -> str | None:
        """Whether the workspace's hooks may run now, in `workspace` under this approve
        mode and sandbox: None if so, else why not (one line)."""
        if self.pinned is None:
            return "they are not approved"
        if os.path.realpath(workspace) != os.path.realpath(self.home):
            return f"they were approved for {self.home}, and this runs in {workspace}"
        now = pins(self.entry)
        differ = changed(self.pinned, now)
        if differ:
            shown = ", ".join(differ[:3]) + (", …" if len(differ) > 3 else "")
            why = f"their files changed since they were approved ({shown})"
            if not self._again(why):
                return why
            approvals().allow(self.home, self.entry)
            self.pinned = now
        if not sandboxed and decision(approve, "write") == "allow" and approve != "auto":
            why = (
                "they would run outside the sandbox (off here) what the model may have"
                f" written unasked in {approve} mode; use --sandbox on, or --approve auto"
            )
            if not self._again(why):
                return why
        return None

    def settled(self, workspace: Path) -> None:
        """The hooks ran: the workspace as they left it is what is pinned now (a hook
        may write a file its own command line names, a report or a log)."""
        if self.pinned is not None and os.path.realpath(workspace) == os.path.realpath(self.home):
            self.pinned = pins(self.entry)

    def _again(self, why: str) -> bool:
        """Ask again where someone can answer."""
        if self.ask is None:
            return False
        self.report(f"workspace hooks: {why}")
        return self.ask(self.theirs)


@dataclass
class SessionTrust:
    """One agent's view of the trust (a `hooks.points.Trust`): its gate's approve mode
    and sandbox as they are at each run, since /approve and /sandbox change them."""

    trust: HookTrust
    gate: Gate

    def admit(self, workspace: Path) -> str | None:
        return self.trust.admit(workspace, self.gate.approve, self.gate.sandbox is not None)

    def settled(self, workspace: Path) -> None:
        self.trust.settled(workspace)

    def sandbox(self) -> SandboxPolicy | None:
        return self.gate.sandbox
