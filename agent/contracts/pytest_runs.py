"""pytest in a subprocess, for the contract checker: collecting nodes, running
falsifiers, and reading back the report agent/contracts/plugin.py writes (never pytest's
human output)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.contracts.schema import REPORT_ENV, RESOLVE_ENV

PYTEST_FLAGS = ("-p", "no:cacheprovider", "-p", "agent.contracts.plugin", "-q", "--no-header")
RUN_TIMEOUT_S = 900
_TAIL = 4000


@dataclass
class PytestRun:
    """One pytest subprocess: its exit code, the plugin's report, the end of its output."""

    returncode: int
    report: dict[str, Any]
    output: str
    seconds: float

    @property
    def results(self) -> dict[str, dict[str, str]]:
        return self.report.get("results", {})


def _env(extra: dict[str, str]) -> dict[str, str]:
    """The caller's environment (HYPOTHESIS_PROFILE included) minus a parent run's mutant."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOSUN_CONTRACTS_")}
    env.update(extra)
    return env


def run_pytest(
    args: list[str], cwd: Path, extra_env: dict[str, str] | None = None, timeout: float = 0
) -> PytestRun:
    """Run pytest with the contracts plugin and return what it reported."""
    fd, report_path = tempfile.mkstemp(prefix="bosun-contracts-", suffix=".json")
    os.close(fd)
    env = _env({**(extra_env or {}), REPORT_ENV: report_path})
    cmd = [sys.executable, "-m", "pytest", *PYTEST_FLAGS, *args]
    start = time.monotonic()
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout or RUN_TIMEOUT_S,
        )
        code, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or b""
        text = out.decode(errors="replace") if isinstance(out, bytes) else out
        code, output = -1, text + f"\n(timed out after {exc.timeout:.0f}s)"
    try:
        with open(report_path, encoding="utf-8") as fh:
            report = json.load(fh) if os.path.getsize(report_path) else {}
    except (OSError, ValueError):
        report = {}
    finally:
        Path(report_path).unlink(missing_ok=True)
    return PytestRun(code, report, output[-_TAIL:], time.monotonic() - start)


@dataclass
class Collected:
    """Collected node ids, per-file import errors and mutation-target resolution."""

    nodes: list[str] = field(default_factory=list)
    file_errors: dict[str, str] = field(default_factory=dict)
    resolved: dict[str, str | None] = field(default_factory=dict)
    error: str | None = None


def collect(root: Path, files: list[str], targets: list[dict[str, Any]]) -> Collected:
    """One `pytest --collect-only` for every test file, resolving targets on the way."""
    if importlib.util.find_spec("pytest") is None:
        return Collected(error=f"pytest is not installed for {sys.executable} (pip install pytest)")
    extra = {RESOLVE_ENV: json.dumps(targets)} if targets else {}
    run = run_pytest(["--collect-only", "--continue-on-collection-errors", *files], root, extra)
    if not run.report:
        return Collected(error=f"pytest could not collect in {root}:\n{run.output}")
    errors = {node.split("::", 1)[0]: text for node, text in run.report["collect_errors"].items()}
    return Collected(run.report["collected"], errors, run.report["resolved"])


# --- outcomes ---------------------------------------------------------------------------
