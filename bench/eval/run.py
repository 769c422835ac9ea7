"""Agent evaluation: the task suite through bosun (and its ablations) and a peer harness.

    .venv/bin/python bench/eval/run.py [--model smollm2-135m] [--jobs 1] [--configs a,b]
                                       [--tasks id,id] [--out bench/eval/results.json]
                                       [--repo-map TOKENS]   (0: off; config bosun-map: 1024)

Each configuration runs every task on a fresh copy of its fixture; the task's check then
decides success from the files alone, so a harness's own "done" counts for nothing. A
table per configuration, then one side-by-side summary, are printed; everything goes
to --out as JSON. `--merge a.json b.json` prints and combines earlier result files
(configurations run as separate processes, e.g. one per core).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from suite import (
    EVAL_DIR,
    Attempt,
    ConfigRun,
    EvalTask,
    check,
    fresh_workspace,
    from_json,
    load_suite,
    summary_table,
    task_table,
)

MAX_TOKENS = 512  # per model call: room for a whole small file in one write_file
LOOP_STOPPED = "kept repeating itself"  # the runtime's diagnostic for a cut-short loop

# name -> (bosun run flags, what the configuration tests)
BOSUN_CONFIGS: dict[str, tuple[list[str], str]] = {
    "bosun": ([], "bosun as shipped (--constrain, default auto)"),
    "bosun-never": (["--constrain", "never"], "unconstrained decoding"),
    "bosun-always": (["--constrain", "always"], "grammar on every call"),
    "bosun-no-salvage": (
        ["--constrain", "never", "--ablate", "salvage"],
        "unconstrained, salvage off (compare with bosun-never)",
    ),
    "bosun-no-retention": (
        ["--constrain", "never", "--ablate", "retention"],
        "unconstrained, raw completions kept in history (compare with bosun-never)",
    ),
    "bosun-auto-no-salvage": (
        ["--ablate", "salvage"],
        "default decoding, salvage off (compare with bosun)",
    ),
    "bosun-auto-no-retention": (
        ["--ablate", "retention"],
        "default decoding, raw completions kept in history (compare with bosun)",
    ),
    "bosun-map": ([], "bosun with a 1024-token repository map (compare with bosun)"),
}
# repo_map_tokens per configuration (written to its config.toml); the others take
# --repo-map, or bosun's own default (none for the bundled models' 8k context)
MAP_TOKENS = {"bosun-map": 1024}
# the tools whose calls are counted per configuration (the map's effect on searching)
COUNTED_TOOLS = ("read_file", "list_dir", "glob", "grep", "outline", "find_symbol")
PEER = "mini-swe-agent"
DEFAULT_CONFIGS = [*BOSUN_CONFIGS, PEER]


def bosun_command(flags: list[str], args: argparse.Namespace, tasks_file: Path) -> list[str]:
    cmd = [sys.executable, "-m", "agent", "run", "--tasks", str(tasks_file)]
    cmd += ["--output", "jsonl", "--jobs", str(args.jobs), "--model", args.model]
    cmd += ["--approve", "auto"]
    if "--constrain" not in flags:
        cmd += ["--constrain", args.constrain]
    return cmd + flags


def tally(events: list[dict[str, Any]], attempt: Attempt) -> None:
    """Fold one task's JSONL events into its table row."""
    for e in events:
        kind = e.get("type")
        if kind == "diagnostic" and LOOP_STOPPED in e.get("message", ""):
            # Not a format error: a looping answer cut short (agent/loop/loopguard.py).
            attempt.extra["loops_stopped"] = attempt.extra.get("loops_stopped", 0) + 1
        elif kind == "diagnostic":
            attempt.malformed += 1
            # Kept so a malformed count can be explained after the workspaces are gone.
            attempt.extra.setdefault("diagnostics", []).append(e.get("message", "")[:300])
        elif kind == "tool_call":
            calls = attempt.extra.setdefault("calls", {})
            calls[e.get("name", "")] = calls.get(e.get("name", ""), 0) + 1
            attempt.salvaged += bool(e.get("salvaged"))
        elif kind == "result":
            attempt.status = e.get("status", "")
            attempt.turns = e.get("turns", 0)
            attempt.tool_calls = e.get("tool_calls", 0)
            attempt.prompt_tokens = e.get("prompt_tokens", 0)
            attempt.completion_tokens = e.get("completion_tokens", 0)
            attempt.seconds = e.get("duration_ms", 0) / 1000
            if e.get("error"):
                attempt.extra["error"] = e["error"]


def run_bosun(name: str, tasks: list[EvalTask], args: argparse.Namespace, tmp: Path) -> ConfigRun:
    flags, description = BOSUN_CONFIGS[name]
    root = tmp / name
    root.mkdir()
    lines = [
        {
            "id": t.id,
            "prompt": t.prompt,
            "workspace": str(fresh_workspace(t, root)),
            "max_turns": t.max_turns,
            "max_tokens": MAX_TOKENS,
        }
        for t in tasks
    ]
    tasks_file = tmp / f"{name}.jsonl"
    tasks_file.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    cmd = bosun_command(flags, args, tasks_file)
    run = ConfigRun(name, "bosun", description, cmd)
    home = tmp / f"bosun-home-{name}"
    tokens = MAP_TOKENS.get(name, args.repo_map)
    if tokens is not None:  # the map on (or off) for this configuration
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(f"repo_map_tokens = {tokens}\n", encoding="utf-8")
        run.description += f" [repo_map_tokens = {tokens}]"
    env = {**os.environ, "BOSUN_HOME": str(home)}
    started = time.perf_counter()
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=env, cwd=EVAL_DIR.parent.parent, check=False
    )
    run.wall_s = time.perf_counter() - started
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in proc.stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        by_task[event.get("task", "")].append(event)
    if proc.returncode not in (0, 1, 3):
        run.error = f"bosun exited {proc.returncode}: {proc.stderr.strip()[-400:]}"
    for t in tasks:
        attempt = Attempt(t.id, t.difficulty)
        tally(by_task.get(t.id, []), attempt)
        attempt.success, attempt.verdict = check(t, root / t.id)
        run.attempts.append(attempt)
    return run


def run_config(name: str, tasks: list[EvalTask], args: argparse.Namespace, tmp: Path) -> ConfigRun:
    if name in BOSUN_CONFIGS:
        return run_bosun(name, tasks, args, tmp)
    if name == PEER:
        from peer import run_peer

        return run_peer(tasks, tmp / PEER, max_tokens=MAX_TOKENS)
    known = ", ".join([*BOSUN_CONFIGS, PEER])
    raise SystemExit(f"unknown configuration {name!r} (known: {known})")


def report(runs: list[ConfigRun], tasks: list[EvalTask], per_task: bool, total: bool) -> str:
    parts = []
    for run in runs if per_task else []:
        head = f"## {run.name}: {run.description}  ({run.wall_s:.0f} s)"
        parts += [head, task_table(run), *([f"error: {run.error}"] if run.error else []), ""]
    if total:
        parts += ["## Summary", summary_table(runs, {t.id for t in tasks if t.multi_turn})]
        parts += ["", "## Tool calls (all tasks)", calls_table(runs)]
    return "\n".join(parts)


def calls_table(runs: list[ConfigRun]) -> str:
    """Calls per tool, per configuration: whether a map replaces searching and reading."""
    head = ["config", *COUNTED_TOOLS, "other", "mean turns"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for run in runs:
        counts: dict[str, int] = defaultdict(int)
        for a in run.attempts:
            for tool, n in a.extra.get("calls", {}).items():
                counts[tool if tool in COUNTED_TOOLS else "other"] += n
        turns = sum(a.turns for a in run.attempts) / max(len(run.attempts), 1)
        cells = [run.name, *(str(counts[t]) for t in (*COUNTED_TOOLS, "other")), f"{turns:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def save(
    runs: list[ConfigRun], args: argparse.Namespace, out: Path, sources: list[Any] | None = None
) -> None:
    tasks = load_suite()
    data: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores, no GPU",
        "argv": sys.argv,
        "model": getattr(args, "model", None),
        "max_tokens": MAX_TOKENS,
        "summary": [r.summary({t.id for t in tasks if t.multi_turn}) for r in runs],
        "configs": [r.to_json() for r in runs],
    }
    if sources:
        data["sources"] = sources  # the runs merged here: when and how each was made
    out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--constrain", default="auto", choices=["auto", "always", "never"])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS))
    ap.add_argument("--tasks", default="", help="comma-separated substrings of task ids")
    ap.add_argument(
        "--repo-map",
        type=int,
        default=None,
        metavar="TOKENS",
        help="repo_map_tokens for every bosun configuration (0: off; default: bosun's own)",
    )
    ap.add_argument("--out", type=Path, default=EVAL_DIR / "results.json")
    ap.add_argument("--merge", nargs="+", type=Path, help="combine earlier result files")
    args = ap.parse_args()
    if args.merge:
        files = [json.loads(f.read_text(encoding="utf-8")) for f in args.merge]
        runs = [from_json(c) for data in files for c in data["configs"]]
        print(report(runs, load_suite(), per_task=True, total=True))
        sources = [{k: d.get(k) for k in ("date", "machine", "argv", "model")} for d in files]
        args.model = files[0].get("model")
        save(runs, args, args.out, sources)
        return
    tasks = load_suite([w for w in args.tasks.split(",") if w] or None)
    if not tasks:
        raise SystemExit("no task matches --tasks")
    runs: list[ConfigRun] = []
    with tempfile.TemporaryDirectory(prefix="bosun-eval-") as tmp:
        for name in [c.strip() for c in args.configs.split(",") if c.strip()]:
            print(f"running {name} on {len(tasks)} tasks …", file=sys.stderr, flush=True)
            run = run_config(name, tasks, args, Path(tmp))
            runs.append(run)
            print(report([run], tasks, per_task=True, total=False), flush=True)
            print(file=sys.stderr)
            save(runs, args, args.out)  # a crash later keeps what already ran
    print(report(runs, tasks, per_task=False, total=True))
    print(f"\nresults: {args.out}")


if __name__ == "__main__":
    main()
