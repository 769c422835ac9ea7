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
from typing import Any, TextIO

from agent import events as ev
from agent.assemble import build_agent, open_model, profile_of, start_session
from agent.budget import Budget
from agent.cancel import Cancel
from agent.constraint import constraint_for
from agent.errors import UsageError
from agent.headless import trace_writer
from agent.mcp.hub import Hub
from agent.mcp.session import begin_hub, finish_hub
from agent.output import JsonlPrinter
from agent.profile import ModelProfile
from agent.runtime import Agent
from agent.session import SessionLog, new_session_id
from agent.tasks_file import BadLine, BatchOptions, Task, load_tasks, read_tasks
from agent.tools import BUILTIN, Tool, default_registry
from agent.tools.sandbox import SandboxPolicy
from agent.untrusted import json_line
from drivers.base import Driver, Usage

EXIT_INTERRUPTED = 130

# --- drivers ------------------------------------------------------------------------


class DriverPool:
    """Hands each task its driver.

    The scripted driver is strict and sequential (call N must be step N), so every task
    replays its own fresh copy of the script. Other drivers are shared; how many tasks
    may use one at a time is its `info.max_concurrency` (1 unless it says more: the
    in-process llama driver has one KV cache).
    """

    def __init__(self, driver: Driver, jobs: int) -> None:
        from drivers.scripted import ScriptedDriver

        self.driver = driver
        self._scripted = isinstance(driver, ScriptedDriver)
        limit = jobs if self._scripted else driver.info.max_concurrency
        self.jobs = max(1, min(jobs, limit))

    def acquire(self) -> Driver:
        from drivers.scripted import ScriptedDriver

        if self._scripted:
            source = self.driver
            assert isinstance(source, ScriptedDriver)
            return ScriptedDriver(source.source, model=source.model, n_ctx=source.n_ctx)
        return self.driver

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

    pool: DriverPool
    profile: ModelProfile
    output: LockedOutput
    trace: Callable[[dict[str, Any]], None] | None
    constrain: str
    cancelled: Cancel
    ablate: frozenset[str] = frozenset()
    context_size: int | None = None
    sandbox: SandboxPolicy | None = None
    tools: tuple[Tool, ...] = ()  # the MCP servers' (one hub for the batch)


def _interrupted() -> ev.RunFinished:
    return ev.RunFinished("interrupted", 0, 0, 0, 0, 0, 0, "")


def run_task(task: Task, shared: _Shared) -> ev.RunFinished:
    """One task, start to `result` event; never raises for a failure of the task itself."""
    printer = shared.output.printer(task.id)
    if shared.cancelled.is_set():
        result = _interrupted()
        printer(result)
        return result
    driver: Driver | None = None
    session: SessionLog | None = None
    agent: Agent | None = None

    def emit(event: ev.AgentEvent) -> None:
        if session is not None:
            session.event(event)
        printer(event)

    trace = shared.trace
    if trace is not None:
        write_trace = trace

        def traced(record: dict[str, Any]) -> None:
            write_trace({"task": task.id, **record})

        trace = traced
    try:
        driver = shared.pool.acquire()
        session = SessionLog(new_session_id())
        agent = build_agent(
            driver,
            shared.profile,
            task.workspace,
            emit,
            on_message=session.message,
            budget=Budget(max_turns=task.max_turns, max_tokens=task.max_tokens),
            approve=task.approve,
            constrain=shared.constrain,
            trace=trace,
            ablate=shared.ablate,
            cancel=shared.cancelled,  # ^C reaches only the main thread, which sets it
            context_size=shared.context_size,
            sandbox=shared.sandbox,
            extra_tools=shared.tools,
        )
        start_session(agent, session.id)
        return agent.run(task.prompt)
    except Exception as exc:  # a harness bug in one task must not take the batch down
        usage = agent.usage if agent is not None else None
        result = ev.RunFinished(
            status="error",
            turns=agent.turns if agent is not None else 0,
            tool_calls=agent.tool_calls if agent is not None else 0,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            cached_tokens=usage.cached_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            duration_ms=0,
            final_text="",
            error=f"internal error: {type(exc).__name__}: {exc}",
        )
        emit(result)
        return result
    finally:
        if session is not None:
            session.close()
        if driver is not None:
            shared.pool.release(driver)


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
        if result.status != "done":
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
    done = sum(1 for r in results if r.status == "done")
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
    result = ev.RunFinished("error", 0, 0, 0, 0, 0, 0, "", error=line.message)
    printer(result)
    return result


def _report_bad_lines(bad: Sequence[BadLine], output: LockedOutput, started: float) -> int:
    results = [_bad_line(line, output) for line in bad]
    output.line(summary(results, round((time.perf_counter() - started) * 1000)))
    return 1


def run_tasks(
    opts: BatchOptions,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stdin: TextIO | None = None,
    driver: Driver | None = None,
) -> int:
    """Run every task; exit code 0 when all are done, 1 when any is not, 130 on ^C.

    `driver` replaces opening --model (tests use it to inject failures). Bad lines of
    the tasks file fail on their own (see the module docstring) unless `opts.strict`.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    bad: list[BadLine] = []
    if opts.strict:
        tasks = load_tasks(opts, stdin)
    else:
        tasks, bad = read_tasks(opts, stdin)
    if not tasks:  # every line is bad: nothing to load a model for
        return _report_bad_lines(bad, LockedOutput(out), time.perf_counter())
    trace = _locked(trace_writer(opts.trace)) if opts.trace is not None else None
    hub = begin_hub(
        opts.mcp_servers,
        opts.workspace.resolve(),
        allow_workspace=opts.allow_workspace_mcp,
        reserved=(t.name for t in BUILTIN),
    )
    try:
        return _run_all(opts, tasks, bad, trace, driver, hub, out, err)
    finally:
        if hub is not None:
            hub.close()


def _run_all(
    opts: BatchOptions,
    tasks: list[Task],
    bad: list[BadLine],
    trace: Callable[[dict[str, Any]], None] | None,
    driver: Driver | None,
    hub: Hub | None,
    out: TextIO,
    err: TextIO,
) -> int:
    if driver is None:
        driver, profile = open_model(opts.model, api=opts.api, context_size=opts.context_size)
    else:
        profile = profile_of(opts.model)
    if hub is not None:
        finish_hub(hub, lambda line: err.write(f"bosun: {line}\n"))
    pool = DriverPool(driver, opts.jobs)
    shared = _Shared(
        pool,
        profile,
        LockedOutput(out),
        trace,
        opts.constrain,
        Cancel(),
        opts.ablate,
        opts.context_size,
        opts.sandbox,
        tuple(hub.tools()) if hub is not None else (),
    )
    try:  # a bad --constrain fails here, once, rather than in every task
        constraint_for(opts.constrain, pool.driver, default_registry(), profile)
    except UsageError:
        pool.close()
        raise
    started = time.perf_counter()
    bad_results = [_bad_line(line, shared.output) for line in bad]
    results: dict[str, ev.RunFinished] = {}
    submitted: dict[str, Future[ev.RunFinished]] = {}
    interrupted = False
    try:
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
    finally:
        pool.close()
    for task in tasks:
        ran = submitted.get(task.id)
        if ran is not None and ran.done() and not ran.cancelled():
            results[task.id] = ran.result()
        else:  # never started
            results[task.id] = _interrupted()
            shared.output.printer(task.id)(results[task.id])
    ordered = bad_results + [results[t.id] for t in tasks]
    wall_ms = round((time.perf_counter() - started) * 1000)
    shared.output.line(summary(ordered, wall_ms))
    if interrupted or any(r.status == "interrupted" for r in ordered):
        return EXIT_INTERRUPTED
    return 0 if all(r.status == "done" for r in ordered) else 1
