"""`--executor ray` against a real Ray cluster this module starts on 127.0.0.1 (`ray
start --head`, not local mode, not a cluster `ray.init()` would make): the same results
as the local executor, actors that load the in-process model once and keep its head
warm, and a task whose worker is killed mid-task run once more.

Starting the cluster takes seconds on a small machine, so the tests are few and share
it. Under CI (CI=true) they never skip: a missing Ray fails them.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.run.batch import run_tasks
from agent.run.batch.results import ResultsDir
from agent.run.settings import Settings
from tests.ray_cluster import local_cluster
from tests.run.batch_helpers import FIXTURES, SCRIPT, by_task

if os.environ.get("CI") != "true":
    pytest.importorskip("ray")

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A one-node cluster of 2 CPUs, shared by the module's tests."""
    with local_cluster(num_cpus=2) as address:
        yield address


def batch(settings: Settings, tasks: Path) -> tuple[int, list[dict[str, Any]], str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_tasks(settings, tasks, out=out, err=err, env={})
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def outcome(events: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    return {t: (evs[-1]["status"], evs[-1]["final_text"]) for t, evs in by_task(events).items()}


def test_scripted_tasks_end_as_they_do_locally(cluster: str) -> None:
    base = Settings(model=f"scripted:{SCRIPT}", workspace=FIXTURES / "ws", jobs=2)
    tasks = FIXTURES / "tasks.jsonl"
    local_code, local, _ = batch(base, tasks)
    code, remote, err = batch(base.but(executor="ray", ray_address=cluster), tasks)
    assert (code, outcome(remote)) == (local_code, outcome(local)), err
    assert outcome(remote)["default-ws"] == ("done", "The notes say hello.")
    # the same lines, tagged the same way, each task's in its own order
    for task, evs in by_task(remote).items():
        assert [e["type"] for e in evs] == [e["type"] for e in by_task(local)[task]]
    assert remote[-1] == {**remote[-1], "done": 2, "failed": 1, "tasks": 3}


def test_workers_that_cannot_sandbox_refuse_the_tasks(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head could sandbox (its policy says so); the workers (told of another bwrap,
    a missing one) cannot, and refuse rather than run bash unsandboxed. Nothing is
    recorded, so a rerun on able workers does the tasks."""
    from agent.tools.sandbox import SandboxPolicy

    monkeypatch.setenv("BOSUN_BWRAP", str(tmp_path / "no-bwrap"))
    policy = SandboxPolicy(bwrap="/usr/bin/bwrap", shell="/bin/bash")
    settings = Settings(
        model=f"scripted:{SCRIPT}", workspace=FIXTURES / "ws", jobs=2, sandbox=policy,
        executor="ray", ray_address=cluster, results=tmp_path / "out",
    )  # fmt: skip
    code, events, err = batch(settings, FIXTURES / "tasks.jsonl")
    results = [e for e in events if e["type"] == "result"]
    assert code == 1 and len(results) == 3, err
    assert all("cannot sandbox bash" in r["error"] for r in results)
    assert not [e for e in events if e["type"] == "tool_result"]  # nothing ran
    kept = ResultsDir.open(tmp_path / "out")
    assert all(kept.recorded(t) is None for t in ("default-ws", "other-ws", "too-short"))


@pytest.mark.model
def test_actors_load_the_model_once_and_keep_the_head_warm(cluster: str, tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    ws = tmp_path / "ws"
    ws.mkdir()
    tasks = tmp_path / "t.jsonl"
    prompts = ["Say hello.", "Name a fruit.", "Say goodbye.", "Name a colour."]
    tasks.write_text(
        "".join(json.dumps({"id": f"t{i}", "prompt": p}) + "\n" for i, p in enumerate(prompts))
    )
    settings = Settings(
        model="smollm2-135m", workspace=ws, max_turns=1, max_tokens=8, constrain="never",
        jobs=2, executor="ray", ray_address=cluster,
    )  # fmt: skip
    code, events, err = batch(settings, tasks)
    assert code in (0, 3), err
    line = next(x for x in err.splitlines() if "model loads per actor" in x)
    assert line.startswith("bosun: ray: 2 actor(s)") and line.count(" 1") >= 2, line
    assert [n.rsplit(" ", 1)[1] for n in line.split(": ", 2)[2].split(", ")] == ["1", "1"]
    first_turns = {e["task"]: e for e in reversed(events) if e["type"] == "turn"}
    warm = [t for t, e in first_turns.items() if e["cached_tokens"] > 500]
    # each actor's first task evaluates the head; every later one finds it cached
    assert len(first_turns) == 4 and len(warm) >= 2, first_turns


def _task_workers(home: str) -> list[int]:
    """Ray workers running a batch task now (Ray titles the process by its function)
    for this test's batch (its BOSUN_HOME reaches the worker's environment)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if title.startswith(b"ray::task_stream") and f"BOSUN_HOME={home}".encode() in environ:
            pids.append(int(entry.name))
    return pids


def test_a_task_whose_worker_dies_runs_once_more(
    cluster: str, tmp_path: Path, bosun_home: Path
) -> None:
    script = tmp_path / "slow.jsonl"
    chunks = [f"part {i} " for i in range(20)]
    script.write_text(json.dumps({"chunks": chunks, "delay_ms": 150}) + "\n")
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps({"id": "victim", "prompt": "Answer slowly."}) + "\n")
    out = tmp_path / "out.jsonl"
    with out.open("w") as stdout:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agent", "run", "--tasks", str(tasks), "--model",
             f"scripted:{script}", "--workspace", str(FIXTURES / "ws"), "--executor", "ray",
             "--ray-address", cluster, "--results", str(tmp_path / "results")],
            cwd=REPO, stdout=stdout, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        killed = False
        while time.monotonic() < deadline and proc.poll() is None and not killed:
            if '"type": "text"' in out.read_text():  # mid-answer
                for pid in _task_workers(str(bosun_home)):
                    os.kill(pid, signal.SIGKILL)
                    killed = True
            time.sleep(0.05)
        _, err = proc.communicate(timeout=180)
    assert killed, err
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in out.read_text().splitlines()]
    mine = by_task(events)["victim"]
    died = [e for e in mine if e["type"] == "diagnostic" and "worker died" in e["message"]]
    assert len(died) == 1
    assert [e["type"] for e in mine].count("session") == 2  # the second run from the start
    assert (
        mine[-1]["status"] == "done" and mine[-1]["final_text"].strip() == "".join(chunks).strip()
    )
    assert "task victim: the worker died (WorkerCrashedError); running it again" in err
    recorded = (tmp_path / "results").glob("victim-*.jsonl")
    lines = [json.loads(x) for x in next(recorded).read_text().splitlines()]
    assert [x["type"] for x in lines].count("session") == 1  # the file: the good run only


def test_ctrl_c_cancels_every_task_on_the_cluster(
    cluster: str, tmp_path: Path, bosun_home: Path
) -> None:
    script = tmp_path / "slow.jsonl"
    script.write_text(json.dumps({"chunks": ["word "] * 200, "delay_ms": 100}) + "\n")
    tasks = tmp_path / "t.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "prompt": "Go."}) + "\n" for i in range(4)))
    out = tmp_path / "out.jsonl"
    with out.open("w") as stdout:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agent", "run", "--tasks", str(tasks), "--model",
             f"scripted:{script}", "--workspace", str(FIXTURES / "ws"), "--executor", "ray",
             "--ray-address", cluster, "--jobs", "2"],
            cwd=REPO, stdout=stdout, stderr=subprocess.PIPE, text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if out.read_text().count('"type": "text"') >= 2:  # both running, mid-answer
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    events = [json.loads(line) for line in out.read_text().splitlines()]
    results = {t: evs[-1]["status"] for t, evs in by_task(events).items()}
    assert results == dict.fromkeys(("t0", "t1", "t2", "t3"), "interrupted"), results
    assert events[-1]["type"] == "summary" and "Traceback" not in err
    time.sleep(2)
    assert _task_workers(str(bosun_home)) == []  # nothing left running on the cluster
