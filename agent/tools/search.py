"""Finding things: glob (names) and grep (contents), both blind to ignored files.

Both run ripgrep (`agent.tools.rg`): linear-time regexes, .gitignore read without
running git, no symlink followed, and a time and memory bound on every call. What the
model sees is capped: the first matches, and how many more there were.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent.permissions import resolve_in_workspace
from agent.tools.registry import ToolContext, ToolError, tool
from agent.tools.rg import SKIP_DIRS, check_pattern, run_rg

MAX_GLOB_RESULTS = 200
MAX_GREP_MATCHES = 100
MAX_WALK_FILESIZE = "10M"  # in a walk; a file named explicitly is searched whole
MAX_MATCH_CHARS = 300
MAX_IGNORE_FILE_BYTES = 1024 * 1024
MAX_GLOB_FILES = 10_000  # files a grep's glob may select
SKIPPED_NOTE = f"ignored files and {', '.join(SKIP_DIRS)} are not searched"


def _ignore_args(root: Path) -> tuple[list[str], list[str]]:
    """Ignore files at the root too large to be real are not applied (a 64 MB
    .gitignore is an attack on the matcher, not a list of files): (rg flags, notes)."""
    for name in (".gitignore", ".ignore", ".rgignore", ".git/info/exclude"):
        try:
            size = (root / name).lstat().st_size
        except OSError:
            continue
        if size > MAX_IGNORE_FILE_BYTES:
            note = f"(ignore files were not applied: {name} is {size // 1024 // 1024} MB)"
            return ["--no-ignore"], [note]
    return [], []


def _escape(c: str) -> str:
    return c if c.isalnum() or c == "_" else "\\" + c


def glob_regex(pattern: str, anchored: bool = False) -> str:
    """A glob over "/"-separated paths as a (Rust) regex over a whole path: `*` and `?`
    stay within one folder, `**` crosses folders, `[...]` is a character class, and a
    pattern without "/" matches a file name at any depth. ripgrep runs it, in linear
    time whatever the pattern."""
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
            out.append(_escape(pattern[i]))
        elif c == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            items = "".join(ch if ch == "-" else _escape(ch) for ch in body)
            out.append("[" + ("^" if negate else "") + items + "]")
            i = end
        else:
            out.append(_escape(c))
        i += 1
    lead = "^" if anchored or "/" in pattern else "(?:^|/)"
    return lead + "(?:" + "".join(out) + ")$"


def _relative_pattern(ctx: ToolContext, pattern: str) -> str:
    root = ctx.workspace.resolve()
    for spelling in {str(root), str(ctx.workspace)}:  # the workspace's own absolute path
        if pattern.startswith(spelling.rstrip("/") + "/"):
            pattern = "./" + pattern[len(spelling.rstrip("/")) + 1 :]
    if pattern.startswith(("/", "~")) or ".." in pattern.split("/"):
        raise ToolError(f"{pattern!r} reaches outside the workspace; use a relative pattern")
    check_pattern(pattern, "glob")
    return pattern


def _filter(pattern: str) -> list[str]:
    """rg arguments that keep the file names (NUL-separated) that match the glob."""
    regex = glob_regex(pattern.removeprefix("./"), anchored=pattern.startswith("./"))
    return ["--null-data", f"--regexp={regex}"]


def _files(root: Path, flags: list[str], pattern: str, cap: int) -> tuple[list[str], int]:
    """(the first `cap` non-ignored files matching `pattern`, how many matched)."""
    found, total, error = run_rg([*flags, "--files", "--null"], root, cap, _filter(pattern))
    if error:
        raise ToolError(f"bad glob pattern {pattern!r}: {error}")
    return [f.removeprefix("./") for f in found], total


def _under(rel: str, folder: str) -> bool:
    return folder == "." or rel == folder or rel.startswith(folder.rstrip("/") + "/")


@tool("read")
def glob(ctx: ToolContext, pattern: str) -> str:
    """Find files by name pattern, e.g. "*.py" (any depth) or "src/**/test_*.py".

    Args:
        pattern: glob relative to the workspace root; without "/" it matches file names at any depth
    """
    root = ctx.workspace.resolve()
    pattern = _relative_pattern(ctx, pattern)
    flags, notes = _ignore_args(root)
    found, total = _files(root, flags, pattern, MAX_GLOB_RESULTS)
    if not found:
        return "\n".join([f"(no files match {pattern!r}; {SKIPPED_NOTE})", *notes])
    extra = total - len(found)
    more = [f"({extra} more not shown; narrow the pattern)"] if extra > 0 else []
    return "\n".join(found + more + notes)


def _format_match(line: str) -> str | None:
    """rg's `path\\0line:text` as `path:line: text`, the text cut to a sane width."""
    path, sep, rest = line.partition("\x00")
    if not sep:
        return None
    number, _, text = rest.partition(":")
    if len(text) > MAX_MATCH_CHARS:
        text = text[:MAX_MATCH_CHARS] + " …"
    return f"{path.removeprefix('./')}:{number}: {text}"


@tool("read")
def grep(ctx: ToolContext, pattern: str, path: str = ".", glob: str = "") -> str:
    """Search file contents with a regular expression; prints path:line: text.

    Args:
        pattern: regular expression (ripgrep syntax, no look-around), e.g. "def \\w+" or "(?i)todo"
        path: file or folder to search, relative to the workspace root
        glob: only search files matching this glob, e.g. "*.py"
    """
    check_pattern(pattern, "pattern")
    root = ctx.workspace.resolve()
    start = resolve_in_workspace(root, path)
    if not start.exists():
        raise ToolError(f"{path}: no such file or folder")
    target = start.relative_to(root).as_posix() if start != root else "."
    flags, notes = _ignore_args(root)
    args = [*flags, "--line-number", "--with-filename", "--no-heading", "--null"]
    args += ["--max-columns=2000", "--max-columns-preview"]
    skipped = []
    if start.is_dir():
        args.append(f"--max-filesize={MAX_WALK_FILESIZE}")
        skipped.append(f"(files over {MAX_WALK_FILESIZE}B are skipped in a folder search)")
    elif not os.access(start, os.R_OK):
        raise ToolError(f"{path} cannot be read")
    targets = [target]
    if glob:
        names, matched = _files(root, flags, _relative_pattern(ctx, glob), MAX_GLOB_FILES)
        targets = [n for n in names if _under(n, target)]
        if not targets:
            return f"(no files match {glob!r} in {path}; {SKIPPED_NOTE})"
        if matched > MAX_GLOB_FILES:
            notes.append(f"(only the first {MAX_GLOB_FILES} files matching {glob!r} searched)")
    lines: list[str] = []
    total, error = 0, ""
    for k in range(0, len(targets), 1_000):  # a long file list goes in batches
        batch = targets[k : k + 1_000]
        got, count, error = run_rg(
            [*args, "--regexp", pattern, "--", *batch], root, MAX_GREP_MATCHES
        )
        lines += got[: MAX_GREP_MATCHES - len(lines)]
        total += count
        if error or total > MAX_GREP_MATCHES:
            break
    if error and not lines:
        raise ToolError(f"bad regular expression {pattern!r}: {error}")
    out = [m for line in lines if (m := _format_match(line)) is not None]
    if total > MAX_GREP_MATCHES:
        out.append(f"(stopped at {MAX_GREP_MATCHES} matches; narrow the pattern, path or glob)")
    if not out:
        return "\n".join([f"(no matches for {pattern!r}; {SKIPPED_NOTE})", *skipped, *notes])
    return "\n".join(out + notes)
