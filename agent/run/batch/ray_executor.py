"""`--executor ray`: a batch's tasks on a Ray cluster (the optional extra `bosun[ray]`,
imported only here).

A served model (`openai:`, `scripted:`) costs nothing to open, so each task is a Ray
task that opens it for itself. An in-process GGUF model is loaded once per Ray actor,
`--jobs` actors in all, each keeping its warm head (the saved prefix state) from task
to task: data-parallel llama.cpp. Either way at most `--jobs` tasks run at once, and
each task's events come back as a Ray generator, printed as they arrive, tagged with
the task, in the same JSONL as the local executor's.

A task is run again, once, only when its worker died under it (the process killed,
the node lost): Ray's own retries are off, because a task that failed by itself (the
model's failure, a bug) would fail the same way again. ^C cancels every task and
kills the actors.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import agent
from agent import events as ev
from agent.errors import UsageError
from agent.events import Status
from agent.run.batch.output import NOT_FINAL, Emit, Progress
from agent.run.batch.results import NOT_STARTED
from agent.run.models import profile_of
from agent.run.settings import Settings
from agent.run.tasks_file import Task
from drivers.bundled import resolve_model

RETRIES = 1  # a task whose worker died runs once more
# what a worker is told of this process's environment: where its sessions, models and
# saved states go, and where the head's bosun is (a checkout, not an installed copy)
PASSED_ENV = ("BOSUN_HOME", "BOSUN_CACHE", "BOSUN_PREFIX_CACHE", "BOSUN_PREFIX_CACHE_MAX",
              "BOSUN_BWRAP")  # fmt: skip
SERVED = ("openai:", "scripted:")


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError(
            "--executor ray needs Ray: pip install 'bosun[ray]' (or ray) on every machine"
        ) from None
    return ray


def infrastructure_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """The failures of the machinery, not of the task: worth running the task again."""
    x = ray.exceptions
    return (
        x.WorkerCrashedError,
        x.RayActorError,  # ActorDiedError, ActorUnavailableError
        x.NodeDiedError,
        x.ObjectLostError,  # OwnerDiedError, ObjectReconstructionFailedError…
        x.LocalRayletDiedError,
    )


def portable(settings: Settings) -> Settings:
    """Settings a worker can use: paths made absolute (a worker's folder is not ours)."""
    model = settings.model
    scheme, _, rest = model.partition(":")
    if scheme == "scripted" and rest:
        model = f"scripted:{Path(rest).resolve()}"
    elif not model.startswith(SERVED) and Path(model).exists():
        model = str(Path(model).resolve())
    trace = settings.trace.resolve() if settings.trace is not None else None
    return settings.but(model=model, trace=trace)


def runtime_env() -> dict[str, Any]:
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    root = str(Path(agent.__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH")
    env["PYTHONPATH"] = f"{root}{os.pathsep}{path}" if path else root
    return {"env_vars": env}


@dataclass
class _Run:
    """One batch on the cluster: what is running, so ^C can cancel it."""

    ray: Any
    settings: Settings
    printer: Callable[[str], Emit]
    warn: Callable[[str], None]
    workspaces: Path | None
    cancelled: threading.Event
    actors: queue.Queue[Any] | None = None
    actor_class: Any = None
    task_fn: Any = None
    threads: int = 1  # each actor's CPUs, and its model's threads

    def __post_init__(self) -> None:
        self.running: dict[str, Any] = {}
        self.all_actors: list[Any] = []
        self.lock = threading.Lock()

    def new_actor(self) -> Any:
        actor = self.actor_class.remote(self.settings, self.threads)
        with self.lock:
            self.all_actors.append(actor)
        return actor

    def retire(self, actor: Any) -> None:
        with self.lock:
            if actor in self.all_actors:
                self.all_actors.remove(actor)
        self.ray.kill(actor)

    def run(self, task: Task) -> ev.RunFinished:
        infra = infrastructure_errors(self.ray)
        for attempt in range(RETRIES + 1):
            if self.cancelled.is_set():
                return NOT_STARTED
            printer = self.printer(task.id)
            actor = self.actors.get() if self.actors is not None else None
            try:
                return self._attempt(task, printer, actor)
            except infra as exc:
                if self.cancelled.is_set():
                    return self._interrupted(printer)
                if getattr(exc, "actor_init_failed", False):
                    # the model did not open: not the machinery's fault, and the same
                    # for every task (each fails at once on this actor)
                    result = ev.RunFinished.of(Status.ERROR, error=_first_line(exc))
                    printer(result)
                    return result
                reason = f"the worker died ({type(exc).__name__})"
                if actor is not None:
                    self.retire(actor)
                    actor = self.new_actor()
                if attempt < RETRIES:
                    self.warn(f"task {task.id}: {reason}; running it again")
                    printer(ev.Diagnostic(f"{reason}; running the task again"))
                    continue
                error = f"{NOT_FINAL}{reason} {RETRIES + 1} times; run the batch again to redo it"
                result = ev.RunFinished.of(Status.ERROR, error=error)
                printer(result)
                return result
            except (self.ray.exceptions.TaskCancelledError, KeyboardInterrupt):
                return self._interrupted(printer)
            except self.ray.exceptions.RayTaskError as exc:  # raised by bosun on the worker
                cause = exc.cause if exc.cause is not None else exc
                result = ev.RunFinished.of(Status.ERROR, error=str(cause))
                printer(result)
                return result
            except Exception as exc:  # a bug here must not take the batch down
                error = f"internal error: {type(exc).__name__}: {exc}"
                result = ev.RunFinished.of(Status.ERROR, error=error)
                printer(result)
                return result
            finally:
                if actor is not None and self.actors is not None:
                    self.actors.put(actor)
        raise AssertionError("unreachable")

    def _attempt(self, task: Task, printer: Emit, actor: Any) -> ev.RunFinished:
        if actor is not None:
            stream = actor.run.remote(task, self.workspaces)
        else:
            stream = self.task_fn.remote(self.settings, task, self.workspaces)
        with self.lock:
            self.running[task.id] = (stream, actor)
        try:
            result: ev.RunFinished | None = None
            for ref in stream:
                event = self.ray.get(ref)
                printer(event)
                if isinstance(event, ev.RunFinished):
                    result = event
            if result is None:
                raise self.ray.exceptions.WorkerCrashedError()
            return result
        finally:
            with self.lock:
                self.running.pop(task.id, None)

    def _interrupted(self, printer: Emit) -> ev.RunFinished:
        result = ev.RunFinished.of(Status.INTERRUPTED)
        printer(result)
        return result

    def cancel(self) -> None:
        self.cancelled.set()
        with self.lock:
            running = list(self.running.values())
            actors = list(self.all_actors)
        for stream, actor in running:
            # already finished, or its worker gone: nothing to cancel
            with contextlib.suppress(Exception):
                self.ray.cancel(stream, force=actor is None)
        for actor in actors:
            self.ray.kill(actor)


def _first_line(exc: BaseException) -> str:
    """A worker's error in one line: the last line of what Ray says is the cause."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def run_on_ray(
    tasks: list[Task],
    settings: Settings,
    printer: Callable[[str], Emit],
    warn: Callable[[str], None],
    err: TextIO,
    out: TextIO,
    workspaces: Path | None,
) -> tuple[dict[str, ev.RunFinished], bool]:
    """Each task's result, and whether ^C stopped the batch (as run_local)."""
    ray = _ray()
    # a bad model is a usage error here, once, not an error on every worker
    profile_of(settings.model)
    if not settings.model.startswith(SERVED):
        resolve_model(settings.model)
    settings = portable(settings)
    # Ray prints what its raylet says ("a worker died…") on sys.stdout, which is our
    # JSONL: its lines go to stderr instead, ours to the stdout we were given.
    stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        try:
            ray.init(
                address=settings.ray_address,
                runtime_env=runtime_env(),
                log_to_driver=False,  # a worker's prints would land in our JSONL
                include_dashboard=False,
                logging_level=logging.WARNING,
                configure_logging=True,
            )
        except Exception as exc:  # no cluster there, a wrong token, a bad address…
            where = settings.ray_address or "RAY_ADDRESS, or a new local cluster"
            raise UsageError(f"cannot start or join Ray ({where}): {_first_line(exc)}") from None
        return _run(ray, tasks, settings, printer, warn, err, out, workspaces)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        sys.stdout = stdout


def _run(
    ray: Any,
    tasks: list[Task],
    settings: Settings,
    printer: Callable[[str], Emit],
    warn: Callable[[str], None],
    err: TextIO,
    out: TextIO,
    workspaces: Path | None,
) -> tuple[dict[str, ev.RunFinished], bool]:
    from agent.run.batch import remote

    jobs = max(1, settings.jobs)
    batch = _Run(ray, settings, printer, warn, workspaces, threading.Event())
    if settings.model.startswith(SERVED):
        batch.task_fn = ray.remote(num_cpus=1, max_retries=0)(remote.task_stream)
    else:
        # The cluster's CPUs shared out: an actor is never left waiting for a CPU that
        # will not come, and its llama.cpp threads do not fight the other actors' for them.
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        if jobs > cpus:
            warn(f"ray: the cluster has {cpus} CPUs: {cpus} actors, not {jobs}")
            jobs = cpus
        batch.threads = max(1, cpus // jobs)
        batch.actor_class = ray.remote(num_cpus=batch.threads, max_restarts=0, max_task_retries=0)(
            remote.TaskActor
        )
        batch.actors = queue.Queue()
        for _ in range(jobs):
            batch.actors.put(batch.new_actor())
    results: dict[str, ev.RunFinished] = {}
    submitted: dict[str, Future[ev.RunFinished]] = {}
    interrupted = False
    with (
        Progress(len(tasks), err, out) as bar,
        ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="bosun-ray") as pool,
    ):
        try:
            for task in tasks:
                submitted[task.id] = pool.submit(batch.run, task)
            for future in as_completed(submitted.values()):
                bar.advance(future.result())
        except KeyboardInterrupt:
            interrupted = True
            batch.cancel()
            for future in submitted.values():
                future.cancel()
    for task in tasks:
        ran = submitted.get(task.id)
        done = ran is not None and ran.done() and not ran.cancelled()
        results[task.id] = ran.result() if done and ran is not None else NOT_STARTED
    if batch.actors is not None and not interrupted:
        _say_loads(ray, batch, err)
    return results, interrupted


def _say_loads(ray: Any, batch: _Run, err: TextIO) -> None:
    """One line on stderr: how often each actor loaded the model (once, if all is well)."""
    try:
        seen = ray.get([a.where.remote() for a in batch.all_actors], timeout=30)
    except Exception:  # an actor that died is already reported by its task
        return
    loads = ", ".join(f"{s['host']}:{s['pid']} {s['loads']}" for s in seen)
    err.write(f"bosun: ray: {len(seen)} actor(s); model loads per actor: {loads}\n")
    err.flush()
