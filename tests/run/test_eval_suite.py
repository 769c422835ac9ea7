"""The eval suite's checks are honest: each fails on its untouched fixture and passes
once the reference solution is copied over it. A check that passes on the fixture would
count a do-nothing agent as a success; one the solution cannot pass measures nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EVAL = Path(__file__).resolve().parents[2] / "bench" / "eval"
TASKS = sorted(p for p in (EVAL / "tasks").iterdir() if (p / "task.json").is_file())
DIFFICULTIES = {"easy", "medium", "hard"}
META_KEYS = {"id", "prompt", "difficulty", "min_tool_calls", "max_turns", "check"}


def run_check(task: Path, workspace: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(task / "check.py"), str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(EVAL)},
    )


def test_suite_has_at_least_20_tasks_of_every_difficulty() -> None:
    assert len(TASKS) >= 20
    seen = {json.loads((t / "task.json").read_text())["difficulty"] for t in TASKS}
    assert seen == DIFFICULTIES
    calls = [json.loads((t / "task.json").read_text())["min_tool_calls"] for t in TASKS]
    assert min(calls) == 1 and max(calls) >= 5


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_metadata_is_valid(task: Path) -> None:
    meta = json.loads((task / "task.json").read_text(encoding="utf-8"))
    assert set(meta) == META_KEYS
    assert meta["id"] == task.name
    assert isinstance(meta["prompt"], str) and meta["prompt"].strip()
    assert meta["difficulty"] in DIFFICULTIES
    for key in ("min_tool_calls", "max_turns"):
        assert isinstance(meta[key], int) and meta[key] >= 1
    assert meta["max_turns"] > meta["min_tool_calls"]  # room for the calls and an answer
    assert (task / "check.py").is_file()
    assert any((task / "workspace").rglob("*")), "a fixture needs at least one file"
    assert any(p.is_file() for p in (task / "solution").rglob("*"))


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_check_fails_on_fixture_and_passes_on_solution(task: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(task / "workspace", ws)
    before = run_check(task, ws)
    assert before.returncode == 1, f"check passed on the untouched fixture: {before.stdout}"
    assert before.stdout.startswith("FAIL: ")
    shutil.copytree(task / "solution", ws, dirs_exist_ok=True)
    after = run_check(task, ws)
    assert after.returncode == 0, f"check failed on the reference solution: {after.stdout}"


def test_runner_grades_a_scripted_run_by_the_check(tmp_path: Path) -> None:
    """run.py end to end without a model: a replayed agent that writes status.txt is a
    success with one tool call; one that writes the wrong word is a failure, whatever
    bosun's own status says; a malformed call is counted."""
    script = tmp_path / "script.jsonl"
    write = {"name": "write_file", "arguments": {"path": "status.txt", "content": "done\n"}}
    wrong = {"name": "write_file", "arguments": {"path": "status.txt", "content": "nope\n"}}
    lines = [
        {"completion": "<tool_call>\n" + json.dumps(write) + "\n</tool_call>"},
        {"completion": "Written."},
    ]
    script.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "results.json"
    cmd = [sys.executable, str(EVAL / "run.py"), "--model", f"scripted:{script}"]
    cmd += ["--configs", "bosun", "--constrain", "never", "--tasks", "write-status"]
    proc = subprocess.run(
        [*cmd, "--out", str(out)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    attempt = json.loads(out.read_text())["configs"][0]["attempts"][0]
    assert (attempt["success"], attempt["tool_calls"], attempt["turns"]) == (True, 1, 2)
    assert "| bosun " in proc.stdout and "1/1" in proc.stdout

    lines = [
        {"completion": '<tool_call>\n{"name": "write_file", "arguments": \n</tool_call>'},
        {"completion": "<tool_call>\n" + json.dumps(wrong) + "\n</tool_call>"},
        {"completion": "Written."},
    ]
    script.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    proc = subprocess.run(
        [*cmd, "--out", str(out)], capture_output=True, text=True, timeout=120, check=False
    )
    attempt = json.loads(out.read_text())["configs"][0]["attempts"][0]
    assert attempt["status"] == "done" and not attempt["success"]
    assert attempt["malformed"] >= 1 and attempt["verdict"].startswith("FAIL")


def test_a_loop_cut_short_is_not_counted_as_a_malformed_call() -> None:
    sys.path.insert(0, str(EVAL))
    try:
        from run import tally
        from suite import Attempt
    finally:
        sys.path.remove(str(EVAL))
    attempt = Attempt("t", "easy")
    tally(
        [
            {"type": "diagnostic", "message": "your tool call was not valid JSON: …"},
            {"type": "diagnostic", "message": "stopped the reply early: it kept repeating itself"},
            {"type": "result", "status": "done", "turns": 2, "tool_calls": 0},
        ],
        attempt,
    )
    assert (attempt.malformed, attempt.extra) == (
        1,
        {"loops_stopped": 1, "diagnostics": ["your tool call was not valid JSON: …"]},
    )
