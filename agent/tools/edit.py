"""Writing tools: whole-file writes and exact-match edits, each with a diff preview.

Edits match `old` exactly because a fuzzy match that lands on the wrong lines is worse
than a refusal; the refusal instead shows the closest lines, which is what a model
needs to retry (usually it got the indentation or one word wrong).
"""

from __future__ import annotations

import difflib
import heapq
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass

from agent.tools.confine import open_in_workspace, refuse_hardlinked, resolve_in_workspace
from agent.tools.diffs import unified_diff as bounded_diff
from agent.tools.files import BINARY_SNIFF, editor_text, is_binary, read_bytes
from agent.tools.registry import NO_CHANGES, ToolContext, ToolError, tool

MAX_EDIT_BYTES = 4 * 1024 * 1024
MAX_PREVIEW_LINES = 400
HINT_CUTOFF = 0.5
HINT_MAX_LINES = 40
HINT_PROBES = 6
HINT_MAX_ANCHORS = 20
HINT_SHORTLIST = 200


@dataclass(frozen=True)
class Change:
    before: str | None  # None: the file does not exist yet
    after: str
    summary: str


def current_text(ctx: ToolContext, path: str) -> str | None:
    """The file's text, None if it does not exist; refuses what an edit would corrupt."""
    real = resolve_in_workspace(ctx.workspace, path)
    if not real.exists():
        return None
    data = read_bytes(ctx, path, MAX_EDIT_BYTES + 1)
    if len(data) > MAX_EDIT_BYTES:
        raise ToolError(f"{path} is larger than {MAX_EDIT_BYTES} bytes; too large to edit here")
    if is_binary(data[:BINARY_SNIFF]):
        raise ToolError(f"{path} is a binary file; it cannot be edited as text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{path} is not UTF-8 text (byte {exc.start}); editing it could corrupt it"
        ) from None
    return editor_text(ctx, path, text)


def store_text(ctx: ToolContext, path: str, text: str) -> None:
    """Write through an fd opened beneath the root, so no symlink leads the write out.
    Through an editor (ACP), the same checks first, then the editor writes."""
    real = resolve_in_workspace(ctx.workspace, path)
    if real.is_dir():
        raise ToolError(f"{path} is a directory; give a file path")
    data = text.encode("utf-8", errors="replace")  # before anything is truncated
    # O_NONBLOCK: a FIFO with no reader fails (ENXIO) instead of hanging the agent. No
    # O_TRUNC at the open: a refused file (not regular, hard-linked) must stay intact.
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK
    fd = open_in_workspace(ctx.workspace, path, flags, make_parents=True)
    with os.fdopen(fd, "wb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ToolError(f"{path} is not a regular file; not written")
        refuse_hardlinked(fh.fileno(), path)
        if ctx.editor is None:
            fh.truncate(0)
            fh.write(data)
            return
    if not ctx.editor.write_text(real, text):
        store_text(ToolContext(ctx.workspace, ctx.sandbox), path, text)


def _line_count(text: str) -> int:
    return len(text.splitlines())


def _lines(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


def _plan_write(ctx: ToolContext, path: str, content: str) -> Change:
    real = resolve_in_workspace(ctx.workspace, path)
    if real.is_dir():
        raise ToolError(f"{path} is a directory; give a file path")
    size = f"{_lines(_line_count(content))}, {len(content.encode('utf-8'))} bytes"
    if not real.exists():
        return Change(None, content, f"Created {path} ({size})")
    try:
        before = current_text(ctx, path) or ""
    except ToolError:  # binary or huge: replacing it whole is still a fair request
        return Change("", content, f"Wrote {path} ({size}; it was not a text file before)")
    return Change(before, content, f"Wrote {path} ({size}; it had {_lines(_line_count(before))})")


def _occurrence_lines(text: str, needle: str) -> list[int]:
    lines, start = [], 0
    while (i := text.find(needle, start)) != -1:
        lines.append(text.count("\n", 0, i) + 1)
        start = i + len(needle)
    return lines


def _anchors(stripped: list[str], probes: list[tuple[int, str]]) -> set[int]:
    """Where a window like `old` could start: exact hits of its distinctive lines first,
    fuzzy hits (difflib's pruned ratios) only when no line of it appears verbatim."""
    index: dict[str, list[int]] = {}
    for i, line in enumerate(stripped):
        index.setdefault(line, []).append(i)
    anchors: set[int] = set()
    for offset, line in probes:
        hits = index.get(line, [])
        if 0 < len(hits) <= HINT_MAX_ANCHORS:  # "}" or "return" tells nothing
            anchors.update(i - offset for i in hits)
    if anchors:
        return anchors
    for offset, line in probes[:2]:  # each is a pass over the file's distinct lines
        for match in _close_matches(line, index):
            anchors.update(i - offset for i in index[match][:HINT_MAX_ANCHORS])
    return anchors


def _close_matches(line: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """difflib.get_close_matches, but the full ratio runs only on the best quick
    ratios: a file of near-identical lines would otherwise cost seconds."""
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(line)
    quick = []
    for cand in candidates:
        matcher.set_seq1(cand)
        if (
            matcher.real_quick_ratio() >= HINT_CUTOFF
            and (q := matcher.quick_ratio()) >= HINT_CUTOFF
        ):
            quick.append((q, cand))
    scored = []
    for _, cand in heapq.nlargest(HINT_SHORTLIST, quick):
        matcher.set_seq1(cand)
        if (score := matcher.ratio()) >= HINT_CUTOFF:
            scored.append((score, cand))
    return [cand for _, cand in heapq.nlargest(n, scored)]


def closest_lines(text: str, old: str) -> str:
    """The stretch of `text` that looks most like `old`, line-numbered, or "".

    Windows of len(old) lines are scored only at a few anchors, so the cost stays
    about linear in the file size; a long `old` is judged by its first lines.
    """
    lines = text.splitlines()
    old_lines = old.splitlines()[:HINT_MAX_LINES]
    probes = [(k, ln.strip()) for k, ln in enumerate(old_lines) if ln.strip()][:HINT_PROBES]
    if not lines or not probes:
        return ""
    target, span = "\n".join(old_lines), len(old_lines)
    starts = {max(a, 0) for a in _anchors([ln.strip() for ln in lines], probes) if a < len(lines)}
    scored = []
    for start in starts:
        window = "\n".join(lines[start : start + span])
        matcher = difflib.SequenceMatcher(None, window, target, autojunk=False)
        scored.append((matcher.quick_ratio(), -start, matcher))
    best, best_score = -1, 0.0
    for _, neg_start, matcher in sorted(scored, reverse=True)[:5]:  # quick_ratio >= ratio
        if (score := matcher.ratio()) > best_score:
            best, best_score = -neg_start, score
    if best < 0 or best_score < HINT_CUTOFF:
        return ""
    shown = lines[best : best + span]
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(shown, best + 1))


def _not_found(path: str, text: str, old: str) -> ToolError:
    near = closest_lines(text, old)
    if not near:
        return ToolError(
            f"old text not found in {path}, and nothing in it looks close;"
            " read_file the file and copy the exact lines"
        )
    same_words = " ".join(old.split()) in " ".join(text.split())
    why = " (it differs only in whitespace or indentation)" if same_words else ""
    return ToolError(
        f"old text not found in {path}{why}. The closest lines are:\n{near}\n"
        "Copy them exactly (without the line numbers) into old."
    )


def _plan_edit(ctx: ToolContext, path: str, old: str, new: str, replace_all: bool) -> Change:
    if not old:
        raise ToolError("old is empty; to create or overwrite a whole file use write_file")
    if old == new:
        raise ToolError("old and new are the same; nothing would change")
    text = current_text(ctx, path)
    if text is None:
        raise ToolError(f"{path}: no such file; to create it use write_file")
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\r" not in old:
        # The model saw "\n" endings through read_file; the file really has CRLF.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise _not_found(path, text, old)
    where = _occurrence_lines(text, old)
    if count > 1 and not replace_all:
        listed = ", ".join(map(str, where[:10])) + (" …" if count > 10 else "")
        raise ToolError(
            f"old text occurs {count} times in {path} (starting on lines {listed});"
            " include more surrounding lines to make it unique, or set replace_all to true"
        )
    after = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    first = where[0]
    last = first + max(_line_count(new), 1) - 1
    if count > 1:
        return Change(text, after, f"Edited {path}: replaced {count} occurrences")
    span = f"line {first} now reads" if last == first else f"lines {first}-{last} now read"
    shown = after.splitlines()[first - 1 : min(last, first + 11)]
    numbered = "\n".join(f"{n:>6}\t{ln}" for n, ln in enumerate(shown, first))
    return Change(text, after, f"Edited {path}; {span}:\n{numbered}")


def planned_change(ctx: ToolContext, name: str, arguments: dict[str, object]) -> Change | None:
    """What a write_file or edit_file call would change (an editor shows it as a diff
    before the call runs); None for another tool or a call that would fail."""
    try:
        if name == "write_file":
            return _plan_write(ctx, str(arguments["path"]), str(arguments["content"]))
        if name == "edit_file":
            path, old, new = (str(arguments[k]) for k in ("path", "old", "new"))
            return _plan_edit(ctx, path, old, new, arguments.get("replace_all") is True)
    except (KeyError, ToolError, OSError):
        return None
    return None


def unified_diff(path: str, change: Change) -> str:
    """The diff an approval prompt shows; capped because a UI is not a pager."""
    before = (change.before or "").splitlines(keepends=True)
    after = change.after.splitlines(keepends=True)
    fromfile = "/dev/null" if change.before is None else f"a/{path}"
    diff = list(bounded_diff(before, after, fromfile, f"b/{path}"))
    lines = [ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in diff]
    if not lines:  # the same text, or a new file that is empty
        return NO_CHANGES if change.before is not None else f"(creates {path}, empty)\n"
    extra = len(lines) - MAX_PREVIEW_LINES
    text = "".join(lines[:MAX_PREVIEW_LINES])
    return text + (f"… ({extra} more diff lines)\n" if extra > 0 else "")


def _preview_write(ctx: ToolContext, path: str, content: str) -> str:
    return unified_diff(path, _plan_write(ctx, path, content))


def _preview_edit(
    ctx: ToolContext, path: str, old: str, new: str, replace_all: bool = False
) -> str:
    return unified_diff(path, _plan_edit(ctx, path, old, new, replace_all))


@tool("write", preview=_preview_write)
def write_file(ctx: ToolContext, path: str, content: str) -> str:
    """Create a file, or replace a whole file, in the workspace; missing folders are made.

    Args:
        path: file path relative to the workspace root
        content: the complete new content of the file
    """
    change = _plan_write(ctx, path, content)
    store_text(ctx, path, change.after)
    return change.summary


@tool("write", preview=_preview_edit)
def edit_file(ctx: ToolContext, path: str, old: str, new: str, replace_all: bool = False) -> str:
    """Replace exact text in a file; `old` must match exactly once unless replace_all.

    Args:
        path: file path relative to the workspace root
        old: the exact text to replace, including indentation, as read_file shows it
        new: the text to put in its place
        replace_all: replace every occurrence instead of requiring exactly one
    """
    change = _plan_edit(ctx, path, old, new, replace_all)
    store_text(ctx, path, change.after)
    return change.summary
