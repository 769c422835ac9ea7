"""The local executor: the tasks in a pool of threads of this process, on one model."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import TextIO

from agent import events as ev
from agent.run.batch.output import Progress
from agent.run.batch.results import NOT_STARTED
from agent.run.batch.task import Shared, run_task
from agent.run.tasks_file import Task


def run_local(
    tasks: list[Task], shared: Shared, err: TextIO, out: TextIO
) -> tuple[dict[str, ev.RunFinished], bool]:
    """Each task's result (a task that never started: "interrupted"), and whether ^C
    stopped the batch."""
    results: dict[str, ev.RunFinished] = {}
    submitted: dict[str, Future[ev.RunFinished]] = {}
    interrupted = False
    with (
        Progress(len(tasks), err, out) as bar,
        ThreadPoolExecutor(max_workers=shared.pool.jobs, thread_name_prefix="bosun-task") as pool,
    ):
        # Submitting is inside the try too: the first task may already be running
        # (and ^C may arrive) before the last one is queued.
        try:
            for task in tasks:
                submitted[task.id] = pool.submit(run_task, task, shared)
            for future in as_completed(submitted.values()):
                bar.advance(future.result())
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
        else:
            results[task.id] = NOT_STARTED
    return results, interrupted
