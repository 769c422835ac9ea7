"""The eval suite on disk (`tasks/<id>/`) and what one attempt at a task amounted to.

Shared by every harness the suite runs through, so bosun and the peer are graded by the
same checks on the same fresh copies of the same fixtures.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

EVAL_DIR = Path(__file__).resolve().parent
TASKS_DIR = EVAL_DIR / "tasks"
CHECK_TIMEOUT_S = 60


@dataclass(frozen=True)
class EvalTask:
    id: str
    prompt: str
    difficulty: str
    min_tool_calls: int
    max_turns: int
    dir: Path

    @property
    def multi_turn(self) -> bool:
        return self.min_tool_calls >= 2


def load_suite(only: list[str] | None = None) -> list[EvalTask]:
    """Every task, or those whose id contains one of `only` (a subset for quick runs)."""
    tasks = []
    for meta_path in sorted(TASKS_DIR.glob("*/task.json")):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if only and not any(word in meta["id"] for word in only):
            continue
        tasks.append(
            EvalTask(
                id=meta["id"],
                prompt=meta["prompt"],
                difficulty=meta["difficulty"],
                min_tool_calls=meta["min_tool_calls"],
                max_turns=meta["max_turns"],
                dir=meta_path.parent,
            )
        )
    return tasks


def fresh_workspace(task: EvalTask, root: Path) -> Path:
    """A private copy of the fixture: the agent may wreck it, the fixture stays as is."""
    ws = root / task.id
    shutil.copytree(task.dir / "workspace", ws)
    return ws


def check(task: EvalTask, workspace: Path) -> tuple[bool, str]:
    """Run the task's check on what the agent left; (passed, its one-line verdict)."""
    try:
        proc = subprocess.run(
            [sys.executable, str(task.dir / "check.py"), str(workspace)],
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_S,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(EVAL_DIR)},
        )
    except subprocess.TimeoutExpired:
        return False, "check timed out"
    verdict = (proc.stdout.strip() or proc.stderr.strip()[-200:]).splitlines()
    return proc.returncode == 0, verdict[-1] if verdict else ""


@dataclass
class Attempt:
    """One task through one harness; the columns of the per-task table."""

    task: str
    difficulty: str
    success: bool = False
    status: str = ""
    turns: int = 0
    tool_calls: int = 0
    malformed: int = 0
    salvaged: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    verdict: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ConfigRun:
    name: str
    harness: str
    description: str
    command: list[str]
    wall_s: float = 0.0
    attempts: list[Attempt] = field(default_factory=list)
    error: str = ""

    def summary(self, multi_turn: set[str]) -> dict[str, Any]:
        """Aggregates over tasks. Well-formed rate is aider's: 1 - malformed / turns."""
        a = self.attempts
        n = len(a) or 1
        turns = sum(x.turns for x in a)
        calls = sum(x.tool_calls for x in a)
        malformed = sum(x.malformed for x in a)
        multi = [x for x in a if x.task in multi_turn]
        return {
            "config": self.name,
            "tasks": len(a),
            "solved": sum(x.success for x in a),
            "success_rate": sum(x.success for x in a) / n,
            "multi_turn_success_rate": sum(x.success for x in multi) / (len(multi) or 1),
            "well_formed_rate": 1 - malformed / turns if turns else 0.0,
            "malformed": malformed,
            "salvage_rate": sum(x.salvaged for x in a) / calls if calls else 0.0,
            # A run that never calls a tool has no malformed calls either: without this
            # column, answering in prose would look like perfect tool-call formatting.
            "no_call_tasks": sum(1 for x in a if x.tool_calls == 0),
            "loops_stopped": sum(x.extra.get("loops_stopped", 0) for x in a),
            "stuck": sum(1 for x in a if x.status == "stuck"),
            "mean_turns": turns / n,
            "mean_tool_calls": calls / n,
            "completion_tokens": sum(x.completion_tokens for x in a),
            "wall_s": self.wall_s,
        }

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "attempts": [asdict(x) for x in self.attempts]}


def from_json(data: dict[str, Any]) -> ConfigRun:
    run = ConfigRun(**{k: v for k, v in data.items() if k != "attempts"})
    run.attempts = [Attempt(**x) for x in data.get("attempts", [])]
    return run


# --- tables -------------------------------------------------------------------------


def _table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-markdown table: readable in a terminal and pasteable into RESULTS.md."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def task_table(run: ConfigRun) -> str:
    header = ["task", "diff", "ok", "status", "turns", "calls", "malformed", "salvaged"]
    header += ["tokens", "s"]
    rows = [
        [
            x.task,
            x.difficulty,
            "yes" if x.success else "-",
            x.status,
            str(x.turns),
            str(x.tool_calls),
            str(x.malformed),
            str(x.salvaged),
            str(x.prompt_tokens + x.completion_tokens),
            f"{x.seconds:.1f}",
        ]
        for x in run.attempts
    ]
    return _table(header, rows)


def summary_table(runs: list[ConfigRun], multi_turn: set[str]) -> str:
    header = ["config", "solved", "success", "multi-turn success", "well-formed", "malformed"]
    header += ["salvage", "no-call tasks", "stuck", "loops cut", "mean turns", "mean calls"]
    header += ["wall s"]
    rows = []
    for run in runs:
        s = run.summary(multi_turn)
        rows.append(
            [
                run.name,
                f"{s['solved']}/{s['tasks']}",
                f"{s['success_rate']:.0%}",
                f"{s['multi_turn_success_rate']:.0%}",
                f"{s['well_formed_rate']:.0%}",
                str(s["malformed"]),
                f"{s['salvage_rate']:.0%}",
                str(s["no_call_tasks"]),
                str(s["stuck"]),
                str(s["loops_stopped"]),
                f"{s['mean_turns']:.1f}",
                f"{s['mean_tool_calls']:.1f}",
                f"{s['wall_s']:.0f}",
            ]
        )
    return _table(header, rows)
