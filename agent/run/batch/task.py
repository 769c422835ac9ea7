"""One batch task, start to `result` event, wherever it runs: a thread of this process
(agent.run.batch.local) or a Ray worker (agent.run.batch.remote). A task failing (a
driver error, a budget, even a harness bug) ends that task with a `result` event and
never stops the others."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.errors import HarnessError
from agent.events import Status
from agent.loop.cancel import Cancel
from agent.loop.runtime import Agent
from agent.run.assemble import Assembly, Trace, recording, start_session
from agent.run.batch.results import file_name
from agent.run.batch.workspaces import task_workspace
from agent.run.custom_commands import expand_prompt
from agent.run.tasks_file import Task
from agent.session import SessionLog, new_session_id
from drivers.base import Driver

Emit = Callable[[ev.AgentEvent], None]


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


@dataclass
class Shared:
    """What every task of one batch (or of one worker) uses. `printer(task_id)`: where
    the task's events go; `workspaces`: where built workspaces are kept (None: a
    temporary folder each)."""

    assembly: Assembly
    pool: DriverPool
    printer: Callable[[str], Emit]
    trace: Trace | None
    cancelled: Cancel
    # one line on stderr for a session file that could not be written (a full disk):
    # said once for the batch, not once a task
    warn: Callable[[str], None] = lambda _line: None
    workspaces: Path | None = None


def _tagged(trace: Trace | None, task_id: str) -> Trace | None:
    if trace is None:
        return None
    write_trace = trace

    def traced(record: dict[str, Any]) -> None:
        write_trace({"task": task_id, **record})

    return traced


def run_task(task: Task, shared: Shared) -> ev.RunFinished:
    """One task, start to `result` event; never raises for a failure of the task itself."""
    printer = shared.printer(task.id)
    if shared.cancelled.is_set():
        result = ev.RunFinished.of(Status.INTERRUPTED)
        printer(result)
        return result
    driver: Driver | None = None
    log: SessionLog | None = None
    agent: Agent | None = None
    emit = recording(lambda: log, printer)
    name = file_name(task.id).removesuffix(".jsonl")
    try:
        with task_workspace(task, shared.workspaces, name) as t:
            driver = shared.pool.acquire()
            log = SessionLog(new_session_id())
            agent = shared.assembly.agent(
                emit,
                on_message=log.message,
                settings=t.settings,
                trace=_tagged(shared.trace, t.id),
                cancel=shared.cancelled,  # ^C reaches only the main thread, which sets it
                driver=driver,
            )
            start_session(agent, log.id)
            return agent.run(expand_prompt(t.prompt, t.settings.workspace))
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
