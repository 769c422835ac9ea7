"""Code intelligence tools: `outline` (a file's definitions) and `find_symbol` (where a
name is defined and used), from the repository map's tree-sitter symbols.

They answer what grep answers only approximately (grep finds the string "parse" in
comments and in "parser"): definitions are definitions, uses are identifiers. Both
read through agent.tools.confine and cap what they return.
"""

from __future__ import annotations

import os
import re

from agent.tools.confine import open_in_workspace, resolve_in_workspace
from agent.tools.registry import ToolContext, ToolError, tool
from agent.tools.repomap import scan
from agent.tools.repomap.languages import EXTENSIONS, language_of
from agent.tools.repomap.scan import MAX_FILE_BYTES, SKIP_REASONS, parse_file

MAX_OUTLINE = 300  # definitions listed
MAX_DEFINED = 50  # places a name is defined, listed
MAX_USES = 60  # lines that use it, listed
MAX_USE_FILES = 200  # files read to find those lines
MAX_NAME = 200
_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:[.:][A-Za-z_$][\w$]*)*")


@tool("read")
def outline(ctx: ToolContext, path: str) -> str:
    """List the classes, functions, methods and constants of a source file, with lines.

    Args:
        path: source file path relative to the workspace root
    """
    root = ctx.workspace.resolve()
    real = resolve_in_workspace(root, path)
    if not real.exists():
        raise ToolError(f"{path}: no such file; use glob to find it")
    if real.is_dir():
        raise ToolError(f"{path} is a directory; outline takes a source file")
    rel = real.relative_to(root).as_posix()
    lang = language_of(rel)
    if lang is None:
        known = " ".join(sorted(EXTENSIONS))
        raise ToolError(f"{path}: not a source file outline knows ({known}); use read_file")
    entry = parse_file(root, rel, lang)
    if entry["skip"]:
        raise ToolError(f"{path} is not outlined: {SKIP_REASONS[entry['skip']]}; use read_file")
    defs = entry["defs"]
    if not defs:
        return f"(no definitions found in {rel})"
    lines = [f"{line}: {kind} {name} | {sig}" for name, kind, line, sig in defs[:MAX_OUTLINE]]
    if len(defs) > MAX_OUTLINE:
        lines.append(f"({len(defs) - MAX_OUTLINE} more not shown; read_file with an offset)")
    if entry["note"]:
        lines.append(f"({entry['note']}: some definitions may be missing)")
    return "\n".join(lines)


def _use_lines(ctx: ToolContext, rel: str, word: re.Pattern[str], room: int) -> list[str]:
    """Up to `room` lines of `rel` that use the name, read like any workspace file."""
    try:
        fd = open_in_workspace(ctx.workspace, rel, os.O_RDONLY | os.O_NONBLOCK)
    except (ToolError, OSError):
        return []
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MAX_FILE_BYTES)
    out = []
    for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if word.search(line):
            text = line.strip()
            out.append(f"{rel}:{n}: {text if len(text) <= 200 else text[:200] + ' …'}")
            if len(out) >= room:
                break
    return out


def _defines(files: dict, path: str, name: str) -> bool:
    return any(d[0] == name for d in files[path]["defs"])


@tool("read")
def find_symbol(ctx: ToolContext, name: str) -> str:
    """Find where a function, class, method or constant is defined and where the code uses it.

    Args:
        name: the symbol's name, e.g. "parse_config" or "UserService"
    """
    if not _NAME.fullmatch(name) or len(name) > MAX_NAME:
        raise ToolError(f"{name[:60]!r} is not a symbol name; find_symbol takes one identifier")
    short = re.split(r"[.:]", name)[-1]  # "Class.method" -> "method"
    found = scan(ctx.workspace)
    defined = [
        f"{path}:{line}: {sig}  ({kind})"
        for path, entry in found.files.items()
        for n, kind, line, sig in entry["defs"]
        if n == short
    ]
    owner = re.split(r"[.:]", name)[0] if short != name else ""
    owned = [d for d in defined if owner and _defines(found.files, d.split(":", 1)[0], owner)]
    defined = owned or defined  # "Agent.run": the run of the file that defines Agent
    users = sorted(
        (
            (path, entry["refs"][short])
            for path, entry in found.files.items()
            if short in entry["refs"]
        ),
        key=lambda pu: (-pu[1], pu[0]),
    )
    word = re.compile(r"(?<![\w$])" + re.escape(short) + r"(?![\w$])")
    uses: list[str] = []
    for path, _ in users[:MAX_USE_FILES]:
        if len(uses) >= MAX_USES:
            break
        uses += _use_lines(ctx, path, word, MAX_USES - len(uses))
    out = [f"Defined ({len(defined)}):" if defined else f"(no definition of {short!r} found)"]
    out += defined[:MAX_DEFINED]
    if len(defined) > MAX_DEFINED:
        out.append(f"({len(defined) - MAX_DEFINED} more definitions not shown)")
    total = sum(n for _, n in users)
    out.append(f"Used in {len(users)} files ({total} uses):" if users else "(no uses found)")
    out += uses
    if len(uses) >= MAX_USES:
        out.append("(more uses not shown; grep in one of the files above to see them all)")
    note = found.skipped_note()
    if note:
        out.append(f"({note})")
    return "\n".join(out)
