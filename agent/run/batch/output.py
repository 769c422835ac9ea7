"""Where a batch's lines go: stdout (whole lines under one lock, each tagged with its
task), each task's results file (agent.run.batch.results), the progress bar on stderr,
and the closing `summary` line."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from agent import events as ev
from agent.events import Status
from agent.run.batch.results import TaskFile
from agent.run.output import JsonlPrinter
from agent.run.tasks_file import BadLine
from agent.untrusted import json_line, visible
from drivers.base import Usage

Emit = Callable[[ev.AgentEvent], None]
# How the `error` of a result begins when the task did not end by itself (its worker
# died twice, or could not sandbox bash): not recorded, so a later run does it again.
NOT_FINAL = "not run to its end: "


class LockedOutput:
    """One stdout shared by every task: a line is written whole or not at all."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.lock = threading.Lock()

    def printer(self, task_id: str, file: TaskFile | None = None) -> Emit:
        """The task's events, tagged: on stdout, and in its results file when there is
        one. A result that is not final (interrupted, or a worker that died) is kept out
        of the file, so the next run does the task again."""
        printer = JsonlPrinter(self.out, extra={"task": task_id})

        def write(event: ev.AgentEvent) -> None:
            with self.lock:
                printer(event)
            if file is None or event.transient:
                return
            if isinstance(event, ev.RunFinished):
                if event.status == Status.INTERRUPTED or (event.error or "").startswith(NOT_FINAL):
                    file.abandon()
                    return
                file.write({**event.to_dict(), "task": task_id}, final=True)
            else:
                file.write({**event.to_dict(), "task": task_id})

        return write

    def line(self, record: dict[str, Any]) -> None:
        with self.lock:
            self.out.write(json_line(record) + "\n")
            self.out.flush()


def warn_once(err: TextIO) -> Callable[[str], None]:
    """`bosun: error: LINE` on stderr, each distinct line once (a full disk fails every
    task the same way: one line says it)."""
    said: set[str] = set()
    lock = threading.Lock()

    def warn(line: str) -> None:
        key = line.split(": ")[-1]  # the reason, whichever task's file it was
        with lock:
            if key in said:
                return
            said.add(key)
            err.write(f"bosun: error: {visible(line)}\n")
            err.flush()

    return warn


def locked(write: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """Trace records can be megabytes; two tasks appending at once must not mix them."""
    lock = threading.Lock()

    def locked(record: dict[str, Any]) -> None:
        with lock:
            write(record)

    return locked


class Progress:
    """A rich progress bar on stderr, or nothing.

    Shown only when stderr is a terminal and stdout is not: with both on one terminal,
    the JSONL lines would tear the bar's redraws apart.
    """

    def __init__(self, total: int, err: TextIO, out: TextIO) -> None:
        self._bar: Any = None
        self._id: Any = None
        self.failed = 0
        if not (_isatty(err) and not _isatty(out)):
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self._bar = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(file=err),
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._id = self._bar.add_task("tasks", total=total)

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, result: ev.RunFinished) -> None:
        if result.status != Status.DONE:
            self.failed += 1
        if self._bar is not None:
            label = f"tasks ({self.failed} failed)" if self.failed else "tasks"
            self._bar.update(self._id, advance=1, description=label)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def summary(results: Sequence[ev.RunFinished], wall_ms: int) -> dict[str, Any]:
    done = sum(1 for r in results if r.status == Status.DONE)
    total = Usage()
    for r in results:
        total.add(Usage(r.prompt_tokens, r.cached_tokens, r.completion_tokens))
    return {
        "type": "summary",
        "done": done,
        "failed": len(results) - done,
        "tasks": len(results),
        "prompt_tokens": total.prompt_tokens,
        "cached_tokens": total.cached_tokens,
        "completion_tokens": total.completion_tokens,
        "wall_ms": wall_ms,
    }


def bad_line(line: BadLine, output: LockedOutput) -> ev.RunFinished:
    """A bad tasks-file line: a diagnostic, then its failed result, tagged "line N"."""
    printer = output.printer(line.label)
    printer(ev.Diagnostic(line.message))
    result = ev.RunFinished.of(Status.ERROR, error=line.message)
    printer(result)
    return result
