"""What a Ray worker runs for a batch (agent.run.batch.ray_executor submits it). Plain
Python with no Ray in it: Ray pickles these by their module path, and the worker
imports bosun as the head does.

A task's events come back as a generator: the task runs in a thread of the worker and
its events pass through a queue, so the head prints each event as it happens, tagged
with its task, exactly as the local executor would. A worker checks the sandbox for
itself (`rebind`): the head's policy names the head's bwrap, and a worker without a
working one refuses the task instead of running bash unsandboxed.
"""

from __future__ import annotations

import os
import queue
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.errors import HarnessError
from agent.loop.cancel import Cancel
from agent.run.assemble import Assembly, trace_writer
from agent.run.batch.output import NOT_FINAL
from agent.run.batch.task import DriverPool, Shared, run_task
from agent.run.models import open_model
from agent.run.settings import Settings
from agent.run.tasks_file import Task
from agent.tools.sandbox import rebind

_END = object()
# Models this worker process opened (an actor opens its model once: tests read this).
LOADS = 0


class SandboxRefused(HarnessError):
    """This worker cannot sandbox bash and the batch asked for a sandbox."""


def worker_settings(settings: Settings) -> Settings:
    if settings.sandbox is None:
        return settings
    found = rebind(settings.sandbox)
    if isinstance(found, str):
        raise SandboxRefused(
            f"{NOT_FINAL}worker {socket.gethostname()} cannot sandbox bash ({found}),"
            " and refuses to run it unsandboxed"
        )
    return settings.but(sandbox=found)


def open_assembly(settings: Settings, threads: int | None = None) -> Assembly:
    global LOADS
    driver = None
    if threads is not None:  # the in-process model, on this actor's share of the CPUs
        driver, _profile = open_model(
            settings.model, context_size=settings.context_size, threads=threads
        )
    assembly = Assembly.open(settings, driver=driver, report=lambda _line: None)
    LOADS += 1
    return assembly


def events_of(task: Task, assembly: Assembly, workspaces: Path | None) -> Iterator[Any]:
    """The task's events as it runs (transient ones left out: they are for a screen);
    the last is its result. Closing the generator (the head cancelled) stops the task."""
    events: queue.Queue[Any] = queue.Queue()
    cancelled = Cancel()
    trace = None
    if assembly.settings.trace is not None:
        trace = trace_writer(assembly.settings.trace)

    def put(event: ev.AgentEvent) -> None:
        if not event.transient:
            events.put(event)

    shared = Shared(
        assembly,
        DriverPool(assembly.driver, 1),
        lambda _task_id: put,
        trace,
        cancelled,
        workspaces=workspaces,
    )

    def work() -> None:
        try:
            run_task(task, shared)
        finally:
            events.put(_END)

    thread = threading.Thread(target=work, name=f"bosun-task-{task.id[:20]}", daemon=True)
    thread.start()
    try:
        while (item := events.get()) is not _END:
            yield item
    finally:
        cancelled.set()
        thread.join(timeout=30)


def task_stream(settings: Settings, task: Task, workspaces: Path | None) -> Iterator[Any]:
    """A Ray task: one task on a served model, its driver opened here for it."""
    assembly = open_assembly(worker_settings(settings))
    try:
        yield from events_of(task, assembly, workspaces)
    finally:
        assembly.close()


class TaskActor:
    """A Ray actor: one in-process model, loaded once, and its warm head kept in
    memory from task to task (the driver's saved prefix state)."""

    def __init__(self, settings: Settings, threads: int) -> None:
        self.refused: SandboxRefused | None = None
        self.assembly: Assembly | None = None
        try:
            settings = worker_settings(settings)
        except SandboxRefused as exc:
            self.refused = exc
            return
        self.assembly = open_assembly(settings, threads)

    def run(self, task: Task, workspaces: Path | None) -> Iterator[Any]:
        if self.refused is not None:
            raise self.refused
        assert self.assembly is not None
        yield from events_of(task, self.assembly, workspaces)

    def where(self) -> dict[str, Any]:
        return {"host": socket.gethostname(), "pid": os.getpid(), "loads": LOADS}
