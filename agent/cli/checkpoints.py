"""`bosun checkpoints list|restore --session ID`: the shell-covering snapshots of a
session (agent.tools.shadow), headless: which requests changed what, and putting the
files back as they were before one of them (the conversation stays as it is)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import table
from agent.errors import UsageError
from agent.untrusted import visible

checkpoints_app = typer.Typer(
    help="Snapshots taken around each request, shell commands' changes included.",
    no_args_is_help=True,
)
SessionOpt = Annotated[str, typer.Option("--session", help="Session id (or prefix).")]


def _repo(session_id: str):
    from agent.session import load_session, session_path
    from agent.tools.shadow import ShadowRepo, SnapshotError, git_available

    path = session_path(session_id)
    try:
        stored = load_session(path)
    except ValueError as exc:
        raise UsageError(f"session {path.stem} is damaged: {exc}") from None
    workspace = Path(stored.workspace) if stored.workspace else None
    if workspace is None or not workspace.is_dir():
        raise UsageError(f"session {stored.id}'s workspace {stored.workspace!r} is not a folder")
    if not git_available():
        raise UsageError("git is not installed, so there are no snapshots to use")
    try:
        return ShadowRepo(workspace, stored.id)
    except SnapshotError as exc:
        raise UsageError(str(exc)) from None


@checkpoints_app.command("list")
def checkpoints_list(session: SessionOpt) -> None:
    """The session's snapshotted requests: number, time, files changed, prompt."""
    from agent.tools.shadow import SnapshotError

    repo = _repo(session)
    rows = []
    try:
        for number in repo.numbers():
            start, end = repo.ref(number, "before"), repo.ref(number, "after")
            note = repo.note(start) if start else {}
            changed = sorted(repo.diff(start, end)) if start and end else []
            shown = ", ".join(changed[:5]) + (f" (+{len(changed) - 5})" if len(changed) > 5 else "")
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(int(note.get("time", 0))))
            rows.append(
                {
                    "request": str(number),
                    "when": when,
                    "changed": str(len(changed)) if end else "? (no after-snapshot)",
                    "files": shown,
                    "prompt": str(note.get("prompt", "")).splitlines()[0][:60]
                    if note.get("prompt")
                    else "",
                }
            )
    except SnapshotError as exc:
        raise UsageError(f"cannot read the snapshots: {exc}") from None
    if not rows:
        typer.echo(f"no snapshots for session {repo.session}", err=True)
        return
    table(rows, ["request", "when", "changed", "files", "prompt"])


@checkpoints_app.command("restore")
def checkpoints_restore(
    session: SessionOpt,
    request: Annotated[
        int | None,
        typer.Option("--request", help="Restore as before this request (default: the last)."),
    ] = None,
) -> None:
    """Put the workspace's files back as they were before a request (all or nothing:
    files changed since the session are refused, named)."""
    from agent.tools.restore import rewind_files

    repo = _repo(session)
    numbers = repo.numbers()
    if not numbers:
        raise UsageError(f"no snapshots for session {repo.session}")
    number = numbers[-1] if request is None else request
    if number not in numbers:
        raise UsageError(
            f"request {number} has no snapshot (requests: {', '.join(map(str, numbers))})"
        )
    done = rewind_files(repo, number)
    put_back = [p for p in done.restored if p not in done.removed]
    but = f", but {len(done.failed)} path(s) could not be" if done.failed else ""
    typer.echo(f"restored the files as before request {number}{but}")
    # the names are the workspace's (a model's write may have chosen them): shown
    if put_back:
        typer.echo("restored: " + ", ".join(map(visible, put_back)))
    if done.removed:
        typer.echo("deleted (created since): " + ", ".join(map(visible, done.removed)))
    if done.skipped:
        typer.echo("not covered (over the size cap): " + ", ".join(map(visible, done.skipped)))
    for path, why in done.failed:
        typer.echo(f"could not restore {path}: {why}", err=True)
