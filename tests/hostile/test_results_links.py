"""A `--results DIR` on a filesystem others write to (the normal case on a cluster): a
link planted under DIR is refused, never followed, so nothing outside DIR is written
or built in; a FIFO or a line nested too deep in DIR ends `bosun tasks merge` with an
error line, never a hang or a traceback."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.errors import UsageError
from agent.run.batch import run_tasks
from agent.run.batch.results import file_name
from agent.run.settings import Settings
from tests.helpers import snapshot
from tests.run.batch_helpers import FIXTURES, by_task, write_tasks

REPO = Path(__file__).resolve().parents[2]
PRECIOUS = b"precious: a file outside the results folder\n"


class Outside:
    """Files outside DIR that a planted link points at: they must come out unchanged."""

    def __init__(self, tmp_path: Path, victim: bytes = PRECIOUS) -> None:
        self.root = tmp_path / "outside"
        self.root.mkdir()
        self.victim = self.root / "victim.txt"
        self.victim.write_bytes(victim)
        self.folder = self.root / "folder"
        self.folder.mkdir()
        self._before = snapshot(self.root, self.root / "none")

    def unchanged(self) -> bool:
        return snapshot(self.root, self.root / "none") == self._before


def batch(
    tmp_path: Path, *tasks: dict[str, Any], **kw: Any
) -> tuple[int, list[dict[str, Any]], str]:
    """The tasks run with `--results tmp_path/out` on a one-answer script."""
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"completion": "The answer."}) + "\n")
    kw.setdefault("workspace", FIXTURES / "ws")
    settings = Settings(model=f"scripted:{script}", results=tmp_path / "out", **kw)
    out, err = io.StringIO(), io.StringIO()
    code = run_tasks(settings, write_tasks(tmp_path / "t.jsonl", *tasks), out=out, err=err, env={})
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def merge(*folders: Path) -> subprocess.CompletedProcess[str]:
    """`bosun tasks merge`, in its own process: a hang is a timeout, not a stuck suite."""
    return subprocess.run(
        [sys.executable, "-m", "agent", "tasks", "merge", *map(str, folders)],
        cwd=REPO, capture_output=True, text=True, timeout=30,
    )  # fmt: skip


TASK = {"id": "t", "prompt": "Answer."}


@pytest.mark.parametrize("kind", ["symlink", "dangling symlink", "hard link"])
def test_a_result_file_planted_as_a_link_is_never_written_through(
    tmp_path: Path, kind: str
) -> None:
    outside = Outside(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    planted = out / file_name("t")
    if kind == "symlink":
        planted.symlink_to(outside.victim)
    elif kind == "dangling symlink":
        planted.symlink_to(outside.root / "new.txt")
    else:
        os.link(outside.victim, planted)
    code, events, err = batch(tmp_path, TASK)
    assert outside.unchanged()
    assert by_task(events)["t"][-1]["status"] == "done"  # stdout still has the task's lines
    if kind == "hard link":  # a regular file: replaced by a new one, the other name untouched
        assert code == 0 and planted.read_bytes() != PRECIOUS and not err
    else:  # a link: refused, named, not removed; the result is not recorded: exit 1
        assert code == 1 and planted.is_symlink(), err
        assert err.count("\n") == 1 and "is a symbolic link" in err and "Traceback" not in err


def test_a_linked_result_is_not_read_as_recorded(tmp_path: Path) -> None:
    """A link to a complete result elsewhere does not make the task count as done."""
    recorded = {"type": "result", "status": "done", "task": "t"}
    outside = Outside(tmp_path, (json.dumps(recorded) + "\n").encode())
    out = tmp_path / "out"
    out.mkdir()
    (out / file_name("t")).symlink_to(outside.victim)
    code, events, _err = batch(tmp_path, TASK)
    assert "skipped" not in events[-1] and code == 1
    assert outside.unchanged()


def test_a_summary_part_file_planted_as_a_link_is_refused(tmp_path: Path) -> None:
    outside = Outside(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / ".summary-1-of-1.json.part").symlink_to(outside.victim)
    with pytest.raises(UsageError, match=r"summary-1-of-1\.json\.part is a symbolic link"):
        batch(tmp_path, TASK)
    assert outside.unchanged()
    # through the command line: one line, exit 2 (the folder is the user's input)
    script = tmp_path / "script.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "run", "--tasks", str(tmp_path / "t.jsonl"),
         "--model", f"scripted:{script}", "--workspace", str(FIXTURES / "ws"),
         "--results", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "symbolic link" in proc.stderr
    assert outside.unchanged()


def test_a_summary_planted_as_a_link_is_not_renamed_over(tmp_path: Path) -> None:
    outside = Outside(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary-1-of-1.json").symlink_to(outside.victim)
    with pytest.raises(UsageError, match=r"summary-1-of-1\.json is a symbolic link"):
        batch(tmp_path, TASK)
    assert outside.unchanged() and (out / "summary-1-of-1.json").is_symlink()
    assert not (out / ".summary-1-of-1.json.part").exists()


def git_repo(path: Path) -> str:
    path.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=path, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip

    git("init", "-q")
    (path / "notes.txt").write_text("from the repo\n")
    git("add", "-A")
    git("commit", "-qm", "one")
    return git("rev-parse", "HEAD")


def workspace_task(tmp_path: Path, source: str) -> dict[str, Any]:
    if source == "clone":
        commit = git_repo(tmp_path / "repo")
        return {**TASK, "repo": "repo", "commit": commit}
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("copied\n")
    return {**TASK, "workspace": str(ws), "copy_workspace": True}


@pytest.mark.parametrize("source", ["copy", "clone"])
@pytest.mark.parametrize("where", ["workspaces", "task-folder"])  # DIR/workspaces/<task>
def test_a_workspace_folder_planted_as_a_link_fails_the_task(
    tmp_path: Path, where: str, source: str
) -> None:
    outside = Outside(tmp_path)
    task = workspace_task(tmp_path, source)
    out = tmp_path / "out"
    if where == "workspaces":
        out.mkdir()
        (out / "workspaces").symlink_to(outside.folder, target_is_directory=True)
    else:
        (out / "workspaces").mkdir(parents=True)
        name = file_name("t").removesuffix(".jsonl")
        (out / "workspaces" / name).symlink_to(outside.folder, target_is_directory=True)
    code, events, err = batch(tmp_path, task)
    assert outside.unchanged(), "the workspace was built outside the results folder"
    result = by_task(events)["t"][-1]
    assert code == 1 and result["status"] == "error", result
    assert "is a symbolic link" in result["error"] and "internal error" not in result["error"]
    assert not [e for e in by_task(events)["t"] if e["type"] == "tool_call"]
    assert "Traceback" not in err


def test_a_workspace_built_again_replaces_the_old_one(tmp_path: Path) -> None:
    """The checks do not get in the way of a task done again (--redo)."""
    task = workspace_task(tmp_path, "copy")
    assert batch(tmp_path, task)[0] == 0
    built = tmp_path / "out" / "workspaces" / file_name("t").removesuffix(".jsonl")
    (built / "left-over.txt").write_text("from the first run\n")
    code, events, _err = batch(tmp_path, task, redo=True)
    assert code == 0 and events[0]["workspace"] == str(built.resolve())
    assert sorted(p.name for p in built.iterdir()) == ["notes.txt"]


# --- bosun tasks merge ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["x.jsonl", "summary-2-of-2.json"])
def test_merge_of_a_folder_with_a_fifo_ends_with_an_error_line(tmp_path: Path, name: str) -> None:
    code, _events, _err = batch(tmp_path, TASK)
    assert code == 0
    os.mkfifo(tmp_path / "out" / name)
    proc = merge(tmp_path / "out")  # before the fix: blocked in open() until the timeout
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert (
        proc.stderr == f"bosun: error: {tmp_path / 'out' / name} is a FIFO, which bosun"
        " never makes under a results folder; refused\n"
    )
    assert json.loads(proc.stdout)["done"] == 1


def test_merge_of_a_folder_with_only_a_fifo_is_a_usage_error(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "t.jsonl")
    proc = merge(tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "no batch results" in proc.stderr and "is a FIFO" in proc.stderr


def test_merge_does_not_read_results_through_links(tmp_path: Path) -> None:
    code, _events, _err = batch(tmp_path, TASK)
    elsewhere = tmp_path / "elsewhere.jsonl"
    record = {"type": "result", "status": "done", "task": "from-outside"}
    elsewhere.write_text(json.dumps(record) + "\n")
    (tmp_path / "out" / "linked.jsonl").symlink_to(elsewhere)
    proc = merge(tmp_path / "out")
    assert code == 0 and proc.returncode == 1
    assert (
        json.loads(proc.stdout)["tasks"] == 1 and "linked.jsonl is a symbolic link" in proc.stderr
    )


@pytest.mark.parametrize("name", ["deep.jsonl", "summary-2-of-2.json"])
def test_merge_of_json_nested_too_deep_is_one_error_line(tmp_path: Path, name: str) -> None:
    code, _events, _err = batch(tmp_path, TASK)
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "out" / name).write_text(
        json.dumps({"type": "result", "x": 1})[:-1] + f', "d": {deep}}}\n'
    )
    proc = merge(tmp_path / "out")
    assert code == 0 and proc.returncode == 1, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "nested deeper than 64 levels" in proc.stderr
    assert json.loads(proc.stdout)["done"] == 1
