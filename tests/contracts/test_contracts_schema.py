"""Contract files: schema errors point at file:line, and cross-file rules hold."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agent.contracts import find_root, load, load_file

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "contracts"

VALID = """\
id: {id}
title: A contract
obligations:
  - id: OBLIG-{tag}
    statement: Something holds.
falsifiers:
  - id: FALSIFY-{tag}-001
    obligation: OBLIG-{tag}
    prediction: the test sees it hold
    test: tests/fixtures/contracts/probe_fixture.py::test_shout_is_loud
    mutation: {{target: "tests.fixtures.contracts.fixture_mod:shout", mutant: identity}}
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def messages(path: Path) -> list[str]:
    _, problems = load_file(path)
    return [f"{p.line}: {p.message}" for p in problems]


def test_the_fixture_contracts_and_a_valid_file_load_cleanly(tmp_path: Path) -> None:
    for folder in ("good", "survivor"):
        contracts, problems = load(FIXTURES / folder)
        assert problems == [] and len(contracts) == 1
    path = write(tmp_path, "ok-v1.yaml", VALID.format(id="ok-v1", tag="OK"))
    contract, problems = load_file(path)
    assert problems == [] and contract is not None
    (falsifier,) = contract.falsifiers
    assert (falsifier.line, falsifier.test_line, falsifier.mutation_line) == (7, 10, 11)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id: x-v1\ntitle: [unclosed\n", "3: not valid YAML"),
        ("- just\n- a list\n", "1: contract must be a mapping, not list"),
        ("id: Bad_Id\n", "1: contract 'id' is 'Bad_Id'; expected [a-z0-9-]+-v[0-9]+"),
        ("id: other-v1\n", "1: contract id 'other-v1' must match the file name"),
        ("id: t-v1\ntitle: ''\n", "2: contract 'title' must be a non-empty string"),
        ("id: t-v1\ntitle: T\nobligations: []\n", "3: 'obligations' must be a non-empty list"),
        ("id: t-v1\ntitle: T\nnotes: x\n", "3: unknown key 'notes' in contract"),
        ("id: t-v1\nid: t-v1\n", "2: key 'id' appears twice in the same mapping"),
    ],
)
def test_top_level_errors_carry_the_line(tmp_path: Path, text: str, expected: str) -> None:
    found = messages(write(tmp_path, "t-v1.yaml", text))
    assert any(m.startswith(expected) for m in found), found


FALSIFIER_HEAD = """\
id: t-v1
title: T
obligations:
  - id: OBLIG-T
    statement: S
falsifiers:
  - id: FALSIFY-T-001
    obligation: OBLIG-T
    prediction: P
"""


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        # line 10 is the first line after FALSIFIER_HEAD
        (
            "    test: t.py::x\n    mutaton: {target: 'a:b', mutant: noop}\n",
            "11: unknown key 'mutaton'",
        ),
        ("    mutation: {target: 'a:b', mutant: noop}\n", "7: falsifier is missing 'test'"),
        ("    test: tests/x.py\n", "10: falsifier 'test' is 'tests/x.py'; expected"),
        (
            "    test: t.py::x\n    mutation: {target: 'a.b', mutant: noop}\n",
            "11: mutation 'target'",
        ),
        (
            "    test: t.py::x\n    mutation: {target: 'a:b', mutant: flip}\n",
            "11: unknown mutant 'flip'",
        ),
        ("    test: t.py::x\n    mutation: noop\n", "11: mutation must be a mapping, not str"),
        (
            "    test: t.py::x\n    mutation:\n      patch: {file: a.py, find: x}\n",
            "12: patch needs 'replace'",
        ),
        (
            "    test: t.py::x\n    mutation:\n      target: 'a:b'\n      patch: {file: a.py}\n",
            "12: mutation has both patch and target/mutant",
        ),
        ("    test: 3\n", "10: falsifier 'test' must be a non-empty string, not int"),
    ],
)
def test_falsifier_errors_carry_the_line(tmp_path: Path, tail: str, expected: str) -> None:
    found = messages(write(tmp_path, "t-v1.yaml", FALSIFIER_HEAD + tail))
    assert any(m.startswith(expected) for m in found), found


def test_problems_print_as_file_colon_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "t-v1.yaml", "id: t-v1\ntitle: T\nnotes: x\n")
    _, problems = load_file(Path("t-v1.yaml"))
    assert str(problems[0]).startswith("t-v1.yaml:3: unknown key 'notes'")


def test_duplicate_ids_across_files_point_at_the_first(tmp_path: Path) -> None:
    write(tmp_path, "a-v1.yaml", VALID.format(id="a-v1", tag="SAME"))
    write(tmp_path, "b-v1.yaml", VALID.format(id="b-v1", tag="SAME"))
    _, problems = load(tmp_path)
    found = sorted(str(p.message) for p in problems)
    assert len(found) == 2
    assert found[0].startswith("duplicate falsifier id FALSIFY-SAME-001 (first at ")
    assert found[0].endswith("a-v1.yaml:7)")
    assert found[1].startswith("duplicate obligation id OBLIG-SAME (first at ")
    assert all(p.file and p.file.name == "b-v1.yaml" for p in problems)


def test_obligation_without_falsifier_and_unknown_obligation(tmp_path: Path) -> None:
    text = VALID.format(id="c-v1", tag="C").replace("obligation: OBLIG-C", "obligation: OBLIG-TYPO")
    write(tmp_path, "c-v1.yaml", text)
    _, problems = load(tmp_path)
    found = {(p.line, p.message.split(" (")[0]) for p in problems}
    assert found == {
        (7, "FALSIFY-C-001 names unknown obligation OBLIG-TYPO"),
        (4, "obligation OBLIG-C has no falsifier"),
    }


def test_an_empty_folder_is_a_problem_not_a_pass(tmp_path: Path) -> None:
    contracts, problems = load(tmp_path)
    assert contracts == [] and "no contract files" in problems[0].message


def test_root_is_the_checkout_and_never_past_site_packages(tmp_path: Path) -> None:
    assert find_root(FIXTURES / "good" / "fixture-good-v1.yaml") == REPO
    assert find_root(REPO / "contracts") == REPO
    installed = tmp_path / "site-packages" / "agent" / "_data" / "contracts"
    installed.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    assert find_root(installed) == installed.parent
