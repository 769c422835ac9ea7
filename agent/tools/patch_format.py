"""Codex's patch format: parsed into operations, and hunks applied to text in memory.

OpenAI's models (gpt-oss among them) are trained to edit files by writing this format,
so a model offered it edits with it instead of falling back to `sed` in a shell:

    *** Begin Patch
    *** Add File: path          then the new file's lines, each prefixed "+"
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path       optional, right after Update File
    @@ optional context line    then hunk lines: " " context, "-" removed, "+" added
    *** End of File             optional: the hunk's lines end the file
    *** End Patch

The parser is as lenient as Codex's, since the models learned Codex's leniency: marker
lines may carry stray spaces, the first hunk of an update may omit its "@@", a blank line
inside a hunk is an empty context line, and a patch wrapped in `<<'EOF'` … `EOF` (a
heredoc given as an argument) is unwrapped. Locating a hunk is fuzzy in the same four
steps as Codex (exact, then ignoring trailing whitespace, then ignoring surrounding
whitespace, then with typographic punctuation read as ASCII), because a refusal costs
the model a turn while these differences never change what a line means.

Nothing here touches a file: `agent.tools.patch` reads, confines and writes. Sizes are
bounded (the patch, and the work of matching), so a hostile patch fails fast.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"
MAX_PATCH_CHARS = 4 * 1024 * 1024
MAX_PATCH_LINES = 100_000
MAX_SEEK_WORK = 20_000_000  # line comparisons one hunk's search may make

# Typographic punctuation and odd spaces a model writes as ASCII (Codex's last pass).
_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "
        ),
    }
)


class PatchError(ValueError):
    """The patch is malformed or does not apply; the message says where, for the model."""


@dataclass(frozen=True)
class Chunk:
    """One hunk of an update: `old` lines (context and removed) become `new` lines."""

    context: str | None  # the "@@ …" line: the hunk lies after the first line matching it
    old: list[str]
    new: list[str]
    end_of_file: bool = False
    line: int = 0  # where it starts in the patch, for error messages


@dataclass(frozen=True)
class AddFile:
    path: str
    content: str


@dataclass(frozen=True)
class DeleteFile:
    path: str


@dataclass(frozen=True)
class UpdateFile:
    path: str
    move_to: str | None = None
    chunks: list[Chunk] = field(default_factory=list)


Operation = AddFile | DeleteFile | UpdateFile


def _unwrap_heredoc(lines: list[str]) -> list[str]:
    """The lines inside `<<'EOF'` … `EOF`, when the patch came wrapped in a heredoc."""
    if (
        len(lines) >= 4
        and lines[0].strip() in ("<<EOF", "<<'EOF'", '<<"EOF"')
        and lines[-1].strip().endswith("EOF")
    ):
        return lines[1:-1]
    return lines


def parse_patch(text: str) -> list[Operation]:
    """The operations of a patch, in order, or a PatchError naming the bad line."""
    if len(text) > MAX_PATCH_CHARS:
        raise PatchError(f"the patch is larger than {MAX_PATCH_CHARS} characters")
    lines = [ln.removesuffix("\r") for ln in text.strip().split("\n")]
    if len(lines) > MAX_PATCH_LINES:
        raise PatchError(f"the patch has more than {MAX_PATCH_LINES} lines")
    if not (lines and lines[0].strip() == BEGIN):
        lines = _unwrap_heredoc(lines)
    if not lines or lines[0].strip() != BEGIN:
        raise PatchError(f"the first line of the patch must be '{BEGIN}'")
    if len(lines) < 2 or lines[-1].strip() != END:
        raise PatchError(f"the last line of the patch must be '{END}'")
    body, at, ops = lines[1:-1], 0, []
    while at < len(body):
        if not body[at].strip():  # blank lines between operations
            at += 1
            continue
        op, at = _operation(body, at)
        ops.append(op)
    return ops


def _path(header: str, prefix: str, line_no: int) -> str:
    path = header[len(prefix) :].strip()
    if not path:
        raise PatchError(f"line {line_no}: '{prefix.strip()}' needs a file path")
    return path


def _operation(body: list[str], at: int) -> tuple[Operation, int]:
    """The operation whose header is body[at], and the index after its last line."""
    header, line_no = body[at].strip(), at + 2  # 1-based, after "*** Begin Patch"
    probe = header + " "  # "*** Add File:" with no path still names the operation
    if probe.startswith(ADD):
        path, content, at = _path(header, ADD, line_no), [], at + 1
        while at < len(body) and body[at].startswith("+"):
            content.append(body[at][1:] + "\n")
            at += 1
        return AddFile(path, "".join(content)), at
    if probe.startswith(DELETE):
        return DeleteFile(_path(header, DELETE, line_no)), at + 1
    if probe.startswith(UPDATE):
        path, at = _path(header, UPDATE, line_no), at + 1
        move_to = None
        if at < len(body) and body[at].strip().startswith(MOVE):
            move_to, at = _path(body[at].strip(), MOVE, at + 2), at + 1
        chunks: list[Chunk] = []
        while at < len(body):
            if not body[at].strip():
                at += 1
                continue
            if body[at].lstrip().startswith("*"):  # the next operation's header
                break
            chunk, at = _chunk(body, at, first=not chunks)
            chunks.append(chunk)
        if not chunks:
            raise PatchError(f"line {line_no}: the update of {path} has no hunks")
        return UpdateFile(path, move_to, chunks), at
    raise PatchError(
        f"line {line_no}: {header[:80]!r} is not an operation; each starts with"
        f" '{ADD}PATH', '{DELETE}PATH' or '{UPDATE}PATH'"
    )


def _chunk(body: list[str], at: int, *, first: bool) -> tuple[Chunk, int]:
    """One hunk from body[at]: its optional "@@" line, then its lines."""
    start, head = at + 2, body[at].strip()
    context: str | None = None
    if head == "@@" or head.startswith("@@ "):
        context = head[3:] if head.startswith("@@ ") else None
        at += 1
    elif not first:
        raise PatchError(f"line {start}: a hunk must start with '@@', not {body[at][:80]!r}")
    old: list[str] = []
    new: list[str] = []
    taken, end_of_file = 0, False
    while at < len(body):
        line = body[at]
        if line.strip() == END_OF_FILE:
            end_of_file, at = True, at + 1
            break
        kind, rest = line[:1], line[1:]
        if kind not in ("", " ", "-", "+"):
            if taken == 0:
                raise PatchError(
                    f"line {at + 2}: {line[:80]!r} in a hunk; every hunk line starts with"
                    " ' ' (context), '-' (removed) or '+' (added)"
                )
            break  # the next hunk or operation
        if kind in ("", " ", "-"):
            old.append(rest)
        if kind in ("", " ", "+"):
            new.append(rest)
        taken, at = taken + 1, at + 1
    if taken == 0:
        raise PatchError(f"line {start}: the hunk has no lines")
    return Chunk(context, old, new, end_of_file, start), at


def _normalise(line: str) -> str:
    return line.strip().translate(_PUNCTUATION)


_PASSES = (lambda s: s, str.rstrip, str.strip, _normalise)


class _Index:
    """A file's lines, folded for each pass of leniency and indexed by content once,
    so each hunk's search looks only where its first line occurs, and the work all
    hunks together may make is bounded."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.work = 0
        self._folded: dict[int, tuple[list[str], dict[str, list[int]]]] = {}

    def folded(self, n: int) -> tuple[list[str], dict[str, list[int]]]:
        if n not in self._folded:
            keys = [_PASSES[n](ln) for ln in self.lines]
            where: dict[str, list[int]] = {}
            for i, key in enumerate(keys):
                where.setdefault(key, []).append(i)
            self._folded[n] = (keys, where)
        return self._folded[n]

    def seek(self, pattern: list[str], start: int, end_of_file: bool) -> int | None:
        """Where `pattern` starts at or after `start` (only at the very end when it
        should end the file, then anywhere after `start`), trying each pass in turn."""
        if not pattern:
            return start
        last = len(self.lines) - len(pattern)
        if last < 0:
            return None
        for n, fold in enumerate(_PASSES):
            keys, where = self.folded(n)
            want = [fold(ln) for ln in pattern]
            for begin in [last, start] if end_of_file else [start]:
                at = bisect.bisect_left(where.get(want[0], []), begin)
                for i in where.get(want[0], [])[at:]:
                    if i > last:
                        break
                    self.work += len(want)
                    if self.work > MAX_SEEK_WORK:
                        raise PatchError("the hunks match too many places to search; add context")
                    if keys[i : i + len(want)] == want:
                        return i
        return None


def seek(lines: list[str], pattern: list[str], start: int, end_of_file: bool) -> int | None:
    """Where `pattern` starts in `lines` at or after `start`, or None (see `_Index`)."""
    return _Index(lines).seek(pattern, start, end_of_file)


def apply_chunks(path: str, text: str, chunks: list[Chunk]) -> str:
    """`text` with every hunk applied, or a PatchError naming the file and the hunk that
    does not apply (nothing is applied then). The result ends with a newline, as Codex's
    does; CRLF files keep CRLF."""
    crlf = "\r\n" in text
    lines = text.replace("\r\n", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    index = _Index(lines)
    edits: list[tuple[int, int, list[str]]] = []
    at = 0
    for n, chunk in enumerate(chunks, 1):
        where = f"{path}, hunk {n} (patch line {chunk.line})"
        if chunk.context is not None:
            found = index.seek([chunk.context], at, False)
            if found is None:
                raise PatchError(f"{where}: no line {chunk.context!r} after line {at}")
            at = found + 1
        if not chunk.old:  # only additions: they go at the end of the file
            edits.append((len(lines), 0, chunk.new))
            continue
        old, new = chunk.old, chunk.new
        found = index.seek(old, at, chunk.end_of_file)
        if found is None and old[-1] == "":  # a trailing blank line the file lacks
            old, new = old[:-1], new[:-1] if new and new[-1] == "" else new
            found = index.seek(old, at, chunk.end_of_file)
        if found is None:
            shown = "\n".join(old[:20]) + ("\n…" if len(old) > 20 else "")
            raise PatchError(f"{where}: these lines are not in the file:\n{shown}")
        edits.append((found, len(old), new))
        at = found + len(old)
    # From the end, so earlier positions stay valid; of two at one place, the later first.
    for _, (start, length, new) in sorted(enumerate(edits), key=lambda e: (e[1][0], e[0]))[::-1]:
        lines[start : start + length] = new
    out = "\n".join(lines) + "\n" if lines else ""
    return out.replace("\n", "\r\n") if crlf else out


def patch_paths(text: str) -> list[str]:
    """Every path a patch names (sources, destinations), in order; [] if it does not
    parse (the call then fails on its own, touching nothing)."""
    try:
        ops = parse_patch(text)
    except PatchError:
        return []
    paths: list[str] = []
    for op in ops:
        paths.append(op.path)
        if isinstance(op, UpdateFile) and op.move_to is not None:
            paths.append(op.move_to)
    return list(dict.fromkeys(paths))
