"""Time and memory of every tool against inputs built to make it hang or blow up.

    .venv/bin/python bench/tool_bounds.py [--quick]

Each scenario runs in a fresh process (so its peak memory is its own): a workspace is
built in a temporary folder, one tool call runs through the registry as the loop runs
it, and the table shows the wall time, the peak resident memory of the bosun process
and of the largest child it started (ripgrep, the shell), and the first line of what
the model would read. The bounds these numbers sit under are bosun's own limits (see
docs/tools-and-safety.md): 20 s and 1 GiB of address space for each ripgrep run, 256 kB read per
read_file, 16 kB of AGENTS.md, 20,000 folder entries scanned, 30 kB of shell output.
A child's peak includes the copy of bosun it was forked from (about 30 MB) before it
ran its own program.

A second table runs the hostile-input cases of bench/bounds_models.py (model files:
chat templates, GGUF metadata) and bench/bounds_schemas.py (MCP tool schemas), where
they exist, each in a fresh process as well: its wall time, its peak resident memory
and what it grew by, and the one line bosun answers.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

Setup = Callable[[Path, bool], tuple[str, dict[str, object]]]


def _sparse(path: Path, size: int, head: bytes = b"") -> None:
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(size)


def backtracking(ws: Path, quick: bool) -> tuple[str, dict[str, object]]:
    (ws / "as.txt").write_text("a" * (200_000 if quick else 2_000_000) + "\n")
    return "grep", {"pattern": "(a+)+$"}


def many_files(ws: Path, quick: bool) -> tuple[str, dict[str, object]]:
    n = 20_000 if quick else 100_000
    for d in range(n // 1000):
        folder = ws / f"d{d}"
        folder.mkdir()
        for i in range(1000):
            (folder / f"f{i}.py").write_text("x = 1\n")
    return "grep", {"pattern": "needle"}


def many_files_glob(ws: Path, quick: bool) -> tuple[str, dict[str, object]]:
    many_files(ws, quick)
    return "glob", {"pattern": "**/*.py"}


def big_named_file(ws: Path, quick: bool) -> tuple[str, dict[str, object]]:
    line = b"lorem ipsum dolor sit amet " * 4 + b"\n"
    with open(ws / "big.log", "wb") as fh:
        for _ in range((50 if quick else 200) * 1024 * 1024 // len(line)):
            fh.write(line)
        fh.write(b"needle\n")
    return "grep", {"pattern": "needle", "path": "big.log"}


def ignore_bomb(ws: Path, quick: bool) -> tuple[str, dict[str, object]]:
    _sparse(ws / ".gitignore", 64 * 1024 * 1024, b"*.log\n")
    return "glob", {"pattern": "**"}


def ignore_pathological(ws: Path, quick: bool) -> tuple[str, dict[str, object]]:
    (ws / ".gitignore").write_text("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\n" * 1000)
    deep = ws
    for _ in range(20):
        deep = deep / ("a" * 200)
        deep.mkdir()
    (deep / "x.txt").write_text("x\n")
    return "glob", {"pattern": "**/x.txt"}


def ignore_fifo(ws: Path, quick: bool) -> tuple[str, dict[str, object]]:
    (ws / "sub").mkdir()
    (ws / "sub" / "a.txt").write_text("needle\n")
    os.mkfifo(ws / "sub" / ".gitignore")
    return "grep", {"pattern": "needle"}


def huge_folder(ws: Path, quick: bool) -> tuple[str, dict[str, object]]:
    for i in range(30_000 if quick else 200_000):
        (ws / f"f{i}").touch()
    return "list_dir", {"path": "."}


def sparse_read(ws: Path, quick: bool) -> tuple[str, dict[str, object]]:
    _sparse(ws / "huge.txt", 1024**3, b"first line\n" + b"x" * 100)
    return "read_file", {"path": "huge.txt"}


def one_line_read(ws: Path, quick: bool) -> tuple[str, dict[str, object]]:
    with open(ws / "min.js", "w") as fh:
        for _ in range(64):
            fh.write("var a=1;" * 131_072)
    return "read_file", {"path": "min.js"}


def agents_md(ws: Path, quick: bool) -> tuple[str, dict[str, object]]:
    _sparse(ws / "AGENTS.md", 512 * 1024 * 1024, b"Use tabs.\n")
    return "instructions", {}


def shell_flood(ws: Path, quick: bool) -> tuple[str, dict[str, object]]:
    size = "200M" if quick else "2G"
    return "bash", {"command": f"yes | head -c {size}", "timeout": 120}


def shell_timeout(ws: Path, quick: bool) -> tuple[str, dict[str, object]]:
    return "bash", {"command": "sleep 1000 & setsid -f sleep 1000; sleep 1000", "timeout": 2}


SCENARIOS: dict[str, Setup] = {
    "grep (a+)+$ over one long line": backtracking,
    "grep a repository of many files": many_files,
    "glob a repository of many files": many_files_glob,
    "grep a large named file": big_named_file,
    "glob under a 64 MB .gitignore": ignore_bomb,
    "glob, pathological ignore + long path": ignore_pathological,
    "grep with a FIFO as .gitignore": ignore_fifo,
    "list_dir of a huge folder": huge_folder,
    "read_file of a 1 GB sparse file": sparse_read,
    "read_file of a 64 MB one-line file": one_line_read,
    "AGENTS.md of 512 MB (sparse)": agents_md,
    "bash that prints gigabytes": shell_flood,
    "bash past its timeout, setsid child": shell_timeout,
}


def one(name: str, quick: bool) -> dict[str, object]:
    from agent.history import ToolCall
    from agent.run.system_prompt import project_instructions
    from agent.tools import ToolContext, default_registry

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        tool, args = SCENARIOS[name](ws, quick)
        registry = default_registry()
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        if tool == "instructions":
            answer = project_instructions(ws)[0]
        else:
            answer = registry.execute(ToolCall("b", tool, args), ToolContext(ws)).content
        wall = time.perf_counter() - start
        self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    first = answer.splitlines()[0] if answer else ""
    return {
        "wall_s": wall,
        "bosun_mb": self_kb / 1024,
        "grew_mb": (self_kb - base) / 1024,
        "child_mb": child_kb / 1024,
        "answer": first[:48],
    }


CASE_MODULES = ("bounds_models", "bounds_schemas")  # bench/*.py exporting CASES


def case_modules() -> list[str]:
    here = Path(__file__).resolve().parent
    return [name for name in CASE_MODULES if (here / f"{name}.py").is_file()]


def one_case(spec: str, quick: bool) -> dict[str, object]:
    """`module:name` from a case module, run in this (fresh) process."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    module, _, name = spec.partition(":")
    cases = importlib.import_module(module).CASES
    with tempfile.TemporaryDirectory() as tmp:
        run = cases[name](Path(tmp), quick)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        answer = run()
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "wall_s": wall,
        "peak_mb": peak / 1024,
        "grew_mb": (peak - base) / 1024,
        "answer": answer,
    }


def case_table(quick: bool) -> None:
    print(f"\n{'case':44} {'wall s':>7} {'peak MB':>8} {'+MB':>6}  outcome")
    for module in case_modules():
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        for name in importlib.import_module(module).CASES:
            spec = f"{module}:{name}"
            cmd = [sys.executable, __file__, "--case", spec] + (["--quick"] if quick else [])
            try:
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            except subprocess.TimeoutExpired:
                print(f"{name[:44]:44} timed out after 600 s")
                continue
            if out.returncode != 0:
                print(f"{name[:44]:44} failed: {out.stderr.strip().splitlines()[-1:]}")
                continue
            r = json.loads(out.stdout.splitlines()[-1])
            print(
                f"{name[:44]:44} {r['wall_s']:7.2f} {r['peak_mb']:8.0f} {r['grew_mb']:6.0f}"
                f"  {str(r['answer'])[:90]}"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller inputs (CI-sized)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.quick)))
        return
    if args.case:
        print(json.dumps(one_case(args.case, args.quick)))
        return
    print(f"{'scenario':40} {'wall s':>7} {'bosun MB':>9} {'+MB':>6} {'child MB':>9}  answer")
    for name in SCENARIOS:
        cmd = [sys.executable, __file__, "--one", name] + (["--quick"] if args.quick else [])
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            print(f"{name:40} failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(out.stdout.splitlines()[-1])
        print(
            f"{name:40} {r['wall_s']:7.2f} {r['bosun_mb']:9.0f} {r['grew_mb']:6.0f}"
            f" {r['child_mb']:9.0f}  {r['answer']}"
        )
    case_table(args.quick)


if __name__ == "__main__":
    main()
