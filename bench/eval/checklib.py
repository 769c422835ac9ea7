"""Helpers for the task checks (`tasks/*/check.py`).

A check decides success from the files alone, so it must not trust anything the agent
could have faked: it runs the agent's code in a fresh interpreter with a timeout (an
infinite loop fails instead of hanging the suite) and asserts with its own copy of any
test, never the workspace's, which the agent may have edited.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

TIMEOUT_S = 10


def fail(message: str) -> NoReturn:
    print(f"FAIL: {message}")
    sys.exit(1)


def workspace() -> Path:
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        print("usage: check.py WORKSPACE_DIR", file=sys.stderr)
        sys.exit(2)
    return Path(sys.argv[1]).resolve()


def text(ws: Path, name: str) -> str:
    path = ws / name
    if not path.is_file():
        fail(f"{name} does not exist")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {name}: {exc}")


def load_json(ws: Path, name: str) -> Any:
    try:
        return json.loads(text(ws, name))
    except json.JSONDecodeError as exc:
        fail(f"{name} is not valid JSON: {exc}")


def run_python(
    ws: Path, *args: str, timeout: float = TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """`python ARGS` inside the workspace, isolated from the caller's environment."""
    try:
        return subprocess.run(
            [sys.executable, "-I", "-B", *args]
            if args[0] == "-c"
            else [sys.executable, "-B", *args],
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ws), "PYTHONDONTWRITEBYTECODE": "1"},
        )
    except subprocess.TimeoutExpired:
        fail(f"python {' '.join(args)[:60]} timed out after {timeout:g} s")


def output_of(ws: Path, *args: str) -> str:
    """Stdout of a program that must exit 0."""
    proc = run_python(ws, *args)
    if proc.returncode != 0:
        fail(f"python {' '.join(args)[:60]} exited {proc.returncode}: {proc.stderr[-400:]}")
    return proc.stdout


def assert_code(ws: Path, code: str) -> None:
    """Run assertions in a fresh interpreter whose sys.path starts at the workspace."""
    prelude = f"import sys; sys.path.insert(0, {str(ws)!r})\n"
    proc = run_python(ws, "-c", prelude + code)
    if proc.returncode != 0:
        fail(f"assertions failed: {proc.stderr.strip()[-400:]}")


def python_files(ws: Path) -> list[Path]:
    return sorted(p for p in ws.rglob("*.py") if "__pycache__" not in p.parts)


def mentions(source: str, word: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", source) is not None
