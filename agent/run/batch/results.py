"""`--results DIR`: one JSONL file per task and a summary per shard, so a batch that
died can be run again and do only what is left.

A task's file holds the same lines it printed on stdout, written as they happen; it
is complete when its last line is the task's `result` and that result is not
"interrupted". Anything else (a process killed mid-task, a half-written line, a worker
that died) is torn, and the next run does the task again from the start. A result the
model caused (error, max_turns, stuck) is complete: running it again would replay the
same failure; `--redo` forces it.

File names come from the task id made safe (untrusted text never becomes a path) plus
a short hash of the id, so two ids that clean up alike never share a file. The id
itself is read back from the lines, never from the name.

The summary, `summary-K-of-N.json`, is written when the shard starts (so a shard
killed before its end still says which ids the tasks file had) and again when it ends.

Every file here is opened through agent.run.batch.safe_files: a link planted under DIR
is refused, never written through.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from agent import events as ev
from agent.errors import SessionWriteError, UsageError
from agent.events import Status
from agent.run.batch.safe_files import Refused, create_file, folder, read_regular, replace_file
from agent.run.batch.shard import Shard
from agent.untrusted import TooDeep, json_line, loads

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
SUMMARY_GLOB = "summary-*-of-*.json"
# A result line is a few kB; a task file far bigger than this is someone else's file.
MAX_RESULT_BYTES = 256 * 1024 * 1024


def file_name(task_id: str) -> str:
    clean = _UNSAFE.sub("_", task_id).strip("._")[:60] or "task"
    digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{clean}-{digest}.jsonl"


def summary_name(shard: Shard) -> str:
    return f"summary-{shard.index}-of-{shard.count}.json"


def read_result(path: Path) -> dict[str, Any] | None:
    """The task's `result` line if the file is complete, else None (torn, or not ours)."""
    try:
        with folder(path.parent) as fd:
            return load_result(fd, path.name, path)
    except (OSError, Refused):
        return None


def load_result(dir_fd: int, name: str, shown: Path) -> dict[str, Any] | None:
    """`read_result` for `name` in the folder `dir_fd`. Torn or someone else's: None;
    what no run of bosun leaves (a link, a FIFO, a line nested too deep): Refused."""
    data = read_regular(dir_fd, name, MAX_RESULT_BYTES, shown)
    if not data.endswith(b"\n"):
        return None  # the last line was cut off mid-write
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        record = loads(last.decode("utf-8"))
    except TooDeep as exc:
        raise Refused(f"{shown}: its last line is {exc}; not read") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(record, dict) or record.get("type") != "result":
        return None
    if not isinstance(record.get("task"), str) or record.get("status") == Status.INTERRUPTED:
        return None
    return record


class TaskFile:
    """One task's lines, as they happen. `begin` starts it over (a retry); a result
    that must not count as complete (interrupted, a dead worker) is left out, which
    leaves the file torn on purpose. A write that fails (a full disk) never stops the
    task: `failed` says why, and the file stays torn, so the next run does it again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.failed: str | None = None
        self._fh: IO[str] | None = None
        self._lock = threading.Lock()

    def begin(self) -> None:
        with self._lock:
            self._close()
            try:
                with folder(self.path.parent) as dir_fd:
                    fd = create_file(dir_fd, self.path.name, self.path)
                self._fh = os.fdopen(fd, "w", encoding="utf-8")
            except Refused as exc:
                self.failed = f"cannot write the result file: {exc}"
            except OSError as exc:
                self._failed(exc)

    def write(self, record: dict[str, Any], *, final: bool = False) -> None:
        with self._lock:
            if self._fh is None:
                return
            try:
                self._fh.write(json_line(record) + "\n")
                self._fh.flush()
                if final:
                    os.fsync(self._fh.fileno())
            except OSError as exc:
                self._close()
                self._failed(exc)
                return
            if final:
                self._close()

    def abandon(self) -> None:
        with self._lock:
            self._close()

    def _failed(self, exc: OSError) -> None:
        self.failed = f"cannot write the result file {self.path}: {exc.strerror or exc}"

    def _close(self) -> None:
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None


@dataclass
class ResultsDir:
    """The folder of one batch's results (shared by its shards)."""

    root: Path

    @classmethod
    def open(cls, root: Path) -> ResultsDir:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot make the results folder {root}: {exc.strerror}") from None
        if not root.is_dir():
            raise UsageError(f"--results {root} is not a folder")
        return cls(root.resolve())

    def path(self, task_id: str) -> Path:
        return self.root / file_name(task_id)

    def task_file(self, task_id: str) -> TaskFile:
        return TaskFile(self.path(task_id))

    def recorded(self, task_id: str) -> dict[str, Any] | None:
        """The task's complete result, if a run before this one recorded it."""
        record = read_result(self.path(task_id))
        return record if record is not None and record.get("task") == task_id else None

    def workspaces(self) -> Path:
        return self.root / "workspaces"

    def write_summary(self, shard: Shard, summary: dict[str, Any]) -> None:
        """Atomically (a reader never sees half of it): a .part file renamed."""
        path = self.root / summary_name(shard)
        data = (json.dumps(summary, indent=1) + "\n").encode("utf-8")
        try:
            with folder(self.root) as fd:
                replace_file(fd, path.name, data, path)
        except OSError as exc:
            raise SessionWriteError(f"cannot write {path}: {exc.strerror or exc}") from None


# A task that never started (^C came first): its result, printed by the runner
NOT_STARTED = ev.RunFinished.of(Status.INTERRUPTED)


def result_of(record: dict[str, Any]) -> ev.RunFinished:
    """A recorded result line back as the event (for a skipped task's summary)."""

    def count(key: str) -> int:
        value = record.get(key, 0)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    try:
        status = Status(str(record.get("status")))
    except ValueError:
        status = Status.ERROR
    final = record.get("final_text")
    error = record.get("error")
    return ev.RunFinished(
        status,
        count("turns"),
        count("tool_calls"),
        count("prompt_tokens"),
        count("cached_tokens"),
        count("completion_tokens"),
        count("duration_ms"),
        final if isinstance(final, str) else "",
        error if isinstance(error, str) else None,
    )


def shard_record(
    shard: Shard, all_ids: Iterable[str], mine: Iterable[str], bad_lines: int
) -> dict[str, Any]:
    """What a summary file says about the shard before its counts: the tasks file's
    ids (so a merge can name the ids of a shard that never ran) and this shard's."""
    return {
        "shard": str(shard),
        "ids": list(all_ids),
        "shard_ids": list(mine),
        "bad_lines": bad_lines,
        "finished": False,
    }
