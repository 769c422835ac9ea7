"""Validation against the real tree: every falsifier's test node is collected and
every mutation target resolves, by the same code and in the same environment as the
mutant runs (a drifted target would turn a check into a rubber stamp)."""

from __future__ import annotations

from pathlib import Path

from agent.contracts.pytest_runs import collect
from agent.contracts.schema import Problem, Validation, find_root, load


def environment_problems(validation: Validation, root: Path) -> None:
    """Problems only the real tree can show: files, test nodes, mutation targets."""
    v, falsifiers = validation, validation.falsifiers
    if not falsifiers:
        return
    if not (root / "tests").is_dir() and not any(
        (root / f.test_file).is_file() for f in falsifiers
    ):
        v.problems.append(
            Problem(
                None,
                None,
                f"no tests/ folder at {root}: this looks like an installed copy "
                "without its tests, so falsifiers cannot be checked here; run this in a "
                "source checkout",
            )
        )
        v.missing_nodes |= {f.id for f in falsifiers}
        return
    present = []
    for f in falsifiers:
        if (root / f.test_file).is_file():
            present.append(f)
        else:
            v.missing_nodes.add(f.id)
            v.problems.append(
                Problem(f.file, f.test_line, f"test file {f.test_file} does not exist")
            )
        if f.mutation and f.mutation.patch:
            problem = f.mutation.patch.problem(root)
            if problem:
                v.bad_mutations.add(f.id)
                v.problems.append(Problem(f.file, f.mutation_line, problem))
    named = [f for f in falsifiers if f.mutation and not f.mutation.patch]
    targets = [
        {"target": f.mutation.target, "mutant": f.mutation.mutant} for f in named if f.mutation
    ]
    files = sorted({f.test_file for f in present})
    collected = collect(root, files, targets)
    if collected.error:
        v.problems.append(Problem(None, None, collected.error))
        v.missing_nodes |= {f.id for f in present}
        return
    for f in present:
        if not any(f.owns(node) for node in collected.nodes):
            v.missing_nodes.add(f.id)
            error = collected.file_errors.get(f.test_file)
            why = f"does not import: {_last_line(error)}" if error else "is not collected by pytest"
            v.problems.append(Problem(f.file, f.test_line, f"test {f.test} {why}"))
    for f in named:
        assert f.mutation is not None
        error = collected.resolved.get(f"{f.mutation.target} {f.mutation.mutant}", "not resolved")
        if error:
            v.bad_mutations.add(f.id)
            v.problems.append(Problem(f.file, f.mutation_line, f"mutation target: {error}"))


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "collection error"


def validate(path: Path, root: Path | None = None) -> Validation:
    """Schema, cross-file rules, and (against `root`) test nodes and mutation targets."""
    contracts, problems = load(path)
    validation = Validation(contracts, problems, root or find_root(path))
    assert validation.root is not None
    environment_problems(validation, validation.root)
    return validation
