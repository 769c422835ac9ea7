"""The tasks file of `bosun run --tasks`: one JSON object per line, checked before any
model is loaded, with every problem named by file and line."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from agent import untrusted
from agent.errors import UsageError
from agent.run.assemble import check_workspace
from agent.run.config import looser_approval
from agent.run.settings import Settings
from agent.tools.permissions import APPROVE_MODES

TASK_KEYS = (
    "id",
    "prompt",
    "workspace",
    "max_turns",
    "max_tokens",
    "approve",
    "copy_workspace",
    "repo",
    "commit",
)
# A tasks file is read whole before anything runs; `--tasks /dev/zero` or an endless
# pipe must end in a usage error, not in memory running out.
MAX_TASKS_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class CopyOf:
    """`"copy_workspace": true`: the task runs in its own copy of this folder."""

    path: Path


@dataclass(frozen=True)
class GitCheckout:
    """`"repo"` + `"commit"`: the task runs in a fresh clone, checked out there."""

    repo: str
    commit: str


@dataclass(frozen=True)
class Task:
    """One line of a tasks file: its id, its prompt, and the batch's settings with what
    the line sets itself (workspace, budgets, an approve mode no looser than the flag's).
    `source`: where its own workspace is built from, where it runs
    (agent.run.batch.workspaces); None: it runs in `settings.workspace` itself."""

    id: str
    prompt: str
    settings: Settings
    source: CopyOf | GitCheckout | None = None

    @property
    def workspace(self) -> Path:
        return self.settings.workspace

    def but(self, **changes: Any) -> Task:
        """The task with its settings changed (its built workspace)."""
        return replace(self, settings=self.settings.but(**changes))


# --- the tasks file -----------------------------------------------------------------


def _positive_int(value: Any, where: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{where}: {key!r} must be a positive integer, not {value!r}")
    return value


def parse_task(data: Any, where: str, base: Path, opts: Settings) -> Task:
    """One line of a tasks file -> Task, or a one-line UsageError saying what to fix.

    Unknown keys are refused rather than ignored: a misspelt "max_turn" would otherwise
    run the task with the default budget and nobody would notice. `approve` may only be
    stricter than the batch's (`--approve`): a tasks file written elsewhere must not
    switch on what the user's command line did not.
    """
    if not isinstance(data, dict):
        raise UsageError(f'{where}: expected a JSON object like {{"id": "t1", "prompt": "…"}}')
    unknown = sorted(set(data) - set(TASK_KEYS))
    if unknown:
        raise UsageError(
            f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(TASK_KEYS)})"
        )
    task_id = data.get("id")
    if isinstance(task_id, int) and not isinstance(task_id, bool):
        task_id = str(task_id)
    if not isinstance(task_id, str) or not task_id.strip():
        raise UsageError(f'{where}: every task needs an "id" (a non-empty string)')
    prompt = data.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise UsageError(f'{where}: task {task_id!r} needs a "prompt" (a non-empty string)')
    source = _source(data, where, task_id, base)
    workspace = opts.workspace
    if isinstance(source, GitCheckout):
        pass  # built where the task runs; the batch's workspace is only a placeholder
    elif "workspace" in data:
        raw = data["workspace"]
        if not isinstance(raw, str) or not raw:
            raise UsageError(f'{where}: "workspace" must be a folder path')
        workspace = base / Path(raw).expanduser()  # an absolute path replaces base
    if not isinstance(source, GitCheckout):
        try:
            workspace = check_workspace(workspace)
        except UsageError as exc:
            raise UsageError(f"{where}: task {task_id!r}: {exc}") from None
    if source is not None and not isinstance(source, GitCheckout):
        source = CopyOf(workspace)
    approve = data.get("approve", opts.approve)
    if approve not in APPROVE_MODES:
        raise UsageError(
            f'{where}: "approve" must be one of {", ".join(APPROVE_MODES)}, not {approve!r}'
        )
    if looser_approval(approve, opts.approve):
        raise UsageError(
            f'{where}: task {task_id!r}: "approve": {approve!r} is looser than'
            f" --approve {opts.approve} (a line may only make approval stricter;"
            " pass a looser --approve to allow it)"
        )
    own = opts.but(
        workspace=workspace,
        max_turns=_positive_int(data.get("max_turns", opts.max_turns), where, "max_turns"),
        max_tokens=_positive_int(data.get("max_tokens", opts.max_tokens), where, "max_tokens"),
        approve=approve,
    )
    return Task(task_id, prompt, own, source)


def _source(
    data: dict[str, Any], where: str, task_id: str, base: Path
) -> CopyOf | GitCheckout | None:
    """Where the task's own workspace comes from (CopyOf's path is filled in later)."""
    copy = data.get("copy_workspace", False)
    if not isinstance(copy, bool):
        raise UsageError(f'{where}: "copy_workspace" must be true or false')
    repo, commit = data.get("repo"), data.get("commit")
    if repo is None and commit is None:
        return CopyOf(Path()) if copy else None
    if copy or "workspace" in data:
        raise UsageError(
            f'{where}: task {task_id!r}: "repo" is a workspace of its own; drop'
            ' "workspace" and "copy_workspace"'
        )
    for key, value in (("repo", repo), ("commit", commit)):
        if not isinstance(value, str) or not value.strip() or value.startswith("-"):
            raise UsageError(
                f'{where}: task {task_id!r}: "repo" and "commit" go together, each a'
                f" non-empty string not starting with '-' ({key!r} is {value!r})"
            )
    assert isinstance(repo, str) and isinstance(commit, str)  # checked just above
    local = base / Path(repo).expanduser()
    if "://" not in repo and local.exists():  # a path: relative to the tasks file's folder
        repo = str(local.resolve())
    return GitCheckout(repo, commit)


@dataclass(frozen=True)
class BadLine:
    """A tasks-file line that cannot run; `message` names the file and line."""

    lineno: int
    message: str

    @property
    def label(self) -> str:
        return f"line {self.lineno}"


def read_tasks(
    opts: Settings, path: Path, stdin: TextIO | None = None
) -> tuple[list[Task], list[BadLine]]:
    """The good tasks in the file and its bad lines. Relative workspaces are relative to
    the tasks file's folder, so a tasks file and its workspaces can move together.

    Raises UsageError only for a file that cannot be read, is over MAX_TASKS_BYTES or
    holds no lines at all.
    """
    if str(path) == "-":
        raw, base, label = (stdin or sys.stdin).read(MAX_TASKS_BYTES + 1), Path.cwd(), "<stdin>"
        size = len(raw)
    else:
        label, base = str(path), path.parent
        try:
            # Decoded line by line below: one bad byte spoils its own line only.
            with path.open("rb") as fh:  # a FIFO is fine: `--tasks <(make_tasks)`
                data = fh.read(MAX_TASKS_BYTES + 1)
            size = len(data)  # in bytes: decoded, multi-byte text would look shorter
            raw = data.decode("utf-8", errors="surrogateescape")
        except FileNotFoundError:
            raise UsageError(f"tasks file not found: {path}") from None
        except IsADirectoryError:
            raise UsageError(f"tasks file is a directory: {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read tasks file {path}: {exc}") from None
    if size > MAX_TASKS_BYTES:
        raise UsageError(
            f"{label} is over {MAX_TASKS_BYTES // 2**20} MB; split it into smaller files"
        )
    tasks: list[Task] = []
    bad: list[BadLine] = []
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{label}:{lineno}"
        try:
            if any("\udc80" <= c <= "\udcff" for c in line):
                raise UsageError(f"{where}: not UTF-8 text")
            try:
                data = untrusted.loads(line)
            except untrusted.TooDeep as exc:
                raise UsageError(f"{where}: the JSON is {exc}") from None
            except json.JSONDecodeError as exc:
                raise UsageError(f"{where}: not valid JSON ({exc.msg})") from None
            task = parse_task(data, where, base, opts)
            if task.id in first_line:
                raise UsageError(
                    f"{where}: duplicate task id {task.id!r} (first on line {first_line[task.id]})"
                )
        except UsageError as exc:
            bad.append(BadLine(lineno, str(exc)))
            continue
        first_line[task.id] = lineno
        tasks.append(task)
    if not tasks and not bad:
        raise UsageError(f"no tasks in {label}")
    return tasks, bad


def load_tasks(opts: Settings, path: Path, stdin: TextIO | None = None) -> list[Task]:
    """Every task in the file, validated; the first bad line refuses the whole file."""
    tasks, bad = read_tasks(opts, path, stdin)
    if bad:
        raise UsageError(bad[0].message)
    return tasks
