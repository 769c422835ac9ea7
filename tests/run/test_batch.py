"""`bosun run --tasks`: many tasks, one driver, whole JSONL lines, honest exit codes.
(The tasks file's bad lines: test_batch_lines.py; shards, results, merge and workspaces
that travel: test_batch_scale.py; Ray: test_batch_ray.py.)"""

from __future__ import annotations

import io
import json
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.run.batch import DriverPool, run_tasks
from drivers.base import Chunk, DriverInfo, Request
from drivers.scripted import ScriptedDriver
from tests.run.batch_helpers import (
    FIXTURES,
    SCRIPT,
    FakeDriver,
    by_task,
    options,
    piece_text,
    run,
    write_tasks,
)

# --- the scripted model -------------------------------------------------------------


def test_tasks_are_tagged_summarised_and_a_failure_sets_the_exit_code(
    bosun_home: Path,
) -> None:
    code, events = run(options(FIXTURES / "tasks.jsonl", jobs=3))
    assert code == 1
    summary = events[-1]
    assert summary["type"] == "summary"
    assert {k: summary[k] for k in ("done", "failed", "tasks")} == {
        "done": 2,
        "failed": 1,
        "tasks": 3,
    }
    assert summary["wall_ms"] >= 0
    assert all("task" in e for e in events[:-1]) and "task" not in summary
    tasks = by_task(events)
    assert set(tasks) == {"default-ws", "other-ws", "too-short"}
    for task_events in tasks.values():
        assert task_events[0]["type"] == "session" and task_events[-1]["type"] == "result"
    results = {task: evs[-1] for task, evs in tasks.items()}
    assert results["default-ws"]["status"] == "done"
    assert results["other-ws"]["status"] == "done"
    assert results["too-short"]["status"] == "max_turns"
    assert summary["prompt_tokens"] == sum(r["prompt_tokens"] for r in results.values()) > 0
    assert summary["completion_tokens"] == sum(r["completion_tokens"] for r in results.values())
    # Each task ran in its own workspace (a relative one is relative to the tasks file).
    contents = {
        task: next(e["content"] for e in evs if e["type"] == "tool_result")
        for task, evs in tasks.items()
    }
    assert contents["default-ws"].endswith("hello from the batch fixture")
    assert contents["other-ws"].endswith("the other workspace")
    # One session file per task, each saying which task's workspace it ran in.
    files = sorted((bosun_home / "sessions").glob("*.jsonl"))
    assert len(files) == 3
    spaces = sorted(json.loads(f.read_text().splitlines()[0])["workspace"] for f in files)
    ws, other = str((FIXTURES / "ws").resolve()), str((FIXTURES / "other").resolve())
    assert spaces == sorted([ws, ws, other])
    session_ids = {evs[0]["id"] for evs in tasks.values()}
    assert {f.stem for f in files} == session_ids


def test_every_scripted_task_replays_its_own_copy(tmp_path: Path) -> None:
    """ScriptedDriver is strict and sequential; concurrent tasks sharing one would take
    each other's steps."""
    tasks = write_tasks(
        tmp_path / "t.jsonl",
        *({"id": f"t{i}", "prompt": "What do the notes say?"} for i in range(5)),
    )
    code, events = run(options(tasks, jobs=4))
    assert code == 0
    assert events[-1] == {**events[-1], "done": 5, "failed": 0, "tasks": 5}


def test_tasks_from_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES)  # relative workspaces are relative to the cwd then
    stdin = io.StringIO(json.dumps({"id": "a", "prompt": "p", "workspace": "other"}) + "\n")
    code, events = run(options(Path("-")), stdin=stdin)
    assert code == 0 and events[0]["workspace"] == str((FIXTURES / "other").resolve())


# --- concurrency --------------------------------------------------------------------


class TornWriter(io.StringIO):
    """Writes each line in small pieces and yields the GIL between them, so two
    unsynchronised writers would interleave mid-line."""

    def write(self, s: str) -> int:
        for i in range(0, len(s), 16):
            super().write(s[i : i + 16])
            time.sleep(0)
        return len(s)


def test_concurrent_tasks_never_interleave_mid_line(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", *({"id": f"t{i}", "prompt": "go"} for i in range(8)))
    driver = FakeDriver(pieces=30, delay=0.001, max_concurrency=8)
    out = TornWriter()
    code = run_tasks(*options(tasks, jobs=4), out=out, err=io.StringIO(), driver=driver)
    assert code == 0
    lines = out.getvalue().splitlines()
    events = [json.loads(line) for line in lines]  # every line whole
    assert driver.peak > 1  # the tasks really did overlap
    assert len(by_task(events)) == 8
    expected = "".join(piece_text(i) for i in range(30))
    for task_events in by_task(events).values():
        text = "".join(e["text"] for e in task_events if e["type"] == "text")
        assert text.strip() == expected.strip()
    assert driver.closed


def test_a_failing_task_does_not_stop_the_others(tmp_path: Path) -> None:
    tasks = write_tasks(
        tmp_path / "t.jsonl",
        {"id": "ok-1", "prompt": "fine"},
        {"id": "down", "prompt": "BOOM"},
        {"id": "bug", "prompt": "BUG"},
        {"id": "ok-2", "prompt": "fine"},
    )
    code, events = run(options(tasks, jobs=2), driver=FakeDriver())
    assert code == 1
    results = {task: evs[-1] for task, evs in by_task(events).items()}
    assert results["ok-1"]["status"] == results["ok-2"]["status"] == "done"
    assert results["down"]["status"] == "error"
    assert results["down"]["error"] == "http://gpu-box:8000/v1: the completions stream broke off"
    assert results["bug"]["status"] == "error"
    assert results["bug"]["error"] == "internal error: RuntimeError: harness bug"
    assert events[-1]["done"] == 2 and events[-1]["failed"] == 2


def test_jobs_are_capped_by_what_the_driver_can_serve() -> None:
    class OneAtATime:  # like the in-process llama driver: one KV cache
        model = "llama"
        info = DriverInfo()

        def close(self) -> None:
            return None

    assert DriverPool(OneAtATime(), 4).jobs == 1  # type: ignore[arg-type]
    assert DriverPool(FakeDriver(max_concurrency=2), 4).jobs == 2
    assert DriverPool(FakeDriver(max_concurrency=32), 4).jobs == 4
    scripted = ScriptedDriver(SCRIPT)
    pool = DriverPool(scripted, 4)
    assert pool.jobs == 4 and pool.acquire() is not scripted
    # a capability, not a type: any driver that asks for copies gets them
    copies: list[FakeDriver] = []
    unshared = FakeDriver(max_concurrency=1)
    unshared.info = DriverInfo(fresh=lambda: copies.append(FakeDriver()) or copies[-1])
    pool = DriverPool(unshared, 3)
    assert pool.jobs == 3 and pool.acquire() is copies[0] and pool.acquire() is copies[1]


@pytest.fixture
def foreground_sigint() -> Iterator[None]:
    """Python's own ^C handler, as in a process started from a terminal. A process
    started in the background by a non-interactive shell (`cmd &`) inherits SIGINT as
    ignored, and Python then leaves it ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("foreground_sigint")
def test_interrupt_stops_running_tasks_and_skips_the_rest(tmp_path: Path) -> None:
    """^C reaches only the main thread; running tasks end as "interrupted" at their next
    event, queued ones never start, and the summary is still written."""
    ident = threading.main_thread().ident
    assert ident is not None and threading.current_thread().ident == ident
    main: int = ident

    class InterruptingDriver(FakeDriver):
        streams = 0

        def stream(self, request: Request, **kw: Any) -> Iterator[Chunk]:
            self.streams += 1
            signal.pthread_kill(main, signal.SIGINT)  # as ^C does: to the main thread
            return super().stream(request, **kw)

    tasks = write_tasks(tmp_path / "t.jsonl", *({"id": f"t{i}", "prompt": "go"} for i in range(3)))
    driver = InterruptingDriver(pieces=200, delay=0.01)
    code, events = run(options(tasks, jobs=1), driver=driver)
    assert code == 130
    results = {task: evs[-1] for task, evs in by_task(events).items()}
    assert [results[t]["status"] for t in ("t0", "t1", "t2")] == ["interrupted"] * 3
    assert sum(1 for e in events if e["type"] == "text") < 200
    assert driver.streams == 1  # the queued tasks never started
    assert events[-1]["type"] == "summary" and events[-1]["failed"] == 3


def test_trace_lines_stay_whole_and_name_their_task(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", *({"id": f"t{i}", "prompt": "go"} for i in range(4)))
    trace = tmp_path / "trace.jsonl"
    code, _ = run(options(tasks, jobs=4, trace=trace), driver=FakeDriver(pieces=50))
    assert code == 0
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert sorted(r["task"] for r in records) == ["t0", "t1", "t2", "t3"]


def test_progress_bar_only_when_stderr_is_a_terminal_and_stdout_is_not(tmp_path: Path) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    tasks = write_tasks(tmp_path / "t.jsonl", *({"id": f"t{i}", "prompt": "go"} for i in range(3)))
    err = Terminal()
    assert run_tasks(*options(tasks), out=io.StringIO(), err=err, driver=FakeDriver()) == 0
    assert "3/3" in err.getvalue()
    err, out = Terminal(), Terminal()
    assert run_tasks(*options(tasks), out=out, err=err, driver=FakeDriver()) == 0
    assert err.getvalue() == "" and '"summary"' in out.getvalue()


# --- a bad tasks file ---------------------------------------------------------------
