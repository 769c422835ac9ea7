"""Running falsifiers and their mutants, each time in a pytest subprocess.

Subprocesses because a mutant must not leak into the checker (or into the next mutant),
and because a named mutant has to be in place before any test module is imported. The
unmutated falsifiers share one run; each distinct mutation gets one run of its own, and
runs go in parallel (`jobs`). Outcomes come back per test node through the JSON report
of agent/contracts/plugin.py, never by parsing pytest's text.

A `patch:` mutant edits source, so it runs in a copy of the tree, in a temp folder of its
own under the checkout's folder name. The copy is self-contained: everything the tests
read, the template corpus included (tests/data), is inside it, and nothing beside it.
PYTHONPATH puts the copy ahead of the editable install's .pth entry.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.contracts.pytest_runs import PytestRun, run_pytest
from agent.contracts.schema import MUTATION_ENV, Falsifier, Mutation, Problem, Validation
from agent.contracts.validate import validate

COPIED = ("agent", "drivers", "templates", "contracts", "tests", "pyproject.toml")
HYPOTHESIS_DIR_ENV = "HYPOTHESIS_STORAGE_DIRECTORY"
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis")


@dataclass
class Outcome:
    """A falsifier's result in one run: a status word and why."""

    status: str
    detail: str = ""


def _falsifier_outcome(falsifier: Falsifier, run: PytestRun | None) -> Outcome:
    """Green means every item of the node ran and passed."""
    if run is None:
        return Outcome("not-run", "not run: the falsifier is invalid (see problems)")
    items = {n: r for n, r in run.results.items() if falsifier.owns(n)}
    if not items:
        return Outcome("not-run", _no_result(falsifier, run))
    for status in ("failed", "error", "mutant-error", "skipped", "xfailed"):
        for result in items.values():
            if result["outcome"] == status:
                return Outcome(status, result["detail"])
    return Outcome("passed")


def _mutant_outcome(falsifier: Falsifier, run: PytestRun) -> Outcome:
    """Killed only when the falsifier's own test fails; anything else is not proof."""
    mutation = run.report.get("mutation")
    if falsifier.mutation and not falsifier.mutation.patch and not (mutation or {}).get("applied"):
        why = (mutation or {}).get("error") or run.output
        return Outcome("error", f"mutant not applied: {why}")
    items = {n: r for n, r in run.results.items() if falsifier.owns(n)}
    if not items:
        return Outcome("error", _no_result(falsifier, run, mutant=True))
    outcomes = {r["outcome"] for r in items.values()}
    if "mutant-error" in outcomes:
        detail = next(r["detail"] for r in items.values() if r["outcome"] == "mutant-error")
        return Outcome("error", f"the mutant itself failed: {detail}")
    for result in items.values():
        if result["outcome"] in ("failed", "error"):
            return Outcome("killed", result["detail"])
    if outcomes <= {"passed"}:
        return Outcome("survived", "falsifier cannot falsify: it passes with the mutant applied")
    return Outcome("skipped", "the falsifier was skipped under the mutant, which proves nothing")


def _no_result(falsifier: Falsifier, run: PytestRun, mutant: bool = False) -> str:
    errors = run.report.get("collect_errors", {})
    for node, text in errors.items():
        if node.split("::", 1)[0] == falsifier.test_file or node == "<session>":
            what = "the mutant broke collection" if mutant else "collection failed"
            return f"{what}: {text}"
    return f"no result for {falsifier.test} (pytest exit {run.returncode}):\n{run.output}"


# --- mutant runs --------------------------------------------------------------------------


@contextmanager
def patched_copy(root: Path, mutation: Mutation) -> Iterator[Path]:
    """A throwaway copy of the tree with the patch applied; removed afterwards."""
    assert mutation.patch is not None
    parent = Path(tempfile.mkdtemp(prefix="bosun-mutant-"))
    try:
        copy = parent / root.name
        copy.mkdir()
        top = Path(mutation.patch.file).parts[0]
        for name in dict.fromkeys((*COPIED, top)):
            source = root / name
            if source.is_dir():
                shutil.copytree(source, copy / name, ignore=_IGNORE, symlinks=True)
            elif source.is_file():
                shutil.copy2(source, copy / name)
        mutation.patch.apply(copy)
        yield copy
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def run_mutant(root: Path, mutation: Mutation, nodes: list[str], timeout: float = 0) -> PytestRun:
    """Run `nodes` once with `mutation` in place.

    Hypothesis gets a scratch example database: the counterexamples a mutant provokes
    must not be saved into the project's .hypothesis/ and replayed forever after, and a
    mutant run should not depend on whatever that database happens to hold.
    """
    with tempfile.TemporaryDirectory(prefix="bosun-hypothesis-") as scratch:
        env = {HYPOTHESIS_DIR_ENV: scratch}
        if mutation.patch is None:
            spec = json.dumps({"target": mutation.target, "mutant": mutation.mutant})
            return run_pytest(nodes, root, {**env, MUTATION_ENV: spec}, timeout)
        with patched_copy(root, mutation) as copy:
            return run_pytest(nodes, copy, {**env, **copy_env(copy)}, timeout)


def copy_env(copy: Path) -> dict[str, str]:
    """PYTHONPATH entries precede site-packages and its .pth lines (the editable install)."""
    path = os.pathsep.join(p for p in (str(copy), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


# --- check ---------------------------------------------------------------------------------


@dataclass
class Row:
    """One falsifier's line in the report."""

    falsifier: Falsifier
    green: Outcome
    mutant: Outcome | None = None
    mutant_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.green.status == "passed" and (
            self.mutant is None or self.mutant.status == "killed"
        )

    def to_json(self) -> dict[str, Any]:
        f = self.falsifier
        out: dict[str, Any] = {
            "contract": f.contract,
            "obligation": f.obligation,
            "falsifier": f.id,
            "test": f.test,
            "green": self.green.status == "passed",
            "status": self.green.status,
            "detail": self.green.detail,
            "mutation": f.mutation.to_json() if f.mutation else None,
            "mutant": None,
            "ok": self.ok,
        }
        if self.mutant:
            out["mutant"] = {
                "status": self.mutant.status,
                "killed": self.mutant.status == "killed",
                "detail": self.mutant.detail,
                "seconds": round(self.mutant_seconds, 2),
            }
        return out


@dataclass
class CheckResult:
    validation: Validation
    rows: list[Row]
    mutate: bool
    seconds: float
    runs: int

    @property
    def problems(self) -> list[Problem]:
        return self.validation.problems

    @property
    def ok(self) -> bool:
        return not self.problems and all(row.ok for row in self.rows)


def check(
    path: Path,
    mutate: bool = False,
    jobs: int | None = None,
    root: Path | None = None,
    timeout: float = 0,
) -> CheckResult:
    """Validate, run every runnable falsifier once, then (with `mutate`) every mutant."""
    start = time.monotonic()
    v = validate(path, root)
    assert v.root is not None
    runnable = [f for f in v.falsifiers if f.id not in v.missing_nodes]
    nodes = list(dict.fromkeys(f.test for f in runnable))
    baseline = run_pytest(nodes, v.root, timeout=timeout) if nodes else None
    runs = 1 if baseline else 0
    rows = [
        Row(f, _falsifier_outcome(f, baseline if f in runnable else None)) for f in v.falsifiers
    ]
    if mutate:
        groups: dict[tuple[str, ...], list[Row]] = {}
        for row in rows:
            f = row.falsifier
            if f.mutation is None:
                continue
            if f.id in v.bad_mutations:
                row.mutant = Outcome("not-run", "not run: the mutation is invalid (see problems)")
            elif row.green.status != "passed":
                row.mutant = Outcome("not-run", "not run: the falsifier is not green")
            else:
                groups.setdefault(f.mutation.key(), []).append(row)

        def one(group: list[Row]) -> None:
            mutation = group[0].falsifier.mutation
            assert mutation is not None
            tests = list(dict.fromkeys(r.falsifier.test for r in group))
            run = run_mutant(v.root or Path("."), mutation, tests, timeout)
            for row in group:
                row.mutant, row.mutant_seconds = _mutant_outcome(row.falsifier, run), run.seconds

        workers = max(1, jobs or min(4, os.cpu_count() or 1))
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(one, groups.values()))
        runs += len(groups)
    return CheckResult(v, rows, mutate, time.monotonic() - start, runs)
