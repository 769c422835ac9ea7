"""pytest plugin the contract checker loads with `-p agent.contracts.plugin`.

It runs inside the pytest subprocess and talks to the checker through environment
variables and one JSON file, so the checker never parses pytest's human output:

- BOSUN_CONTRACTS_REPORT: where to write what happened (collected node ids, collection
  errors, one outcome per test node, whether the mutant went in).
- BOSUN_CONTRACTS_MUTATION: {"target": "module:qualname", "mutant": NAME} to apply before
  any test module (or conftest) is imported, so module-level code sees the mutant too.
- BOSUN_CONTRACTS_RESOLVE: a list of such objects to resolve and build without applying;
  `validate` uses it so targets are checked by the same code, in the same environment
  (cwd, sys.path) as the mutant runs.

Without those variables the plugin does nothing, so loading it is always safe.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from typing import Any

import pytest

from agent.contracts import mutants
from agent.contracts.schema import MUTATION_ENV, REPORT_ENV, RESOLVE_ENV

_DETAIL_LINES = 25
_DETAIL_CHARS = 3000

_report: dict[str, Any] = {
    "mutation": None,
    "resolved": {},
    "collected": [],
    "collect_errors": {},
    "results": {},
}
_applied = False


def _write() -> None:
    path = os.environ.get(REPORT_ENV)
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(_report, fh, indent=1)


def _trim(text: str) -> str:
    """The end of a traceback is where the assertion is; keep that part."""
    lines = text.rstrip().splitlines()[-_DETAIL_LINES:]
    return "\n".join(lines)[-_DETAIL_CHARS:]


def _apply_mutation() -> None:
    global _applied
    spec = os.environ.get(MUTATION_ENV)
    if not spec or _applied:
        return
    _applied = True
    data = json.loads(spec)
    try:
        target = mutants.resolve_target(data["target"])
        mutants.apply(target, mutants.parse_mutant(data["mutant"]))
    except mutants.MutantError as exc:
        _report["mutation"] = {"applied": False, "error": str(exc)}
        _write()
        raise pytest.UsageError(f"bosun contracts: mutant not applied: {exc}") from None
    _report["mutation"] = {"applied": True, "error": None}


def _resolve_all() -> None:
    spec = os.environ.get(RESOLVE_ENV)
    if not spec:
        return
    for entry in json.loads(spec):
        key = f"{entry['target']} {entry['mutant']}"
        try:
            target = mutants.resolve_target(entry["target"])
            mutants.build(target, mutants.parse_mutant(entry["mutant"]))
        except mutants.MutantError as exc:
            _report["resolved"][key] = str(exc)
        else:
            _report["resolved"][key] = None


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Earliest hook a -p plugin gets: before conftest.py files import anything."""
    _apply_mutation()


def pytest_configure(config: pytest.Config) -> None:
    _apply_mutation()  # a no-op unless the plugin was registered too late for the hook above
    _resolve_all()


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _report["collect_errors"][report.nodeid or "<session>"] = _trim(report.longreprtext)


def pytest_collection_finish(session: pytest.Session) -> None:
    _report["collected"] = [item.nodeid for item in session.items]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Mark failures the mutant machinery caused, so they never count as a kill."""
    report = yield
    if call.excinfo is not None and call.excinfo.errisinstance(mutants.MutantError):
        report.bosun_mutant_error = True  # type: ignore[attr-defined]
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _report["results"].setdefault(report.nodeid, {"outcome": "passed", "detail": ""})
    if entry["outcome"] in ("failed", "error", "mutant-error"):
        return  # the first failure is the one that explains the rest
    if report.failed:
        if getattr(report, "bosun_mutant_error", False):
            entry["outcome"] = "mutant-error"
        else:
            entry["outcome"] = "failed" if report.when == "call" else "error"
        entry["detail"] = _trim(report.longreprtext)
    elif report.skipped:
        entry["outcome"] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        longrepr = report.longrepr
        entry["detail"] = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr or "")


def pytest_sessionfinish(session: pytest.Session) -> None:
    _write()
