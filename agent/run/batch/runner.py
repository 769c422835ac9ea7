"""`bosun run --tasks`: read the file, take this shard's share, skip what `--results`
already holds, run the rest on an executor (this process's threads, or Ray), and end
with the `summary` line (and the shard's summary file)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from agent import events as ev
from agent.events import Status
from agent.loop.cancel import Cancel
from agent.loop.constraint import constraint_for
from agent.run.assemble import Assembly, trace_writer
from agent.run.batch.output import (
    Emit,
    LockedOutput,
    bad_line,
    locked,
    summary,
    warn_once,
)
from agent.run.batch.results import NOT_STARTED, ResultsDir, TaskFile, result_of, shard_record
from agent.run.batch.shard import resolve_shard
from agent.run.batch.task import DriverPool, Shared
from agent.run.settings import Settings
from agent.run.tasks_file import BadLine, Task, load_tasks, read_tasks
from agent.untrusted import visible
from drivers.base import Driver

EXIT_INTERRUPTED = Status.INTERRUPTED.exit_code
EXECUTORS = ("local", "ray")


class Sinks:
    """Each task's printer: stdout, and its results file when there is a --results."""

    def __init__(self, output: LockedOutput, results: ResultsDir | None) -> None:
        self.output = output
        self.results = results
        self.files: list[TaskFile] = []

    def printer(self, task_id: str) -> Emit:
        """Called when the task starts: its results file is begun (emptied) now."""
        if self.results is None:
            return self.output.printer(task_id)
        file = self.results.task_file(task_id)
        file.begin()
        self.files.append(file)
        return self.output.printer(task_id, file)


def run_tasks(
    settings: Settings,
    tasks_file: Path,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stdin: TextIO | None = None,
    driver: Driver | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Run every task of this shard; exit code 0 when all are done (and recorded, with
    --results), 1 when any is not, 130 on ^C.

    `driver` replaces opening the model (tests use it to inject failures). Bad lines of
    the tasks file fail on their own (see agent.run.batch) unless `settings.strict`.
    `env`: where Slurm's or Kubernetes' shard variables are read (os.environ).
    """
    out = out or sys.stdout
    err = err or sys.stderr
    if settings.executor not in EXECUTORS:
        from agent.errors import UsageError

        raise UsageError(f"--executor must be one of {', '.join(EXECUTORS)}")
    shard = resolve_shard(settings.shard, os.environ if env is None else env)
    bad: list[BadLine] = []
    if settings.strict:
        tasks = load_tasks(settings, tasks_file, stdin)
    else:
        tasks, bad = read_tasks(settings, tasks_file, stdin)
    all_ids = [t.id for t in tasks]
    tasks = [t for t in tasks if shard.holds(t.id)]
    bad = [line for line in bad if shard.holds(line.label)]
    started = time.perf_counter()
    output = LockedOutput(out)
    results = ResultsDir.open(settings.results) if settings.results is not None else None
    done_before: dict[str, ev.RunFinished] = {}
    if results is not None:
        results.write_summary(shard, shard_record(shard, all_ids, [t.id for t in tasks], len(bad)))
        if not settings.redo:
            for task in tasks:
                found = results.recorded(task.id)
                if found is not None:
                    done_before[task.id] = result_of(found)
    to_run = [t for t in tasks if t.id not in done_before]
    bad_results = [bad_line(line, output) for line in bad]
    ran: dict[str, ev.RunFinished] = {}
    interrupted = False
    sinks = Sinks(output, results)
    if to_run:  # else nothing is left (or every line was bad): no model to load
        ran, interrupted = _execute(to_run, settings, sinks, driver, err, out)
    for task in to_run:
        if ran[task.id].status == Status.INTERRUPTED and not _printed(ran[task.id]):
            output.printer(task.id)(ran[task.id])  # never started
    ordered = bad_results + [done_before.get(t.id) or ran[t.id] for t in tasks]
    record = summary(ordered, round((time.perf_counter() - started) * 1000))
    if done_before:
        record["skipped"] = len(done_before)
    if not shard.whole:
        record["shard"] = str(shard)
    output.line(record)
    if results is not None:
        shard_info = shard_record(shard, all_ids, [t.id for t in tasks], len(bad))
        results.write_summary(shard, {**shard_info, **record, "finished": not interrupted})
    if interrupted or any(r.status == Status.INTERRUPTED for r in ordered):
        return EXIT_INTERRUPTED
    # a result not recorded (a full disk, a link refused) is said on stderr: not a 0
    unrecorded = any(file.failed for file in sinks.files)
    return 0 if all(r.status == Status.DONE for r in ordered) and not unrecorded else 1


def _printed(result: ev.RunFinished) -> bool:
    """Whether a task's result was already on stdout: only never-started tasks' are not
    (theirs is made by the executor without a printer: see NOT_STARTED)."""
    return result is not NOT_STARTED


def _execute(
    tasks: list[Task],
    settings: Settings,
    sinks: Sinks,
    driver: Driver | None,
    err: TextIO,
    out: TextIO,
) -> tuple[dict[str, ev.RunFinished], bool]:
    trace = locked(trace_writer(settings.trace)) if settings.trace is not None else None
    settings = settings.but(workspace=settings.workspace.resolve())
    warn = warn_once(err)
    results = sinks.results
    workspaces = results.workspaces() if results is not None else None
    try:
        if settings.executor == "ray":
            from agent.run.batch.ray_executor import run_on_ray

            return run_on_ray(tasks, settings, sinks.printer, warn, err, out, workspaces)

        def report(line: str) -> None:  # an MCP server's words: its stderr, its tool names
            err.write(f"bosun: {visible(line)}\n")

        with Assembly.open(settings, driver=driver, report=report) as assembly:
            pool = DriverPool(assembly.driver, settings.jobs)
            # a bad --constrain fails here, once, rather than in every task
            constraint_for(settings.constrain, pool.driver, assembly.tools(), assembly.profile)
            shared = Shared(assembly, pool, sinks.printer, trace, Cancel(), warn, workspaces)
            from agent.run.batch.local import run_local

            return run_local(tasks, shared, err, out)
    finally:
        for file in sinks.files:
            if file.failed:
                warn(file.failed)
