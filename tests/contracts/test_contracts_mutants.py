"""The mutant library: each named mutant does what its name says, to every binding."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.contracts import mutants
from tests.fixtures.contracts import fixture_mod
from tests.fixtures.contracts.fixture_mod import shout  # a second binding to the same object

MOD = "tests.fixtures.contracts.fixture_mod"


@pytest.fixture
def mutate() -> Iterator:
    """Apply mutants for one test and always put the original code back."""
    applied: list[mutants.Applied] = []

    def apply(qualname: str, mutant: str) -> mutants.Applied:
        target = mutants.resolve_target(f"{MOD}:{qualname}")
        applied.append(mutants.apply(target, mutants.parse_mutant(mutant)))
        return applied[-1]

    yield apply
    for a in reversed(applied):
        a.restore()


@pytest.mark.parametrize(
    ("spec", "value"),
    [
        ("constant:42", 42),
        ("constant:3.5", 3.5),
        ("constant:true", True),
        ("constant:null", None),
        ('constant:"quoted text"', "quoted text"),
        ("constant:plain words", "plain words"),
        ("constant:''", ""),
        ("constant:[]", []),
    ],
)
def test_constant_value_is_parsed_as_yaml(spec: str, value: object) -> None:
    mutant = mutants.parse_mutant(spec)
    assert (mutant.kind, mutant.value, mutant.spec) == ("constant", value, spec)


@pytest.mark.parametrize("spec", ["indentity", "constant:", "constant:[unclosed", "", "raise:"])
def test_unknown_or_malformed_mutants_are_refused(spec: str) -> None:
    with pytest.raises(mutants.MutantError):
        mutants.parse_mutant(spec)


@pytest.mark.parametrize(
    ("mutant", "expected"),
    [
        ("identity", "hi"),
        ("return_empty", ""),
        ("return_none", None),
        ("return_true", True),
        ("return_false", False),
        ("noop", None),
        ("constant:7", 7),
    ],
)
def test_each_mutant_reaches_the_module_and_a_from_import_binding(
    mutate, mutant: str, expected: object
) -> None:
    mutate("shout", mutant)
    assert fixture_mod.shout("hi") == expected
    assert shout("hi") == expected


def test_raise_throws_an_exception_nothing_else_raises(mutate) -> None:
    mutate("shout", "raise")
    with pytest.raises(mutants.MutantRaised, match="fixture_mod:shout"):
        shout("hi")


def test_restore_puts_the_original_back(mutate) -> None:
    mutate("shout", "return_none").restore()
    assert shout("hi") == "HI!"
    assert not [k for k in vars(fixture_mod) if k.startswith("__bosun_mutant")]


def test_return_empty_follows_the_annotation_or_the_real_result(mutate) -> None:
    mutate("words", "return_empty")
    mutate("unannotated", "return_empty")
    assert fixture_mod.words("a b") == []
    assert fixture_mod.unannotated("ab") == []


def test_signature_defaults_and_keyword_only_arguments_survive(mutate) -> None:
    before = inspect.signature(fixture_mod.join)
    mutate("join", "identity")
    assert inspect.signature(fixture_mod.join) == before
    assert fixture_mod.join("x") == "x"
    with pytest.raises(TypeError):
        fixture_mod.join(first="x")  # still positional-only


def test_methods_skip_self_and_cls_but_not_a_static_argument(mutate) -> None:
    mutate("Greeter.greet", "identity")
    mutate("Greeter.echo", "identity")
    mutate("Greeter.named", "identity")
    greeter = fixture_mod.Greeter("ann")
    assert greeter.greet("bob") == "bob"
    assert fixture_mod.Greeter.echo("x") == "x"
    assert fixture_mod.Greeter.named("cy") == "cy"


def test_functions_with_free_variables_can_be_mutated(mutate) -> None:
    # __repr__ uses super(), so its code has a __class__ cell CPython insists on keeping.
    mutate("Greeter.__repr__", "constant:'mutated'")
    assert repr(fixture_mod.Greeter("ann")) == "mutated"
    add = fixture_mod.make_adder(2)
    target = mutants.Target("closure", add, bound=False)
    applied = mutants.apply(target, mutants.parse_mutant("identity"))
    try:
        assert add(5) == 5
    finally:
        applied.restore()
    assert add(5) == 7


def test_generators_coroutines_and_cached_functions(mutate) -> None:
    mutate("countdown", "noop")
    mutate("double", "return_true")
    mutate("cached_square", "constant:0")
    assert list(fixture_mod.countdown(3)) == []
    assert asyncio.run(fixture_mod.double(2)) is True
    assert fixture_mod.cached_square(4) == 0


def test_a_generator_cannot_return_a_plain_value() -> None:
    target = mutants.resolve_target(f"{MOD}:countdown")
    with pytest.raises(mutants.MutantError, match="generator"):
        mutants.build(target, mutants.parse_mutant("return_none"))


def test_identity_needs_an_argument() -> None:
    target = mutants.resolve_target(f"{MOD}:nothing")
    with pytest.raises(mutants.MutantError, match="takes none"):
        mutants.build(target, mutants.parse_mutant("identity"))


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("no colon here", "not 'module:qualname'"),
        ("tests.fixtures.contracts.nope:f", "cannot import"),
        (f"{MOD}:missing", "has no missing"),
        (f"{MOD}:Greeter.missing", "has no Greeter.missing"),
        (f"{MOD}:LIMIT", "is a int, not a Python function"),
        (f"{MOD}:Greeter", "is a type, not a Python function"),
    ],
)
def test_unresolvable_targets_say_why(spec: str, why: str) -> None:
    with pytest.raises(mutants.MutantError, match=why):
        mutants.resolve_target(spec)


def test_patch_must_find_its_text_exactly_once(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a = 1\nb = 1\nc = 2\n", encoding="utf-8")
    assert mutants.Patch("m.py", "c = 2", "c = 3").problem(tmp_path) is None
    assert "2 times" in (mutants.Patch("m.py", "= 1", "= 0").problem(tmp_path) or "")
    assert "0 times" in (mutants.Patch("m.py", "d = 4", "d").problem(tmp_path) or "")
    assert "changes nothing" in (mutants.Patch("m.py", "c", "c").problem(tmp_path) or "")
    assert "does not exist" in (mutants.Patch("x.py", "c", "d").problem(tmp_path) or "")
    assert "inside the repository" in (mutants.Patch("../m.py", "c", "d").problem(tmp_path) or "")
    mutants.Patch("m.py", "c = 2", "c = 3").apply(tmp_path)
    assert (tmp_path / "m.py").read_text(encoding="utf-8") == "a = 1\nb = 1\nc = 3\n"
