"""`bosun run --tasks` from the command line, and against real and failing servers."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.run.test_batch import FIXTURES, SCRIPT, by_task, options, run, write_tasks

# --- the command line ---------------------------------------------------------------


@pytest.fixture(scope="module")
def cli_has_tasks() -> None:
    from tests.openai_servers import bosun

    if "--tasks" not in bosun("run", "--help").stdout:
        pytest.skip("agent/cli/main.py has no --tasks option yet")


def test_cli_runs_tasks_and_exits_1_when_one_fails(cli_has_tasks: None) -> None:
    from tests.openai_servers import bosun

    proc = bosun(
        "run",
        "--tasks",
        str(FIXTURES / "tasks.jsonl"),
        "--jobs",
        "3",
        "--model",
        f"scripted:{SCRIPT}",
        "--workspace",
        str(FIXTURES / "ws"),
    )
    assert proc.returncode == 1, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {e["task"] for e in events[:-1]} == {"default-ws", "other-ws", "too-short"}
    assert events[-1]["type"] == "summary" and events[-1]["failed"] == 1


def test_cli_bad_line_fails_alone(cli_has_tasks: None, tmp_path: Path) -> None:
    from tests.openai_servers import bosun

    path = write_tasks(tmp_path / "t.jsonl", {"id": "a", "prompt": "p"}, "{oops")
    proc = bosun(
        "run",
        "--tasks",
        str(path),
        "--model",
        f"scripted:{SCRIPT}",
        "--workspace",
        str(FIXTURES / "ws"),
    )
    assert proc.returncode == 1 and proc.stderr == ""
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    tasks = by_task(events)
    assert tasks["a"][-1]["status"] == "done"
    assert [e["type"] for e in tasks["line 2"]] == ["diagnostic", "result"]
    assert tasks["line 2"][-1]["error"].startswith(f"{path}:2: not valid JSON")
    assert events[-1]["type"] == "summary" and events[-1]["failed"] == 1


def test_cli_missing_tasks_file_is_exit_2(cli_has_tasks: None, tmp_path: Path) -> None:
    from tests.openai_servers import bosun

    proc = bosun("run", "--tasks", str(tmp_path / "nope.jsonl"), "--model", f"scripted:{SCRIPT}")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"bosun: error: tasks file not found: {tmp_path / 'nope.jsonl'}\n"


def test_cli_strict_bad_tasks_file_is_exit_2(cli_has_tasks: None, tmp_path: Path) -> None:
    from tests.openai_servers import bosun

    path = write_tasks(tmp_path / "t.jsonl", {"id": "a", "prompt": "p"}, "{oops")
    proc = bosun("run", "--strict", "--tasks", str(path), "--model", f"scripted:{SCRIPT}")
    assert proc.returncode == 2 and proc.stdout == ""
    assert (
        proc.stderr == f"bosun: error: {path}:2: not valid JSON (Expecting property name"
        " enclosed in double quotes)\n"
    )


# --- the real server ----------------------------------------------------------------


@pytest.mark.model
def test_jobs_against_a_real_llama_cpp_server(tmp_path: Path) -> None:
    from tests.openai_servers import MODEL_ALIAS, llama_server

    tasks = write_tasks(
        tmp_path / "t.jsonl",
        {"id": "hello", "prompt": "Say hello.", "max_turns": 2, "max_tokens": 8},
        {"id": "sum", "prompt": "What is 2+2?", "max_turns": 1, "max_tokens": 8},
        {"id": "notes", "prompt": "Read notes.txt.", "max_turns": 2, "max_tokens": 8},
    )
    with llama_server(tmp_path / "server.log") as url:
        opts = options(
            tasks,
            model=f"openai:{url}#{MODEL_ALIAS}",
            api="completions",
            jobs=4,
            max_tokens=8,
        )
        started = time.monotonic()
        code, events = run(opts)
    assert time.monotonic() - started < 60
    results = {task: evs[-1] for task, evs in by_task(events).items()}
    assert set(results) == {"hello", "sum", "notes"}
    assert all(r["type"] == "result" for r in results.values())
    # The model decides whether a task is done or runs out of turns; nothing may break.
    assert all(r["status"] in ("done", "max_turns") for r in results.values()), results
    assert code == (0 if all(r["status"] == "done" for r in results.values()) else 1)
    summary = events[-1]
    assert summary["tasks"] == 3 and summary["done"] + summary["failed"] == 3
    assert summary["completion_tokens"] > 0
    sessions = {evs[0]["model"] for evs in by_task(events).values()}
    assert sessions == {f"openai:{url}#{MODEL_ALIAS}"}


# --- a server that fails ------------------------------------------------------------


@pytest.fixture
def cutting_stub() -> Iterator[Any]:
    """A stub OpenAI server: prompts with "CUT" get half a stream and a dropped
    connection, as from a server killed mid-answer; the others a whole answer."""

    from tests.openai_servers import Reply, Stub, completion_event, models_body, serve_stub

    def pick(route: str, body: Any) -> Reply | None:
        if route != "POST /v1/completions":
            return None
        usage = {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
        if "CUT" in json.dumps(body):
            return Reply(events=[completion_event("Half an ")], cut=True, delay=0.05)
        return Reply(
            events=[completion_event("All done."), completion_event("", "stop", usage=usage)],
            delay=0.05,
        )

    state = Stub(pick=pick)
    state.on("GET /v1/models", Reply(body=models_body("stub-model")))
    with serve_stub(state):
        yield state


def test_server_dropping_one_stream_fails_only_that_task(
    cutting_stub: Any, tmp_path: Path, bosun_home: Path
) -> None:
    tasks = write_tasks(
        tmp_path / "t.jsonl",
        *({"id": f"t{i}", "prompt": f"Task {i}.", "max_turns": 1} for i in range(4)),
        {"id": "cut", "prompt": "CUT this one short.", "max_turns": 1},
    )
    opts = options(tasks, model=f"openai:{cutting_stub.url}#stub-model", api="completions", jobs=3)
    started = time.monotonic()
    code, events = run(opts)
    assert time.monotonic() - started < 30
    assert code == 1
    results = {task: evs[-1] for task, evs in by_task(events).items()}
    assert {t: r["status"] for t, r in results.items()} == {
        "t0": "done",
        "t1": "done",
        "t2": "done",
        "t3": "done",
        "cut": "error",
    }
    error = results["cut"]["error"]
    assert error.startswith(f"{cutting_stub.url}: the completions stream broke off: "), error
    assert "\n" not in error
    assert events[-1]["type"] == "summary" and events[-1]["failed"] == 1


def test_cli_tasks_against_a_server_that_is_not_there(cli_has_tasks: None, tmp_path: Path) -> None:
    from tests.openai_servers import bosun, free_port

    path = write_tasks(tmp_path / "t.jsonl", {"id": "a", "prompt": "p"}, {"id": "b", "prompt": "q"})
    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = bosun(
        "run", "--tasks", str(path), "--jobs", "2", "--model", f"openai:{url}#m",
        "--workspace", str(FIXTURES / "ws"),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == f"bosun: error: cannot reach {url}: connection refused (after 4 tries)\n"
    assert proc.stdout == ""


@pytest.mark.model
def test_six_tasks_three_jobs_against_a_real_llama_cpp_server(tmp_path: Path) -> None:
    from tests.openai_servers import MODEL_ALIAS, llama_server

    prompts = ["Say hi.", "What is 2+2?", "Name a color.", "Say yes.", "Count to 3.", "Say no."]
    tasks = write_tasks(
        tmp_path / "t.jsonl",
        *(
            {"id": f"t{i}", "prompt": p, "max_turns": 1, "max_tokens": 8}
            for i, p in enumerate(prompts)
        ),
    )
    with llama_server(tmp_path / "server.log") as url:
        opts = options(
            tasks, model=f"openai:{url}#{MODEL_ALIAS}", api="completions", jobs=3, max_tokens=8
        )
        started = time.monotonic()
        code, events = run(opts)
        elapsed = time.monotonic() - started
    assert elapsed < 60
    results = {task: evs[-1] for task, evs in by_task(events).items()}
    assert set(results) == {f"t{i}" for i in range(6)}
    assert all(r["type"] == "result" for r in results.values())
    # One turn: the model answers (done) or calls a tool and runs out of turns.
    assert all(r["status"] in ("done", "max_turns") for r in results.values()), results
    assert code == (0 if all(r["status"] == "done" for r in results.values()) else 1)
    summary = events[-1]
    assert summary["type"] == "summary" and summary["tasks"] == 6
    assert summary["done"] + summary["failed"] == 6 and summary["completion_tokens"] > 0
