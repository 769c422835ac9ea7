"""`bosun contracts validate | check | new` as functions: exit codes and output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.contracts import load_file
from agent.contracts.cli import check_command, new_command, validate_command

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "contracts"


def test_missing_path_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert validate_command(tmp_path / "nope", json_out=False) == 2
    assert check_command(tmp_path / "nope", mutate=False, json_out=True) == 2
    err = capsys.readouterr().err
    assert err.count("bosun: error: no contracts at") == 2


def test_validate_json_on_a_good_contract(capsys: pytest.CaptureFixture) -> None:
    assert validate_command(FIXTURES / "good", json_out=True) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["contracts"] == ["fixture-good-v1"]
    assert (out["obligations"], out["falsifiers"], out["problems"]) == (3, 5, [])


def test_validate_text_lists_problems_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "x-v1.yaml").write_text("id: x-v1\ntitle: T\nnotes: 1\n", encoding="utf-8")
    assert validate_command(tmp_path, json_out=False) == 1
    out = capsys.readouterr().out
    assert "x-v1.yaml:3: unknown key 'notes'" in out
    assert out.rstrip().endswith("problem(s)")


def test_a_surviving_mutant_fails_check_as_cannot_falsify(capsys: pytest.CaptureFixture) -> None:
    assert check_command(FIXTURES / "survivor", mutate=True, json_out=True) == 1
    out = json.loads(capsys.readouterr().out)
    assert not out["ok"] and out["mutate"] and out["problems"] == []
    for row in out["falsifiers"]:
        assert row["green"] and not row["ok"]
        assert row["mutant"]["status"] == "survived" and not row["mutant"]["killed"]
        assert "cannot falsify" in row["mutant"]["detail"]
    assert {row["mutation"].get("patch") is None for row in out["falsifiers"]} == {True, False}


def test_check_table_without_mutate(capsys: pytest.CaptureFixture) -> None:
    assert check_command(FIXTURES / "good", mutate=False, json_out=False) == 0
    out = capsys.readouterr().out
    assert "FALSIFY-FIXTURE-GOOD-005" in out and "killed?" in out
    assert "ok: 5 falsifier(s), 5 green; 1 pytest run(s)" in out


def test_new_scaffolds_a_contract_that_only_lacks_its_test(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert new_command("tool-budget-v1", tmp_path) == 0
    path = tmp_path / "tool-budget-v1.yaml"
    contract, problems = load_file(path)
    assert problems == [] and contract is not None
    (falsifier,) = contract.falsifiers
    assert falsifier.test.startswith("tests/contracts/test_tool_budget.py::")
    assert contract.obligations[0].id == "OBLIG-TOOL-BUDGET"
    assert "created" in capsys.readouterr().out


def test_new_refuses_to_overwrite_or_a_bad_name(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "taken-v1.yaml").write_text("keep me\n", encoding="utf-8")
    assert new_command("taken-v1", tmp_path) == 1
    assert (tmp_path / "taken-v1.yaml").read_text(encoding="utf-8") == "keep me\n"
    for bad in ("Taken-v1", "no-version", "spaces here-v1", "x-v"):
        assert new_command(bad, tmp_path) == 2
    assert "already exists" in capsys.readouterr().err


def test_the_table_shows_brackets_in_test_ids_and_patches_as_text(
    capsys: pytest.CaptureFixture,
) -> None:
    """A parametrised test id (`[/proc/sys/x]`) or a patch text is data, not rich markup:
    it once ended `contracts check` with a MarkupError."""
    from types import SimpleNamespace as NS

    from agent.contracts.cli import _print_table

    mutation = NS(describe=lambda: 'patch: "[/red]" -> ""')
    falsifier = NS(
        contract="c-v1", obligation="OBLIG-X", id="FALSIFY-X-001", mutation=mutation,
        test="tests/hostile/test_x.py::test_y[/proc/sys/kernel/core_pattern]",
    )  # fmt: skip
    failed = NS(status="failed", detail="[/bold] went red")
    row = NS(falsifier=falsifier, green=failed, mutant=None, mutant_seconds=0.0, ok=False)
    _print_table(NS(rows=[row], mutate=False, problems=[], runs=1, seconds=0.1, ok=False))
    out = capsys.readouterr().out
    assert "test_y[/proc/sys/kernel/core_pattern]" in out and "[/bold] went red" in out
