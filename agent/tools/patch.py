"""The apply_patch tool: several files added, changed, moved or deleted in one call.

A patch is planned whole before anything is written: every path confined to the
workspace, every file read, every hunk located (`agent.tools.patch_format`). One hunk
that does not apply fails the call with an error naming its file and hunk, and no file
is touched, because a half-applied patch leaves the model to work out which half landed.
Files are then written as edit_file writes them (through a descriptor opened beneath the
root, never through a link that leads out), the new files before the deletions, so a
move that fails midway leaves a copy rather than a loss; a write that fails puts back
what this call had already written.

The approval prompt shows the unified diff of every file, and `paths` names every file
the patch touches, so the checkpoints save each before it runs (/undo puts all back).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agent.history import ToolCall
from agent.tools.confine import open_dir_in_workspace, resolve_in_workspace
from agent.tools.diffs import unified_diff
from agent.tools.edit import MAX_PREVIEW_LINES, current_text, store_text
from agent.tools.patch_format import (
    AddFile,
    DeleteFile,
    PatchError,
    UpdateFile,
    apply_chunks,
    parse_patch,
    patch_paths,
)
from agent.tools.registry import NO_CHANGES, ToolContext, ToolError, ToolRegistry, tool
from agent.tools.shell import apply_patch_invocation

_BINARY = "\x00binary"  # the `before` of a file that is not text: replaced or deleted whole


@dataclass
class _File:
    """One real path the patch touches: as it was, and as the patch leaves it."""

    shown: str  # as the patch first named it
    before: str | None  # None: it did not exist
    now: str | None
    moved_from: str | None = None  # the key of the file this one was moved from


@dataclass
class Plan:
    files: dict[str, _File] = field(default_factory=dict)  # by real path under the root
    summary: list[str] = field(default_factory=list)


def _key(ctx: ToolContext, path: str) -> str:
    real = resolve_in_workspace(ctx.workspace, path)
    key = str(real.relative_to(ctx.workspace.resolve()))
    if key == ".":
        raise ToolError(f"{path!r} is the workspace folder itself, not a file")
    if real.is_dir():
        raise ToolError(f"{path} is a directory; a patch adds, changes or deletes files")
    return key


def _refuse_link(ctx: ToolContext, path: str) -> None:
    """Deleting or moving away a symlink would act on the file it names; refused."""
    named = Path(path) if Path(path).is_absolute() else ctx.workspace / path
    if named.is_symlink():
        raise ToolError(f"{path} is a symlink; a patch does not delete or move links")


def _file(plan: Plan, ctx: ToolContext, path: str, *, text: bool) -> tuple[str, _File]:
    """The planned state of `path`, read from disk the first time it is named."""
    key = _key(ctx, path)
    if key not in plan.files:
        before: str | None
        try:
            before = current_text(ctx, key)
        except ToolError:
            if text:
                raise
            before = _BINARY  # Add File over it, or Delete File: the whole file goes
        plan.files[key] = _File(path, before, before)
    return key, plan.files[key]


def _lines(text: str) -> str:
    n = len(text.splitlines())
    return f"{n} line" if n == 1 else f"{n} lines"


def plan_patch(ctx: ToolContext, patch: str) -> Plan:
    """Every file's new state, or a ToolError saying what does not apply (nothing
    is written either way)."""
    try:
        ops = parse_patch(patch)
    except PatchError as exc:
        raise ToolError(f"invalid patch: {exc}") from None
    if not ops:
        raise ToolError("the patch has no operations; nothing to change")
    plan = Plan()
    for op in ops:
        if isinstance(op, AddFile):
            _, f = _file(plan, ctx, op.path, text=False)
            f.now = op.content
            plan.summary.append(f"A {op.path} ({_lines(op.content)})")
        elif isinstance(op, DeleteFile):
            _refuse_link(ctx, op.path)
            _, f = _file(plan, ctx, op.path, text=False)
            if f.now is None:
                raise ToolError(f"cannot delete {op.path}: no such file")
            f.now = None
            plan.summary.append(f"D {op.path}")
        else:
            _update(plan, ctx, op)
    return plan


def _update(plan: Plan, ctx: ToolContext, op: UpdateFile) -> None:
    key, f = _file(plan, ctx, op.path, text=True)
    if f.now is None:
        raise ToolError(f"cannot update {op.path}: no such file; to create it use '*** Add File:'")
    try:
        new = apply_chunks(op.path, f.now, op.chunks)
    except PatchError as exc:
        raise ToolError(f"the patch does not apply, nothing was changed: {exc}") from None
    hunks = f"{len(op.chunks)} hunk" + ("s" if len(op.chunks) > 1 else "")
    if op.move_to is None or _key(ctx, op.move_to) == key:
        f.now = new
        plan.summary.append(f"M {op.path} ({hunks})")
        return
    _refuse_link(ctx, op.path)
    _, dest = _file(plan, ctx, op.move_to, text=False)
    f.now, dest.now, dest.moved_from = None, new, key
    plan.summary.append(f"R {op.path} -> {op.move_to} ({hunks})")


def _diff(before: str | None, after: str | None, a: str, b: str) -> list[str]:
    if _BINARY in (before, after):
        return [f"(binary file {a if after is None else b}: replaced or deleted whole)\n"]
    lines = unified_diff(
        (before or "").splitlines(keepends=True),
        (after or "").splitlines(keepends=True),
        "/dev/null" if before is None else f"a/{a}",
        "/dev/null" if after is None else f"b/{b}",
    )
    out = [ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines]
    if not out and before is None:
        out = [f"(creates {b}, empty)\n"]
    return out


def _preview(ctx: ToolContext, input: str) -> str:
    plan = plan_patch(ctx, input)
    moved = {f.moved_from for f in plan.files.values() if f.moved_from is not None}
    lines: list[str] = []
    for key, f in plan.files.items():
        if key in moved and f.now is None:
            continue  # shown with its destination
        if f.moved_from is not None:
            src = plan.files[f.moved_from]
            lines.append(f"(moves {src.shown} to {f.shown})\n")
            lines += _diff(src.before, f.now, src.shown, f.shown)
        elif f.now != f.before:
            lines += _diff(f.before, f.now, f.shown, f.shown)
    if not any(f.now != f.before for f in plan.files.values()):
        return NO_CHANGES
    extra = len(lines) - MAX_PREVIEW_LINES
    text = "".join(lines[:MAX_PREVIEW_LINES])
    return text + (f"… ({extra} more diff lines)\n" if extra > 0 else "")


def _unlink(ctx: ToolContext, key: str) -> None:
    """Remove one regular file through its folder's descriptor (no link followed)."""
    parent, name = os.path.split(key)
    fd = open_dir_in_workspace(ctx.workspace, parent or ".")
    try:
        if not stat.S_ISREG(os.lstat(name, dir_fd=fd).st_mode):
            raise ToolError(f"{key} is not a regular file; not deleted")
        os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)


def _put(ctx: ToolContext, key: str, text: str | None) -> None:
    if text is None:
        _unlink(ctx, key)
    else:
        store_text(ctx, key, text)


def _paths(arguments: dict[str, Any]) -> list[str]:
    patch = arguments.get("input")
    return patch_paths(patch) if isinstance(patch, str) else []


@tool("write", preview=_preview, paths=_paths)
def apply_patch(ctx: ToolContext, input: str) -> str:
    """Add, change, move or delete files with one patch in the apply_patch format.
    The patch starts with the line "*** Begin Patch" and ends with "*** End Patch".
    In between, for each file: "*** Add File: PATH" followed by the new file's lines,
    each prefixed "+"; "*** Delete File: PATH"; or "*** Update File: PATH" (then
    optionally "*** Move to: NEWPATH") followed by hunks. A hunk starts with "@@"
    (optionally "@@ " and a line it comes after, such as its function's definition);
    its lines start with " " (unchanged context: about 3 lines before and after each
    change), "-" (removed) or "+" (added); "*** End of File" follows a hunk that ends
    the file. Paths are relative to the workspace. Nothing changes unless every hunk
    applies.

    Args:
        input: the whole patch, from "*** Begin Patch" to "*** End Patch"
    """
    plan = plan_patch(ctx, input)
    changed = [(k, f) for k, f in plan.files.items() if f.now != f.before]
    if not changed:
        raise ToolError("the patch would leave every file exactly as it is; nothing changed")
    order = [kf for kf in changed if kf[1].now is not None]
    order += [kf for kf in changed if kf[1].now is None]  # deletions last
    done: list[tuple[str, _File]] = []
    try:
        for key, f in order:
            _put(ctx, key, f.now)
            done.append((key, f))
    except (OSError, ToolError) as exc:
        undone = _roll_back(ctx, done)
        raise ToolError(f"{exc}; {undone}") from None
    return "Applied the patch:\n" + "\n".join(plan.summary)


def _roll_back(ctx: ToolContext, done: list[tuple[str, _File]]) -> str:
    """Put back what this call wrote before a write failed; says what it could not."""
    failed = []
    for key, f in reversed(done):
        try:
            if f.before == _BINARY:
                raise ToolError("not text")
            _put(ctx, key, f.before)
        except (OSError, ToolError):
            failed.append(f.shown)
    if failed:
        return f"could not put back {', '.join(failed)}"
    return "the files written before it were put back" if done else "nothing was changed"


# The grammar of --constrain writes `input` as a patch that parses: a string of this
# format is agent.protocol.grammar's PATCH_FORMAT (the tools do not import the protocol).
_input = {**apply_patch.parameters["properties"]["input"], "format": "apply-patch"}
apply_patch = replace(
    apply_patch,
    parameters={**apply_patch.parameters, "properties": {"input": _input}},
)


def routed(call: ToolCall, tools: ToolRegistry) -> ToolCall:
    """A bash call that only runs Codex's `apply_patch` (a heredoc, or the patch as its
    argument), as the apply_patch call it means, where the tool set has apply_patch: so
    the patch is confined, approved with its diff and checkpointed. Any other call, or
    a tool set without apply_patch (the command then runs, and fails, as written), is
    returned as it is."""
    command = call.arguments.get("command")
    if call.name != "bash" or "apply_patch" not in tools or not isinstance(command, str):
        return call
    patch = apply_patch_invocation(command)
    if patch is None:
        return call
    return ToolCall(call.id, "apply_patch", {"input": patch}, call.salvaged)
