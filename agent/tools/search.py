"""Finding things: glob (names) and grep (contents), both blind to ignored files.

Both run ripgrep (`agent.tools.rg`): linear-time regexes, .gitignore read without
running git, no symlink followed, and a time and memory bound on every call. What the
model sees is capped: the first matches, and how many more there were.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agent.tools.confine import resolve_in_workspace
from agent.tools.recheck import Match, confirmed, still_inside
from agent.tools.registry import ToolContext, ToolError, tool
from agent.tools.rg import FIFO_NOTE, SKIP_DIRS, check_pattern, run_rg

MAX_GLOB_RESULTS = 200
MAX_GREP_MATCHES = 100
MAX_WALK_FILESIZE = "10M"  # in a walk; a file named explicitly is searched whole
MAX_MATCH_CHARS = 300
MAX_IGNORE_FILE_BYTES = 1024 * 1024
MAX_GLOB_FILES = 10_000  # files a grep's glob may select
SKIPPED_NOTE = f"ignored files and {', '.join(SKIP_DIRS)} are not searched"


def ignore_args(root: Path) -> tuple[list[str], list[str]]:
    """Ignore files at the root too large to be real are not applied (a 64 MB
    .gitignore is an attack on the matcher, not a list of files): (rg flags, notes)."""
    for name in (".gitignore", ".ignore", ".rgignore", ".git/info/exclude"):
        try:
            info = (root / name).lstat()
        except OSError:
            continue
        size = info.st_size
        if stat.S_ISFIFO(info.st_mode):
            return ["--no-ignore"], [FIFO_NOTE]
        if size > MAX_IGNORE_FILE_BYTES:
            note = f"(ignore files were not applied: {name} is {size // 1024 // 1024} MB)"
            return ["--no-ignore"], [note]
    return [], []


def _quoted(pattern: str, limit: int = 80) -> str:
    """A pattern named in an error, cut: the model wrote it and need not see it again."""
    return repr(pattern if len(pattern) <= limit else pattern[:limit] + "…")


def _escape(c: str) -> str:
    return c if c.isalnum() or c == "_" else "\\" + c


def _check_ranges(pattern: str, body: str) -> None:
    """A reversed range such as [z-a] matches nothing in git and is an error in a regex:
    say so in words instead of passing on the regex engine's complaint."""
    k = 0
    while k + 2 < len(body):
        if body[k + 1] == "-":
            low, high = body[k], body[k + 2]
            if low > high:
                raise ToolError(
                    f"bad glob pattern {_quoted(pattern)}: the range {low}-{high} is reversed"
                )
            k += 3
        else:
            k += 1


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
            _check_ranges(pattern, body)
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
        raise ToolError(f"{_quoted(pattern)} reaches outside the workspace; use a relative pattern")
    check_pattern(pattern, "glob")
    return pattern


def _filter(pattern: str) -> list[str]:
    """rg arguments that keep the file names (NUL-separated) that match the glob."""
    regex = glob_regex(pattern.removeprefix("./"), anchored=pattern.startswith("./"))
    return ["--null-data", f"--regexp={regex}"]


def _files(
    root: Path, flags: list[str], pattern: str, cap: int, *, recheck: bool = True
) -> tuple[list[str], int, list[str]]:
    """(the first `cap` non-ignored files matching `pattern`, how many matched, notes);
    `recheck`: only names that still open inside the workspace (see agent.tools.recheck)."""
    found = run_rg([*flags, "--files", "--null"], root, cap, _filter(pattern))
    if found.error:
        raise ToolError(f"bad glob pattern {_quoted(pattern)}: {found.error}")
    names = [f.removeprefix("./") for f in found.lines]
    if recheck:
        names = [n for n in names if still_inside(root, n)]
    return names, found.total, found.notes


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
    flags, notes = ignore_args(root)
    found, total, more_notes = _files(root, flags, pattern, MAX_GLOB_RESULTS)
    notes += more_notes
    if not found:
        return "\n".join([f"(no files match {_quoted(pattern)}; {SKIPPED_NOTE})", *notes])
    extra = total - len(found)
    more = [f"({extra} more not shown; narrow the pattern)"] if extra > 0 else []
    return "\n".join(found + more + notes)


def _parse_match(line: str) -> Match | None:
    """rg's `path\\0line:text` (or `path: binary file matches …`, number 0)."""
    path, sep, rest = line.partition("\x00")
    if not sep:
        path, sep, rest = line.partition(": binary file matches")
        return Match(path.removeprefix("./"), 0, "") if sep else None
    number, _, text = rest.partition(":")
    if not number.isdigit():
        return None
    return Match(path.removeprefix("./"), int(number), text)


def _shown(root: Path, lines: list[str]) -> list[str]:
    """The matches that read the same again through a safe descriptor, as
    `path:line: text` with the text cut to a sane width."""
    matches = [m for line in lines if (m := _parse_match(line)) is not None]
    good = confirmed(root, [m for m in matches if m.number])
    out = []
    for m in matches:
        if not m.number:
            if still_inside(root, m.path):
                out.append(f"{m.path}: binary file matches; not shown")
            continue
        if m not in good:
            continue
        text = m.text if len(m.text) <= MAX_MATCH_CHARS else m.text[:MAX_MATCH_CHARS] + " …"
        out.append(f"{m.path}:{m.number}: {text}")
    return out


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
    flags, notes = ignore_args(root)
    args = [*flags, "--line-number", "--with-filename", "--no-heading", "--null"]
    args += ["--max-columns=2000", "--max-columns-preview"]
    skipped = []
    if start.is_dir():
        args.append(f"--max-filesize={MAX_WALK_FILESIZE}")
        skipped.append(f"(files over {MAX_WALK_FILESIZE}B are skipped in a folder search)")
    elif not start.is_file():  # a FIFO would block the search until it timed out
        raise ToolError(f"{path} is not a regular file")
    elif not os.access(start, os.R_OK):
        raise ToolError(f"{path} cannot be read")
    targets = [target]
    if glob:
        names, matched, more_notes = _files(
            root, flags, _relative_pattern(ctx, glob), MAX_GLOB_FILES, recheck=False
        )
        notes += more_notes
        targets = [n for n in names if _under(n, target)]
        if not targets:
            return f"(no files match {glob!r} in {path}; {SKIPPED_NOTE})"
        if matched > MAX_GLOB_FILES:
            notes.append(f"(only the first {MAX_GLOB_FILES} files matching {glob!r} searched)")
    lines: list[str] = []
    total, error = 0, ""
    for k in range(0, len(targets), 1_000):  # a long file list goes in batches
        batch = targets[k : k + 1_000]
        found = run_rg([*args, "--regexp", pattern, "--", *batch], root, MAX_GREP_MATCHES)
        lines += found.lines[: MAX_GREP_MATCHES - len(lines)]
        total, error = total + found.total, found.error
        notes += [n for n in found.notes if n not in notes]
        if error or total > MAX_GREP_MATCHES:
            break
    if error and not lines:
        raise ToolError(f"bad regular expression {_quoted(pattern)}: {error}")
    out = _shown(root, lines)
    if total > MAX_GREP_MATCHES:
        out.append(f"(stopped at {MAX_GREP_MATCHES} matches; narrow the pattern, path or glob)")
    if not out:
        return "\n".join([f"(no matches for {_quoted(pattern)}; {SKIPPED_NOTE})", *skipped, *notes])
    return "\n".join(out + notes)
