"""Batches past one machine, without Ray: `--shard K/N` (and the schedulers' variables),
`--results DIR` (resume after a kill, torn files redone, `--redo`), `bosun tasks merge`,
and workspaces built where the task runs (a copy, or a git checkout)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.errors import UsageError
from agent.run.batch import run_tasks
from agent.run.batch.merge import merge
from agent.run.batch.results import ResultsDir, file_name, read_result
from agent.run.batch.shard import Shard, parse_shard, shard_from_env, shard_of
from agent.run.settings import Settings
from tests.run.batch_helpers import FIXTURES, by_task, write_tasks

REPO = Path(__file__).resolve().parents[2]


def answer_script(path: Path, delay_ms: int = 0, text: str = "The answer.") -> Path:
    """One plain answer per task: every task is exactly one model call."""
    path.write_text(json.dumps({"completion": text, "delay_ms": delay_ms}) + "\n")
    return path


def many_tasks(path: Path, n: int, **extra: Any) -> Path:
    return write_tasks(path, *({"id": f"task-{i}", "prompt": "Answer.", **extra} for i in range(n)))


def batch(
    tasks: Path, script: Path, env: dict[str, str] | None = None, **kw: Any
) -> tuple[int, list[dict[str, Any]]]:
    kw.setdefault("workspace", FIXTURES / "ws")
    out = io.StringIO()
    code = run_tasks(
        Settings(model=f"scripted:{script}", **kw), tasks, out=out, err=io.StringIO(), env=env or {}
    )
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def trace_tasks(trace: Path) -> list[str]:
    """The task of every model call, from --trace (one line per call)."""
    if not trace.exists():
        return []
    return [json.loads(line)["task"] for line in trace.read_text().splitlines()]


# --- shards ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(st.text(min_size=1, max_size=12), max_size=40, unique=True),
    count=st.integers(1, 9),
)
def test_the_shards_of_a_file_are_disjoint_and_cover_it(ids: list[str], count: int) -> None:
    shares = [[i for i in ids if Shard(k, count).holds(i)] for k in range(1, count + 1)]
    assert sorted(i for share in shares for i in share) == sorted(ids)


def test_shard_of_is_a_stable_hash_not_pythons() -> None:
    """The same answer in another interpreter (hash() is salted per process)."""
    code = "from agent.run.batch.shard import shard_of; print([shard_of(f'id{i}', 7) for i in range(20)])"  # noqa: E501
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert other.stdout.strip() == str([shard_of(f"id{i}", 7) for i in range(20)])
    assert len({shard_of(f"id{i}", 7) for i in range(20)}) > 1


def test_shards_1_2_3_of_3_run_exactly_the_tasks_file(tmp_path: Path) -> None:
    tasks = many_tasks(tmp_path / "t.jsonl", 12)
    with tasks.open("a") as fh:
        fh.write("{broken\n")  # a bad line belongs to exactly one shard too
    script = answer_script(tmp_path / "s.jsonl")
    seen: list[str] = []
    for k in (1, 2, 3):
        _code, events = batch(tasks, script, shard=f"{k}/3")
        assert events[-1]["shard"] == f"{k}/3"
        seen += [e["task"] for e in events if e["type"] == "result"]
    assert sorted(seen) == sorted([f"task-{i}" for i in range(12)] + ["line 13"])
    assert all(0 < seen.count(t) < 2 for t in seen)


@pytest.mark.parametrize(
    ("env", "shard"),
    [
        ({}, "1/1"),
        ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"}, "4/4"),
        (
            {
                "SLURM_ARRAY_TASK_ID": "7",
                "SLURM_ARRAY_TASK_MIN": "5",
                "SLURM_ARRAY_TASK_COUNT": "4",
            },
            "3/4",
        ),
        ({"JOB_COMPLETION_INDEX": "0", "BOSUN_SHARD_COUNT": "8"}, "1/8"),
    ],
)
def test_schedulers_say_the_shard(env: dict[str, str], shard: str) -> None:
    assert str(shard_from_env(env)) == shard


@pytest.mark.parametrize(
    ("text", "env", "says"),
    [
        ("0/3", {}, "between 1 and N"),
        ("4/3", {}, "between 1 and N"),
        ("two/3", {}, "must be K/N"),
        (None, {"JOB_COMPLETION_INDEX": "1"}, "BOSUN_SHARD_COUNT is not"),
        (None, {"SLURM_ARRAY_TASK_ID": "9", "SLURM_ARRAY_TASK_COUNT": "4"}, "index 9 of 4"),
    ],
)
def test_a_bad_shard_is_a_usage_error(text: str | None, env: dict[str, str], says: str) -> None:
    with pytest.raises(UsageError, match=says):
        parse_shard(text) if text is not None else shard_from_env(env)


def test_the_slurm_variables_shard_a_batch(tmp_path: Path) -> None:
    tasks = many_tasks(tmp_path / "t.jsonl", 6)
    script = answer_script(tmp_path / "s.jsonl")
    env = {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2"}
    _code, events = batch(tasks, script, env=env)
    ran = {e["task"] for e in events if e["type"] == "result"}
    assert ran == {f"task-{i}" for i in range(6) if shard_of(f"task-{i}", 2) == 2}
    _code, events = batch(tasks, script, env=env, shard="1/1")  # the flag wins
    assert len([e for e in events if e["type"] == "result"]) == 6


# --- results and resume -----------------------------------------------------------------


def test_a_rerun_skips_what_results_recorded_and_redoes_torn_files(tmp_path: Path) -> None:
    tasks = many_tasks(tmp_path / "t.jsonl", 4)
    script = answer_script(tmp_path / "s.jsonl")
    out = tmp_path / "out"
    code, _ = batch(tasks, script, results=out, trace=tmp_path / "1.jsonl")
    assert code == 0 and sorted(trace_tasks(tmp_path / "1.jsonl")) == [
        f"task-{i}" for i in range(4)
    ]
    for i in range(4):
        assert read_result(out / file_name(f"task-{i}"))["status"] == "done"
    # task-1 torn mid-line, task-2 with no result line: both are done again, alone
    torn = out / file_name("task-1")
    torn.write_bytes(torn.read_bytes()[:-20])
    headless = out / file_name("task-2")
    headless.write_text(headless.read_text().splitlines()[0] + "\n")
    code, events = batch(tasks, script, results=out, trace=tmp_path / "2.jsonl")
    assert code == 0 and sorted(trace_tasks(tmp_path / "2.jsonl")) == ["task-1", "task-2"]
    assert events[-1] == {**events[-1], "tasks": 4, "done": 4, "skipped": 2}
    code, events = batch(tasks, script, results=out, redo=True, trace=tmp_path / "3.jsonl")
    assert len(trace_tasks(tmp_path / "3.jsonl")) == 4 and "skipped" not in events[-1]


def test_a_failed_result_counts_as_recorded_an_interrupted_one_does_not(tmp_path: Path) -> None:
    out = ResultsDir.open(tmp_path / "out")
    for task_id, status in (("a", "max_turns"), ("b", "interrupted")):
        path = out.path(task_id)
        path.write_text(json.dumps({"type": "result", "status": status, "task": task_id}) + "\n")
    assert out.recorded("a") is not None
    assert out.recorded("b") is None
    assert out.recorded("c") is None
    # a file under another id's name is not that id's result
    out.path("c").write_text(json.dumps({"type": "result", "status": "done", "task": "a"}) + "\n")
    assert out.recorded("c") is None


def test_result_file_names_are_safe_and_distinct() -> None:
    names = {file_name(i) for i in ("../../etc/passwd", "a/b", "a_b", "a b", "", "\x00")}
    assert len(names) == 6
    assert all("/" not in n and not n.startswith(".") and n.endswith(".jsonl") for n in names)


def test_a_batch_killed_halfway_completes_only_the_rest_when_run_again(tmp_path: Path) -> None:
    """SIGKILL (no cleanup at all) after 3 of 8 tasks; the rerun's model calls, counted
    in its trace, are exactly the 5 tasks with no complete result."""
    tasks = many_tasks(tmp_path / "t.jsonl", 8)
    script = answer_script(tmp_path / "s.jsonl", delay_ms=400)
    out = tmp_path / "out"

    def bosun(trace: Path) -> list[str]:
        return [sys.executable, "-m", "agent", "run", "--tasks", str(tasks), "--model",
                f"scripted:{script}", "--workspace", str(FIXTURES / "ws"), "--results",
                str(out), "--trace", str(trace)]  # fmt: skip

    first = subprocess.Popen(
        bosun(tmp_path / "1.jsonl"), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    done: list[str] = []
    while len(done) < 3 and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.05)
        done = [f"task-{i}" for i in range(8) if read_result(out / file_name(f"task-{i}"))]
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    assert first.returncode == -signal.SIGKILL, first.stderr.read() if first.stderr else ""
    done = [f"task-{i}" for i in range(8) if read_result(out / file_name(f"task-{i}"))]
    assert 3 <= len(done) < 8
    second = subprocess.run(bosun(tmp_path / "2.jsonl"), cwd=REPO, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    rerun = trace_tasks(tmp_path / "2.jsonl")
    assert sorted(rerun) == sorted(f"task-{i}" for i in range(8) if f"task-{i}" not in done)
    summary = json.loads(second.stdout.splitlines()[-1])
    assert summary == {**summary, "tasks": 8, "done": 8, "skipped": len(done)}


# --- merge -------------------------------------------------------------------------------


def test_merge_names_a_missing_shard_and_its_ids(tmp_path: Path) -> None:
    tasks = many_tasks(tmp_path / "t.jsonl", 9)
    script = answer_script(tmp_path / "s.jsonl")
    out = tmp_path / "out"
    for k in (1, 3):
        assert batch(tasks, script, shard=f"{k}/3", results=out)[0] == 0
    merged = merge([out])
    second = sorted(f"task-{i}" for i in range(9) if shard_of(f"task-{i}", 3) == 2)
    assert second and merged.missing_shards() == ["2/3"] and sorted(merged.missing) == second
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "tasks", "merge", str(out)],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 1
    record = json.loads(proc.stdout)
    assert record["missing_shards"] == ["2/3"] and record["missing"] == len(second)
    assert f"(no summary from shard 2/3): {second[0]}" in proc.stderr
    # the missing shard, run into its own folder: merged across both, nothing is missing
    assert batch(tasks, script, shard="2/3", results=tmp_path / "other")[0] == 0
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "tasks", "merge", str(out), str(tmp_path / "other")],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record == {**record, "tasks": 9, "done": 9, "missing": 0, "statuses": {"done": 9}}
    assert record["completion_tokens"] == 9 * 3 and record["wall_ms"] >= 0


def test_merge_of_nothing_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "tasks", "merge", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 2 and "no batch results" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- workspaces that travel -------------------------------------------------------------


def write_note_script(path: Path) -> Path:
    steps = [
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "notes.txt",'
        ' "content": "changed\\n"}}\n</tool_call>',
        "Written.",
    ]
    path.write_text("".join(json.dumps({"completion": s}) + "\n" for s in steps))
    return path


def test_copied_workspaces_keep_parallel_tasks_apart(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("original\n")
    os.mkfifo(ws / "pipe")  # a copy must not block on it
    tasks = many_tasks(tmp_path / "t.jsonl", 3, workspace=str(ws), copy_workspace=True)
    out = tmp_path / "out"
    code, events = batch(
        tasks, write_note_script(tmp_path / "s.jsonl"), results=out, jobs=3, approve="auto-edit"
    )
    assert code == 0
    assert (ws / "notes.txt").read_text() == "original\n"
    used = {evs[0]["workspace"] for evs in by_task(events).values()}
    assert len(used) == 3 and str(ws) not in used
    for folder in used:
        assert Path(folder).parent == out / "workspaces"
        assert (Path(folder) / "notes.txt").read_text() == "changed\n"


def test_a_task_runs_in_a_clone_of_its_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=repo, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip

    git("init", "-q")
    (repo / "notes.txt").write_text("first version\n")
    git("add", "-A")
    git("commit", "-qm", "one")
    first = git("rev-parse", "HEAD")
    (repo / "notes.txt").write_text("second version\n")
    git("commit", "-qam", "two")
    tasks = write_tasks(
        tmp_path / "t.jsonl",
        {"id": "old", "prompt": "What do the notes say?", "repo": "repo", "commit": first},
        {"id": "bad", "prompt": "p", "repo": "repo", "commit": "no-such-commit"},
    )
    script = FIXTURES / "read_notes.script.jsonl"
    code, events = batch(tasks, script)
    tasks_seen = by_task(events)
    read = next(e for e in tasks_seen["old"] if e["type"] == "tool_result")
    assert read["content"] == "1\tfirst version"
    assert tasks_seen["old"][-1]["status"] == "done"
    assert not Path(tasks_seen["old"][0]["workspace"]).exists()  # a temporary clone
    assert code == 1 and "cannot check out no-such-commit of" in tasks_seen["bad"][-1]["error"]


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ({"repo": "r"}, '"repo" and "commit" go together'),
        ({"repo": "-u", "commit": "x"}, "not starting with '-'"),
        ({"repo": "r", "commit": "x", "copy_workspace": True}, '"repo" is a workspace'),
        ({"copy_workspace": "yes"}, '"copy_workspace" must be true or false'),
    ],
)
def test_bad_workspace_sources_are_bad_lines(
    tmp_path: Path, line: dict[str, Any], says: str
) -> None:
    tasks = write_tasks(tmp_path / "t.jsonl", {"id": "a", "prompt": "p", **line})
    code, events = batch(tasks, answer_script(tmp_path / "s.jsonl"))
    assert code == 1 and says in events[0]["message"]


# --- what a Ray worker checks for itself (no cluster needed) ------------------------------


def test_a_worker_that_cannot_sandbox_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent.run.batch.output import NOT_FINAL
    from agent.run.batch.remote import SandboxRefused, worker_settings
    from agent.tools.sandbox import SandboxPolicy

    head_policy = SandboxPolicy(bwrap="/usr/bin/bwrap", shell="/bin/bash", allow_net=True)
    monkeypatch.setenv("BOSUN_BWRAP", "/nonexistent/bwrap")
    with pytest.raises(SandboxRefused, match="cannot sandbox bash") as info:
        worker_settings(Settings(sandbox=head_policy))
    assert str(info.value).startswith(NOT_FINAL)  # not recorded: a rerun elsewhere does it
    assert worker_settings(Settings(sandbox=None)).sandbox is None  # --sandbox off: as asked


def test_executor_ray_without_ray_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent.run.batch.ray_executor import _ray

    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(UsageError, match=r"pip install 'bosun\[ray\]'"):
        _ray()


def test_ray_flags_need_tasks() -> None:
    for flags in (["--executor", "ray"], ["--shard", "1/2"], ["--results", "x"]):
        proc = subprocess.run(
            [sys.executable, "-m", "agent", "run", "hello", *flags],
            cwd=REPO, capture_output=True, text=True,
        )  # fmt: skip
        assert proc.returncode == 2 and "needs --tasks FILE" in proc.stderr, proc.stderr


def test_a_bad_model_on_ray_is_a_usage_error_before_any_cluster(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    tasks = many_tasks(tmp_path / "t.jsonl", 1)
    settings = Settings(model=str(tmp_path / "missing.gguf"), executor="ray", workspace=tmp_path)
    with pytest.raises(UsageError, match=r"missing\.gguf"):
        run_tasks(settings, tasks, out=io.StringIO(), err=io.StringIO(), env={})
