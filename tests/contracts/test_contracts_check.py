"""Validation against the real tree and falsifier / mutant runs, on fixture contracts.

Every check here starts pytest subprocesses, so the fixtures are tiny and each test packs
several cases into one contract (one collection, one baseline run).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.contracts import Falsifier, Mutation, load_file, validate
from agent.contracts.check import check, copy_env, patched_copy
from agent.contracts.mutants import Patch

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "contracts"
PROBE = "tests/fixtures/contracts/probe_fixture.py"
MOD = "tests.fixtures.contracts.fixture_mod"
FIXTURE_MOD = "tests/fixtures/contracts/fixture_mod.py"


def contract(tmp_path: Path, name: str, falsifiers: list[tuple[str, str]]) -> Path:
    """A one-obligation contract whose falsifiers are (test, mutation-yaml) pairs."""
    lines = [f"id: {name}", "title: T", "obligations:", "  - id: OBLIG-T", "    statement: S"]
    lines.append("falsifiers:")
    for i, (test, mutation) in enumerate(falsifiers, 1):
        lines += [
            f"  - id: FALSIFY-T-{i:03d}",
            "    obligation: OBLIG-T",
            "    prediction: P",
            f"    test: {test}",
        ]
        if mutation:
            lines.append(f"    mutation: {mutation}")
    path = tmp_path / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def falsifiers_of(path: Path) -> list[Falsifier]:
    loaded, problems = load_file(path)
    assert loaded is not None, problems
    return list(loaded.falsifiers)


def test_validate_finds_missing_nodes_and_unresolvable_mutations(tmp_path: Path) -> None:
    path = contract(
        tmp_path,
        "env-v1",
        [
            (f"{PROBE}::test_shout_is_loud", f'{{target: "{MOD}:shout", mutant: identity}}'),
            ("tests/fixtures/contracts/probe_nope.py::test_x", ""),
            (f"{PROBE}::test_not_there", ""),
            (f"{PROBE}::test_parity", '{target: "tests.fixtures.contracts.nope:f", mutant: noop}'),
            (f"{PROBE}::test_parity", f'{{target: "{MOD}:missing", mutant: noop}}'),
            (f"{PROBE}::test_parity", f'{{target: "{MOD}:LIMIT", mutant: noop}}'),
            (f"{PROBE}::test_parity", f'{{target: "{MOD}:nothing", mutant: identity}}'),
            (f"{PROBE}::test_parity", "{patch: {file: agent/nope.py, find: a, replace: b}}"),
            (
                f"{PROBE}::test_parity",
                f"{{patch: {{file: {FIXTURE_MOD}, find: return, replace: x}}}}",
            ),
            (f"{PROBE}::test_even_numbers", ""),  # parametrised: the node names 3 items
        ],
    )
    v = validate(path, root=REPO)
    fs = falsifiers_of(path)
    found = {(p.line, p.message) for p in v.problems}

    def has(line: int, text: str) -> bool:
        return any(ln == line and text in msg for ln, msg in found)

    assert has(fs[1].test_line, "test file tests/fixtures/contracts/probe_nope.py does not exist")
    assert has(fs[2].test_line, "::test_not_there is not collected by pytest")
    assert has(fs[3].mutation_line, "cannot import tests.fixtures.contracts.nope")
    assert has(fs[4].mutation_line, "has no missing")
    assert has(fs[5].mutation_line, "is a int, not a Python function")
    assert has(fs[6].mutation_line, "identity needs an argument")
    assert has(fs[7].mutation_line, "patch file agent/nope.py does not exist")
    assert has(fs[8].mutation_line, "occurs")
    assert len(found) == 8, found  # nothing about falsifiers 1 and 10
    assert v.missing_nodes == {"FALSIFY-T-002", "FALSIFY-T-003"}


def test_validate_without_a_tests_folder_says_so(tmp_path: Path) -> None:
    path = contract(tmp_path, "wheel-v1", [(f"{PROBE}::test_parity", "")])
    v = validate(path, root=tmp_path)
    assert len(v.problems) == 1
    assert "no tests/ folder" in v.problems[0].message
    assert "source checkout" in v.problems[0].message


def test_every_mutant_of_the_good_fixture_is_killed() -> None:
    result = check(FIXTURES / "good", mutate=True, jobs=2)
    assert result.problems == []
    assert [(r.green.status, r.mutant and r.mutant.status) for r in result.rows] == [
        ("passed", "killed")
    ] * 5
    # one baseline run, then one per distinct mutation: 003 and 005 share their patch
    assert result.runs == 5
    assert result.ok
    patch_kill = result.rows[2].mutant
    assert patch_kill is not None and "assert" in patch_kill.detail


def test_statuses_other_than_green_fail_the_check(tmp_path: Path) -> None:
    path = contract(
        tmp_path,
        "mixed-v1",
        [
            (f"{PROBE}::test_is_red", f'{{target: "{MOD}:shout", mutant: noop}}'),
            (f"{PROBE}::test_always_skips", ""),
            (f"{PROBE}::test_gone", ""),
            # a mutant that breaks the import proves nothing about the falsifier
            (
                f"{PROBE}::test_parity",
                f"{{patch: {{file: {FIXTURE_MOD}, find: 'def is_even(', "
                f"replace: 'def is_even(('}}}}",
            ),
        ],
    )
    result = check(path, mutate=True, root=REPO)
    rows = {r.falsifier.id: r for r in result.rows}
    assert rows["FALSIFY-T-001"].green.status == "failed"
    assert rows["FALSIFY-T-001"].mutant is not None
    assert rows["FALSIFY-T-001"].mutant.status == "not-run"
    assert rows["FALSIFY-T-002"].green.status == "skipped"
    assert "proves nothing" in rows["FALSIFY-T-002"].green.detail
    assert rows["FALSIFY-T-003"].green.status == "not-run"
    broken = rows["FALSIFY-T-004"]
    assert broken.green.status == "passed"
    assert broken.mutant is not None and broken.mutant.status == "error"
    assert "broke collection" in broken.mutant.detail
    assert result.runs == 2 and not result.ok


def test_a_patched_copy_is_what_the_tests_import(tmp_path: Path) -> None:
    """The editable install's .pth must not win over the copy: PYTHONPATH goes first. The
    copy stands alone: the test data comes with it, and nothing of the checkout's
    surroundings is linked in beside it."""
    mutation = Mutation(patch=Patch(FIXTURE_MOD, "return n % 2 == 0", "return n % 2 == 1"))
    with patched_copy(REPO, mutation) as copy:
        assert copy.name == REPO.name
        assert [p.name for p in copy.parent.iterdir()] == [REPO.name]
        assert (copy / "tests" / "data" / "chat-templates" / "GLM-4.6.jinja").is_file()
        assert (copy / "tests" / "data" / "tool-calls" / "llama.cpp-cases.jsonl").is_file()
        assert not (copy / ".venv").exists()
        assert "n % 2 == 0" in (REPO / FIXTURE_MOD).read_text(encoding="utf-8")
        probe = f"import {MOD} as m; print(m.is_even(3), m.__file__)"
        out = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=tmp_path,  # not the copy: PYTHONPATH alone must put it first
            env={**os.environ, **copy_env(copy)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert out == ["True", str(copy / FIXTURE_MOD)]
        copy_parent = copy.parent
    assert not copy_parent.exists()


@pytest.mark.slow
def test_toolcall_retention_contract_end_to_end() -> None:
    result = check(REPO / "contracts" / "toolcall-retention-v1.yaml", mutate=True)
    assert result.problems == []
    assert all(r.green.status == "passed" for r in result.rows)
    assert all(r.mutant and r.mutant.status == "killed" for r in result.rows)
    assert result.ok
