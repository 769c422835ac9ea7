"""`bosun run --tasks FILE.jsonl`: many headless runs against one model, concurrently.

Each task runs through the same Agent as `bosun run` and gets its own history, tools,
workspace and session file; only the driver is shared. A task failing (a driver error,
a budget, even a harness bug) ends that task with a `result` event and never stops the
others. Every event on stdout carries `"task": ID`, lines are written whole under one
lock, and a `summary` line ends the output.

The tasks file is checked completely before the model is loaded, so a typo on line 40
costs nothing. A bad line (not JSON, a missing prompt, a duplicate id…) does not stop
the good ones: it is reported on stdout as a `diagnostic` and then a `result` with
status "error", both tagged `"task": "line N"`, whose message names the file and line;
it counts as a failed task in the summary, so the exit code is 1. With `strict`
(`--strict`), any bad line refuses the whole file before anything runs (a UsageError,
exit 2). A tasks file that is missing, unreadable or empty is always a UsageError.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from agent import events as ev
from agent.errors import HarnessError
from agent.events import Status
from agent.loop.cancel import Cancel
from agent.loop.constraint import constraint_for
from agent.loop.runtime import Agent
from agent.run.assemble import Assembly, Trace, recording, start_session, trace_writer
from agent.run.custom_commands import expand_prompt
from agent.run.output import JsonlPrinter
from agent.run.settings import Settings
from agent.run.tasks_file import BadLine, Task, load_tasks, read_tasks
from agent.session import SessionLog, new_session_id
from agent.untrusted import json_line, visible
from drivers.base import Driver, Usage

__all__ = ["DriverPool", "load_tasks", "run_tasks"]

EXIT_INTERRUPTED = Status.INTERRUPTED.exit_code

# --- drivers ------------------------------------------------------------------------


class DriverPool:
    """Hands each task its driver.

    A driver that says it is not to be shared (`info.fresh`: the scripted driver is
    strict and sequential, call N must be step N) gives every task a fresh copy of
    itself. Other drivers are shared; how many tasks may use one at a time is its
    `info.max_concurrency` (1 unless it says more: the in-process llama driver has one
    KV cache).
    """

    def __init__(self, driver: Driver, jobs: int) -> None:
        self.driver = driver
        self._fresh = driver.info.fresh
        limit = jobs if self._fresh is not None else driver.info.max_concurrency
        self.jobs = max(1, min(jobs, limit))

    def acquire(self) -> Driver:
        return self._fresh() if self._fresh is not None else self.driver

    def release(self, driver: Driver) -> None:
        if driver is not self.driver:
            driver.close()

    def close(self) -> None:
        self.driver.close()


# --- running ------------------------------------------------------------------------


class LockedOutput:
    """One stdout shared by every task: a line is written whole or not at all."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.lock = threading.Lock()

    def printer(self, task_id: str) -> Callable[[ev.AgentEvent], None]:
        printer = JsonlPrinter(self.out, extra={"task": task_id})

        def write(event: ev.AgentEvent) -> None:
            with self.lock:
                printer(event)

        return write

    def line(self, record: dict[str, Any]) -> None:
        with self.lock:
            self.out.write(json_line(record) + "\n")
            self.out.flush()


@dataclass
class _Shared:
    """What every task of one batch uses."""

    assembly: Assembly
    pool: DriverPool
    output: LockedOutput
    trace: Trace | None
    cancelled: Cancel
    # one line on stderr for a session file that could not be written (a full disk):
    # said once for the batch, not once a task
    warn: Callable[[str], None] = lambda _line: None


def run_task(task: Task, shared: _Shared) -> ev.RunFinished:
    """One task, start to `result` event; never raises for a failure of the task itself."""
    printer = shared.output.printer(task.id)
    if shared.cancelled.is_set():
        result = ev.RunFinished.of(Status.INTERRUPTED)
        printer(result)
        return result
    driver: Driver | None = None
    log: SessionLog | None = None
    agent: Agent | None = None
    emit = recording(lambda: log, printer)
    trace = shared.trace
    if trace is not None:
        write_trace = trace

        def traced(record: dict[str, Any]) -> None:
            write_trace({"task": task.id, **record})

        trace = traced
    try:
        driver = shared.pool.acquire()
        log = SessionLog(new_session_id())
        agent = shared.assembly.agent(
            emit,
            on_message=log.message,
            settings=task.settings,
            trace=trace,
            cancel=shared.cancelled,  # ^C reaches only the main thread, which sets it
            driver=driver,
        )
        start_session(agent, log.id)
        return agent.run(expand_prompt(task.prompt, task.settings.workspace))
    except Exception as exc:  # a harness bug in one task must not take the batch down
        # the sessions folder unwritable is the harness's (a UsageError), not a bug
        known = isinstance(exc, HarnessError)
        error = str(exc) if known else f"internal error: {type(exc).__name__}: {exc}"
        result = ev.RunFinished.of(Status.ERROR, agent.state if agent else None, error=error)
        emit(result)
        return result
    finally:
        if log is not None:
            shared.assembly.release(log.id)  # its spans go out now, not at the end
            log.close()
            if log.failed:
                shared.warn(log.failed)
        if driver is not None:
            shared.pool.release(driver)


def _once(err: TextIO) -> Callable[[str], None]:
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


def _locked(write: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """Trace records can be megabytes; two tasks appending at once must not mix them."""
    lock = threading.Lock()

    def locked(record: dict[str, Any]) -> None:
        with lock:
            write(record)

    return locked


class _Progress:
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

    def __enter__(self) -> _Progress:
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


def _bad_line(line: BadLine, output: LockedOutput) -> ev.RunFinished:
    """A bad tasks-file line: a diagnostic, then its failed result, tagged "line N"."""
    printer = output.printer(line.label)
    printer(ev.Diagnostic(line.message))
    result = ev.RunFinished.of(Status.ERROR, error=line.message)
    printer(result)
    return result


def _report_bad_lines(bad: Sequence[BadLine], output: LockedOutput, started: float) -> int:
    results = [_bad_line(line, output) for line in bad]
    output.line(summary(results, round((time.perf_counter() - started) * 1000)))
    return 1


def run_tasks(
    settings: Settings,
    tasks_file: Path,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stdin: TextIO | None = None,
    driver: Driver | None = None,
) -> int:
    """Run every task; exit code 0 when all are done, 1 when any is not, 130 on ^C.

    `driver` replaces opening the model (tests use it to inject failures). Bad lines of
    the tasks file fail on their own (see the module docstring) unless `settings.strict`.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    bad: list[BadLine] = []
    if settings.strict:
        tasks = load_tasks(settings, tasks_file, stdin)
    else:
        tasks, bad = read_tasks(settings, tasks_file, stdin)
    if not tasks:  # every line is bad: nothing to load a model for
        return _report_bad_lines(bad, LockedOutput(out), time.perf_counter())
    trace = _locked(trace_writer(settings.trace)) if settings.trace is not None else None
    settings = settings.but(workspace=settings.workspace.resolve())
    report: Callable[[str], None] = lambda line: err.write(f"bosun: {line}\n")  # noqa: E731
    with Assembly.open(settings, driver=driver, report=report) as assembly:
        pool = DriverPool(assembly.driver, settings.jobs)
        # a bad --constrain fails here, once, rather than in every task
        constraint_for(settings.constrain, pool.driver, assembly.tools(), assembly.profile)
        shared = _Shared(assembly, pool, LockedOutput(out), trace, Cancel(), _once(err))
        return _run_all(tasks, bad, shared, err, out)


def _run_all(
    tasks: list[Task], bad: list[BadLine], shared: _Shared, err: TextIO, out: TextIO
) -> int:
    pool = shared.pool
    started = time.perf_counter()
    bad_results = [_bad_line(line, shared.output) for line in bad]
    results: dict[str, ev.RunFinished] = {}
    submitted: dict[str, Future[ev.RunFinished]] = {}
    interrupted = False
    with (
        _Progress(len(tasks), err, out) as bar,
        ThreadPoolExecutor(max_workers=pool.jobs, thread_name_prefix="bosun-task") as executor,
    ):
        # Submitting is inside the try too: the first task may already be running
        # (and ^C may arrive) before the last one is queued.
        try:
            for task in tasks:
                submitted[task.id] = executor.submit(run_task, task, shared)
            for future in as_completed(submitted.values()):
                result = future.result()
                bar.advance(result)
        except KeyboardInterrupt:
            interrupted = True
            shared.cancelled.set()
            for future in submitted.values():
                future.cancel()
        # Leaving the executor waits for running tasks; once cancelled, they end
        # at their next event.
    for task in tasks:
        ran = submitted.get(task.id)
        if ran is not None and ran.done() and not ran.cancelled():
            results[task.id] = ran.result()
        else:  # never started
            results[task.id] = ev.RunFinished.of(Status.INTERRUPTED)
            shared.output.printer(task.id)(results[task.id])
    ordered = bad_results + [results[t.id] for t in tasks]
    wall_ms = round((time.perf_counter() - started) * 1000)
    shared.output.line(summary(ordered, wall_ms))
    if interrupted or any(r.status == Status.INTERRUPTED for r in ordered):
        return EXIT_INTERRUPTED
    return 0 if all(r.status == Status.DONE for r in ordered) else 1
