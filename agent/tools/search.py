"""Finding things: glob (names) and grep (contents), both blind to ignored files.

Ignore rules come from .gitignore files (root and nested, gitignore semantics in a
simple form: globs, `**`, trailing `/` for folders, `!` to re-include, last match
wins) and .git/info/exclude. bosun parses them itself instead of asking `git`, because
running git in an untrusted repository can run that repository's configured commands
(core.fsmonitor), and read-only mode promises no commands at all.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from agent.permissions import is_inside, open_in_workspace, resolve_in_workspace
from agent.tools.files import BINARY_SNIFF, is_binary
from agent.tools.registry import ToolContext, ToolError, tool

ALWAYS_SKIP = frozenset({".git", ".venv", "node_modules", "__pycache__"})
MAX_GLOB_RESULTS = 200
MAX_GREP_MATCHES = 100
MAX_GREP_FILE_BYTES = 2 * 1024 * 1024
MAX_WALK_FILES = 50_000
MAX_MATCH_CHARS = 300
SKIPPED_NOTE = "ignored files and .git, .venv, node_modules, __pycache__ are not searched"


def translate(pattern: str) -> re.Pattern[str]:
    """A glob over "/"-separated paths as a regex: `*` and `?` stay within one folder,
    `**` crosses folders, `[...]` is a character class."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**", i):
            at_start = i == 0 or pattern[i - 1] == "/"
            if at_start and pattern.startswith("**/", i):
                out.append("(?:.*/)?")
                i += 3
                continue
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        elif c == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re.compile("".join(out) + r"\Z", re.DOTALL)
    except re.error as exc:
        raise ToolError(f"bad glob pattern {pattern!r}: {exc}") from None


@dataclass(frozen=True)
class Rule:
    base: str  # folder of the .gitignore that holds it, "" for the root
    regex: re.Pattern[str]
    anchored: bool  # matched against the path below base, else against the name
    negate: bool
    dir_only: bool

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        if self.base:
            if not rel.startswith(self.base + "/"):
                return False
            rel = rel[len(self.base) + 1 :]
        target = rel if self.anchored else rel.rsplit("/", 1)[-1]
        return self.regex.match(target) is not None


def parse_ignore(text: str, base: str) -> list[Rule]:
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        line = line[1:] if negate else line.removeprefix("\\")
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        line = line.lstrip("/")
        if line:
            rules.append(Rule(base, translate(line), anchored, negate, dir_only))
    return rules


def _read_rules(root: Path, base: str) -> list[Rule]:
    rules: list[Rule] = []
    folder = root / base if base else root
    for name in (".gitignore", ".git/info/exclude") if not base else (".gitignore",):
        path = folder / name
        if path.is_file() and is_inside(root, path.resolve()):
            rules += parse_ignore(path.read_text("utf-8", errors="replace"), base)
    return rules


def _ignored(rules: list[Rule], rel: str, is_dir: bool) -> bool:
    verdict = False
    for rule in rules:
        if rule.matches(rel, is_dir):
            verdict = not rule.negate
    return verdict


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() if path != root else ""


def walk_files(root: Path, start: Path) -> tuple[list[str], bool]:
    """Workspace-relative paths of the files under `start` that are not ignored, sorted,
    and whether the walk saw everything (it stops after MAX_WALK_FILES).

    Symlinked folders are not followed (no loops, no way out); symlinked files are
    listed only when they point inside the workspace.
    """
    prefix = _rel(root, start)
    parts = prefix.split("/") if prefix else []
    rules = _read_rules(root, "")
    for i in range(len(parts)):  # the folders from the root down to `start`
        rules += _read_rules(root, "/".join(parts[: i + 1]))
    found: list[str] = []
    for folder, dirs, files in os.walk(start, followlinks=False):
        here = _rel(root, Path(folder))
        if here and here != prefix:
            rules = rules + _read_rules(root, here)
        lead = f"{here}/" if here else ""
        dirs[:] = [d for d in dirs if d not in ALWAYS_SKIP and not _ignored(rules, lead + d, True)]
        for name in files:
            rel = lead + name
            if _ignored(rules, rel, False):
                continue
            full = Path(folder, name)
            if full.is_symlink() and not is_inside(root, full.resolve()):
                continue
            if len(found) >= MAX_WALK_FILES:
                return sorted(found), False
            found.append(rel)
    return sorted(found), True


def _partial(complete: bool) -> list[str]:
    return [] if complete else [f"(stopped looking after {MAX_WALK_FILES} files; narrow it)"]


def _name_pattern(pattern: str) -> tuple[re.Pattern[str], bool]:
    """(regex, anchored): a pattern without "/" matches a file name at any depth."""
    if "\x00" in pattern:
        raise ToolError("pattern contains a NUL byte")
    anchored = "/" in pattern
    return translate(pattern.removeprefix("./")), anchored


def _matches(regex: re.Pattern[str], anchored: bool, rel: str) -> bool:
    return regex.match(rel if anchored else rel.rsplit("/", 1)[-1]) is not None


@tool("read")
def glob(ctx: ToolContext, pattern: str) -> str:
    """Find files by name pattern, e.g. "*.py" (any depth) or "src/**/test_*.py".

    Args:
        pattern: glob relative to the workspace root; without "/" it matches file names at any depth
    """
    root = ctx.workspace.resolve()
    for spelling in {str(root), str(ctx.workspace)}:  # the workspace's own absolute path
        pattern = pattern.removeprefix(spelling.rstrip("/") + "/")
    if pattern.startswith(("/", "~")) or ".." in pattern.split("/"):
        raise ToolError(f"{pattern!r} reaches outside the workspace; use a relative pattern")
    regex, anchored = _name_pattern(pattern)
    files, complete = walk_files(root, root)
    found = [rel for rel in files if _matches(regex, anchored, rel)]
    if not found:
        return "\n".join([f"(no files match {pattern!r}; {SKIPPED_NOTE})", *_partial(complete)])
    extra = len(found) - MAX_GLOB_RESULTS
    notes = [f"({extra} more not shown; narrow the pattern)"] if extra > 0 else []
    return "\n".join(found[:MAX_GLOB_RESULTS] + notes + _partial(complete))


def _grep_file(root: Path, rel: str, regex: re.Pattern[str], out: list[str], cap: int) -> None:
    try:
        fd = open_in_workspace(root, rel, os.O_RDONLY | os.O_NONBLOCK)
    except (ToolError, OSError):
        return  # vanished or swapped for a symlink since the walk: not ours to read
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MAX_GREP_FILE_BYTES + 1)
    if len(data) > MAX_GREP_FILE_BYTES or is_binary(data[:BINARY_SNIFF]):
        return
    for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if regex.search(line):
            if len(out) >= cap:
                return
            text = line if len(line) <= MAX_MATCH_CHARS else line[:MAX_MATCH_CHARS] + " …"
            out.append(f"{rel}:{n}: {text}")


@tool("read")
def grep(ctx: ToolContext, pattern: str, path: str = ".", glob: str = "") -> str:
    """Search file contents with a regular expression; prints path:line: text.

    Args:
        pattern: Python regular expression, e.g. "def \\w+_file" or "(?i)todo"
        path: file or folder to search, relative to the workspace root
        glob: only search files matching this glob, e.g. "*.py"
    """
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"bad regular expression {pattern!r}: {exc}") from None
    root = ctx.workspace.resolve()
    start = resolve_in_workspace(root, path)
    if not start.exists():
        raise ToolError(f"{path}: no such file or folder")
    # A file named explicitly is searched even if ignored.
    files, complete = ([_rel(root, start)], True) if start.is_file() else walk_files(root, start)
    if glob:
        name_re, anchored = _name_pattern(glob)
        files = [rel for rel in files if _matches(name_re, anchored, rel)]
    out: list[str] = []
    for rel in files:
        _grep_file(root, rel, regex, out, MAX_GREP_MATCHES + 1)
        if len(out) > MAX_GREP_MATCHES:
            out[MAX_GREP_MATCHES:] = [
                f"(stopped at {MAX_GREP_MATCHES} matches; narrow the pattern, path or glob)"
            ]
            break
    if not out:
        out = [f"(no matches for {pattern!r}; {SKIPPED_NOTE})"]
    return "\n".join(out + _partial(complete))
