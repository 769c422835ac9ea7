"""Which session to resume: the picker `chat --resume` shows without an ID, and whether
a stored session ran in another folder than the one in force."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.text import Text

from agent.errors import UsageError
from agent.session import sessions_rows
from agent.untrusted import visible

PICK_ROWS = 10


def differs(stored: Path, current: Path) -> bool:
    """Whether a stored workspace is another folder than the one in force."""
    try:
        return stored.resolve() != current.resolve()
    except (OSError, RuntimeError, ValueError):  # a loop, a NUL: not the same folder
        return True


def pick_session(console: Console, workspace: Path) -> str:
    """`chat --resume` with no ID: this folder's recent sessions, newest first, by number."""
    here = [r for r in sessions_rows() if r["workspace"] == str(workspace)][::-1][:PICK_ROWS]
    if not here:
        raise UsageError(f"no earlier session in {workspace}; start one with 'bosun chat'")
    # Columns as wide as their widest cell ("interrupted" is longer than "done").
    when = max(len(str(row["when"])) for row in here)
    status = max(len(str(row["status"] or "-")) for row in here)
    for n, row in enumerate(here, 1):
        prompt = visible(row["prompt"])[:44]
        cells = f"{n:>2}  {row['when']:<{when}}  {row['status'] or '-':<{status}}  {prompt}"
        console.print(Text(cells))
    try:
        answer = console.input(Text(f"Resume which? [1-{len(here)}, Enter: 1] ")).strip() or "1"
    except EOFError:
        answer = ""
    if not answer.isdigit() or not 1 <= int(answer) <= len(here):
        raise UsageError("no session chosen")
    return here[int(answer) - 1]["id"]
