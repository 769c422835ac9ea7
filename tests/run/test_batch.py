"""`bosun run --tasks`: many tasks, one driver, whole JSONL lines, honest exit codes."""

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

from agent.run.assemble import open_model
from agent.run.batch import DriverPool, load_tasks, run_tasks
from agent.run.settings import Settings
from drivers.base import Chunk, DriverError, DriverInfo, Request, Usage, UsageError
from drivers.scripted import ScriptedDriver

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "batch"
SCRIPT = FIXTURES / "read_notes.script.jsonl"


Options = tuple[Settings, Path]


def options(tasks: Path, **kw: Any) -> Options:
    """A batch's settings and its tasks file (the two things `run_tasks` takes)."""
    kw.setdefault("model", f"scripted:{SCRIPT}")
    kw.setdefault("workspace", FIXTURES / "ws")
    return Settings(**kw), tasks


def write_tasks(path: Path, *tasks: dict[str, Any] | str) -> Path:
    lines = [t if isinstance(t, str) else json.dumps(t) for t in tasks]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(opts: Options, **kw: Any) -> tuple[int, list[dict[str, Any]]]:
    out = io.StringIO()
    code = run_tasks(*opts, out=out, err=io.StringIO(), **kw)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def by_task(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    tasks: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        if e["type"] != "summary":
            tasks.setdefault(e["task"], []).append(e)
    return tasks


def piece_text(i: int) -> str:
    """A long chunk (so torn writes would show) that does not repeat itself, which the
    runtime's loop guard would cut short."""
    return "".join(f"word{i}.{j} " for j in range(40))


class FakeDriver:
    """A thread-safe stand-in for a server: streams `pieces` chunks per call, fails on
    prompts that ask it to, and records how many streams ran at once."""

    model = "fake"

    def __init__(self, pieces: int = 5, delay: float = 0.0, max_concurrency: int = 8) -> None:
        self.pieces = pieces
        self.delay = delay
        self.info = DriverInfo(max_concurrency=max_concurrency)
        self.active = 0
        self.peak = 0
        self.closed = False
        self._lock = threading.Lock()

    def stream(self, request: Request, **_ignored: Any) -> Iterator[Chunk]:
        # halt is ignored: this stand-in never stops early by itself
        prompt = request.prompt
        with self._lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            if "BOOM" in prompt:
                raise DriverError("http://gpu-box:8000/v1: the completions stream broke off")
            if "BUG" in prompt:
                raise RuntimeError("harness bug")
            for i in range(self.pieces):
                time.sleep(self.delay)
                yield Chunk(piece_text(i))
            yield Chunk("", usage=Usage(100, 60, self.pieces, 1.0), finish_reason="stop")
        finally:
            with self._lock:
                self.active -= 1

    def close(self) -> None:
        self.closed = True


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


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "no tasks in {path}"),
        (['{"id": "a", "prompt": "p"}', "{not json"], "{path}:2: not valid JSON"),
        (["[1, 2]"], "{path}:1: expected a JSON object"),
        (['{"prompt": "p"}'], '{path}:1: every task needs an "id"'),
        (['{"id": "", "prompt": "p"}'], '{path}:1: every task needs an "id"'),
        (['{"id": "a"}'], "{path}:1: task 'a' needs a \"prompt\""),
        (['{"id": "a", "prompt": "  "}'], "{path}:1: task 'a' needs a \"prompt\""),
        (
            ['{"id": "a", "prompt": "p"}', "", '{"id": "a", "prompt": "q"}'],
            "{path}:3: duplicate task id 'a' (first on line 1)",
        ),
        (
            ['{"id": "a", "prompt": "p", "workspace": "nowhere"}'],
            "{path}:1: task 'a': workspace does not exist: ",
        ),
        (['{"id": "a", "prompt": "p", "max_turn": 3}'], "{path}:1: unknown key(s) max_turn"),
        (
            ['{"id": "a", "prompt": "p", "max_turns": 0}'],
            "{path}:1: 'max_turns' must be a positive",
        ),
        (
            ['{"id": "a", "prompt": "p", "max_turns": true}'],
            "{path}:1: 'max_turns' must be a positive",
        ),
        (
            ['{"id": "a", "prompt": "p", "approve": "yolo"}'],
            '{path}:1: "approve" must be one of ask,',
        ),
    ],
)
def test_strict_bad_tasks_file_fails_before_anything_runs(
    tmp_path: Path, bosun_home: Path, lines: list[str], message: str
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    # The model does not exist either: the tasks file must be what is reported.
    opts = options(path, model="scripted:/nonexistent/script.jsonl", strict=True)
    out = io.StringIO()
    with pytest.raises(UsageError) as info:
        run_tasks(*opts, out=out, err=io.StringIO())
    assert str(info.value).startswith(message.format(path=path))
    assert "\n" not in str(info.value)
    assert out.getvalue() == "" and not (bosun_home / "sessions").exists()


def test_bad_lines_fail_alone_and_the_good_ones_run(tmp_path: Path, bosun_home: Path) -> None:
    path = write_tasks(
        tmp_path / "t.jsonl",
        {"id": "a", "prompt": "p"},
        "{oops",
        {"id": "b", "prompt": "q", "max_turn": 3},
        "",
        {"id": "a", "prompt": "again"},
        {"id": "c", "prompt": "r"},
    )
    code, events = run(options(path, jobs=2), driver=FakeDriver(pieces=1))
    assert code == 1
    tasks = by_task(events)
    assert set(tasks) == {"a", "c", "line 2", "line 3", "line 5"}
    assert tasks["a"][-1]["status"] == tasks["c"][-1]["status"] == "done"
    expected = {
        "line 2": f"{path}:2: not valid JSON (Expecting property name enclosed in double quotes)",
        "line 3": f"{path}:3: unknown key(s) max_turn (known: ",
        "line 5": f"{path}:5: duplicate task id 'a' (first on line 1)",
    }
    for label, message in expected.items():
        diagnostic, result = tasks[label]
        assert diagnostic["type"] == "diagnostic" and diagnostic["message"].startswith(message)
        assert result["type"] == "result" and result["status"] == "error"
        assert result["error"] == diagnostic["message"] and "\n" not in result["error"]
    summary = events[-1]
    assert (summary["tasks"], summary["done"], summary["failed"]) == (5, 2, 3)


def test_all_lines_bad_reports_them_without_loading_the_model(
    tmp_path: Path, bosun_home: Path
) -> None:
    path = write_tasks(tmp_path / "t.jsonl", "[1]", '{"id": "x"}')
    code, events = run(options(path, model="scripted:/nonexistent/script.jsonl"))
    assert code == 1
    assert [(e["type"], e.get("task")) for e in events] == [
        ("diagnostic", "line 1"),
        ("result", "line 1"),
        ("diagnostic", "line 2"),
        ("result", "line 2"),
        ("summary", None),
    ]
    assert events[-1]["failed"] == 2 and not (bosun_home / "sessions").exists()


def test_an_empty_tasks_file_is_still_a_usage_error(tmp_path: Path) -> None:
    path = write_tasks(tmp_path / "t.jsonl", "", "  ")
    with pytest.raises(UsageError, match="no tasks in"):
        run_tasks(*options(path), out=io.StringIO(), driver=FakeDriver())


def test_missing_tasks_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"tasks file not found: .*nope\.jsonl"):
        load_tasks(*options(tmp_path / "nope.jsonl"))


def test_bad_model_is_reported_after_the_tasks_check(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", {"id": "a", "prompt": "p"})
    with pytest.raises(UsageError, match="scripted model file not found"):
        run_tasks(*options(tasks, model="scripted:/nonexistent.jsonl"), out=io.StringIO())


def test_constrain_always_without_grammar_support_is_a_usage_error(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", {"id": "a", "prompt": "p"})
    driver = FakeDriver()
    with pytest.raises(UsageError, match="--constrain always: the fake backend takes no grammar"):
        run_tasks(*options(tasks, constrain="always"), out=io.StringIO(), driver=driver)
    assert driver.closed


def test_wire_is_only_for_servers() -> None:
    with pytest.raises(UsageError, match="--api is for openai: models"):
        open_model(f"scripted:{SCRIPT}", api="completions")
