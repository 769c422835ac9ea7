"""`bosun contracts validate | check | new`: the functions agent/cli/main.py calls.

Each returns the exit code (0 ok, 1 a contract problem or a failing falsifier, 2 a usage
error) so cli.py stays a thin typer layer. Results go to stdout (a table or JSON, which CI
reads); usage errors to stderr in bosun's one-line form.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from agent.contracts.schema import CONTRACT_ID_RE, Problem

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

SKELETON = """\
id: {name}
title: TODO one line naming the behaviour this contract promises
obligations:
  - id: OBLIG-{upper}
    statement: >-
      TODO what must always hold, in words a reviewer can check against the code.
falsifiers:
  - id: FALSIFY-{upper}-001
    obligation: OBLIG-{upper}
    prediction: TODO what the test observes when the obligation holds
    test: tests/contracts/test_{snake}.py::test_TODO
    # The mutation breaks the obligation on purpose; `check --mutate` requires the test
    # to fail under it. A named mutant (identity, return_empty, return_none, return_true,
    # return_false, raise, noop, constant:VALUE) on a function:
    mutation: {{target: "agent.module:function", mutant: identity}}
    # or a source patch, when the bug is not a whole-function one:
    # mutation:
    #   patch: {{file: agent/module.py, find: 'exact text, once', replace: 'broken text'}}
"""


def _usage(message: str) -> int:
    sys.stderr.write(f"bosun: error: {message}\n")
    return EXIT_USAGE


def _contracts_path(path: Path | None) -> Path | None:
    if path is not None:
        return path
    from agent.resources import data_dir

    try:
        return data_dir("contracts")
    except FileNotFoundError:
        return None


def _print_problems(problems: list[Problem]) -> None:
    for problem in problems:
        sys.stdout.write(f"{problem}\n")


def validate_command(path: Path | None, json_out: bool = False) -> int:
    """Check contracts without running them: schema, ids, test nodes, mutation targets."""
    from agent.contracts import validate

    where = _contracts_path(path)
    if where is None or not where.exists():
        return _usage(f"no contracts at {where or 'contracts/'} (give a folder or a .yaml file)")
    v = validate(where)
    falsifiers = v.falsifiers
    if json_out:
        out = {
            "ok": not v.problems,
            "root": str(v.root),
            "contracts": [c.id for c in v.contracts],
            "obligations": sum(len(c.obligations) for c in v.contracts),
            "falsifiers": len(falsifiers),
            "problems": [p.to_json() for p in v.problems],
        }
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        _print_problems(v.problems)
        obligations = sum(len(c.obligations) for c in v.contracts)
        verdict = f"{len(v.problems)} problem(s)" if v.problems else "valid"
        sys.stdout.write(
            f"{len(v.contracts)} contract(s), {obligations} obligation(s), "
            f"{len(falsifiers)} falsifier(s): {verdict}\n"
        )
    return EXIT_FAIL if v.problems else EXIT_OK


def check_command(
    path: Path | None, mutate: bool = False, json_out: bool = False, jobs: int | None = None
) -> int:
    """Run every falsifier; with `mutate`, prove each one fails under its mutant."""
    from agent.contracts.check import check

    where = _contracts_path(path)
    if where is None or not where.exists():
        return _usage(f"no contracts at {where or 'contracts/'} (give a folder or a .yaml file)")
    if jobs is not None and jobs < 1:
        return _usage("--jobs must be at least 1")
    result = check(where, mutate=mutate, jobs=jobs)
    if json_out:
        out: dict[str, Any] = {
            "ok": result.ok,
            "mutate": mutate,
            "root": str(result.validation.root),
            "seconds": round(result.seconds, 2),
            "pytest_runs": result.runs,
            "problems": [p.to_json() for p in result.problems],
            "falsifiers": [row.to_json() for row in result.rows],
        }
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        _print_table(result)
    return EXIT_OK if result.ok else EXIT_FAIL


_GREEN = {"passed": "✓", "failed": "✗ failed", "error": "✗ error", "skipped": "✗ skipped"}
_KILLED = {
    "killed": "✓ killed",
    "survived": "✗ cannot falsify",
    "error": "✗ mutant error",
    "skipped": "✗ skipped",
    "not-run": "· not run",
}


WIDE_TABLE = 160  # columns the full table needs


def _print_table(result: Any) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    console = Console(width=None if sys.stdout.isatty() else 200, highlight=False)
    # A terminal narrower than the full table gets the columns that say whether the
    # promise holds (the falsifier's id names its contract); --json has everything.
    wide = console.width >= WIDE_TABLE
    columns = ("contract", "obligation", "falsifier", "green?", "mutant", "killed?", "s")
    if not wide:
        columns = ("falsifier", "green?", "killed?", "s")
    table = Table(box=None, pad_edge=False)
    for column in columns:
        table.add_column(column, no_wrap=column != "mutant")
    for row in result.rows:
        f = row.falsifier
        killed = ""
        if result.mutate:
            killed = _KILLED.get(row.mutant.status, row.mutant.status) if row.mutant else "—"
        cells = {
            "contract": f.contract,
            "obligation": f.obligation,
            "falsifier": f.id,
            "green?": _GREEN.get(row.green.status, "✗ " + row.green.status),
            "mutant": f.mutation.describe() if f.mutation else "—",
            "killed?": killed,
            "s": f"{row.mutant_seconds:.1f}" if row.mutant else "",
        }
        # test ids and patches hold brackets ("[/proc/...]"): shown as text, never markup
        table.add_row(*(Text(cells[c]) for c in columns), style=None if row.ok else "red")
    console.print(table)
    for row in result.rows:
        if row.ok:
            continue
        outcome = row.mutant if row.green.status == "passed" and row.mutant else row.green
        where = escape(f"{row.falsifier.id}")
        console.print(f"\n[bold red]{where}[/] ({escape(row.falsifier.test)}): {outcome.status}")
        console.print(outcome.detail, markup=False)
    if result.problems:
        console.print("\n[bold red]problems[/]")
        for problem in result.problems:
            console.print(str(problem), markup=False)
    rows = result.rows
    green = sum(row.green.status == "passed" for row in rows)
    summary = f"{len(rows)} falsifier(s), {green} green"
    if result.mutate:
        declared = [row for row in rows if row.mutant]
        killed = sum(row.mutant.status == "killed" for row in declared)
        summary += f", {killed}/{len(declared)} mutant(s) killed"
    summary += f"; {result.runs} pytest run(s) in {result.seconds:.1f}s"
    console.print(("[green]ok[/]: " if result.ok else "[red]FAILED[/]: ") + summary)


def new_command(name: str, directory: Path | None = None) -> int:
    """Scaffold contracts/NAME.yaml; the TODOs keep it failing validation until filled in."""
    if not CONTRACT_ID_RE.fullmatch(name):
        return _usage(f"contract name {name!r} must look like 'tool-retention-v1' ([a-z0-9-]+-vN)")
    folder = directory or _contracts_path(None)
    if folder is None or "_data" in folder.parts:
        return _usage("no contracts/ folder of a source checkout here; pass one explicitly")
    target = folder / f"{name}.yaml"
    if target.exists():
        sys.stderr.write(f"bosun: error: {target} already exists; not overwriting it\n")
        return EXIT_FAIL
    base = re.sub(r"-v[0-9]+$", "", name)
    text = SKELETON.format(name=name, upper=base.upper(), snake=base.replace("-", "_"))
    folder.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    sys.stdout.write(f"created {target}; fill in the TODOs, then: bosun contracts validate\n")
    return EXIT_OK
