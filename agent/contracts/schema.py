"""Contract files: loading and schema.

A contract (contracts/*.yaml) states obligations and, for each, falsifiers: pytest nodes
that must fail if the obligation is broken, optionally with a mutation that breaks it on
purpose. Validation is strict because a contract that silently checks nothing is worse
than none: a misspelt `mutaton:` key, a test node that no longer exists or a patch whose
`find` text has drifted would all turn a check into a rubber stamp.

This module reads and checks the files themselves; what only the real tree can show
(test nodes, mutation targets) is `validate`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agent.contracts import mutants, yaml_lines
from agent.contracts.yaml_lines import Reader

CONTRACT_ID_RE = re.compile(r"[a-z0-9-]+-v[0-9]+")
OBLIGATION_ID_RE = re.compile(r"OBLIG-[A-Z0-9]+(-[A-Z0-9]+)*")
FALSIFIER_ID_RE = re.compile(r"FALSIFY-[A-Z0-9]+(-[A-Z0-9]+)*")
TEST_NODE_RE = re.compile(r"[^\s:]+\.py(::[^\s:]+)+")
# How the checker talks to agent/contracts/plugin.py inside its pytest subprocesses.
REPORT_ENV = "BOSUN_CONTRACTS_REPORT"
MUTATION_ENV = "BOSUN_CONTRACTS_MUTATION"
RESOLVE_ENV = "BOSUN_CONTRACTS_RESOLVE"
_TOP_KEYS = ("id", "title", "obligations", "falsifiers")
_OBLIGATION_KEYS = ("id", "statement")
_FALSIFIER_KEYS = ("id", "obligation", "prediction", "test", "mutation")
_PATCH_KEYS = ("file", "find", "replace")


@dataclass(frozen=True)
class Problem:
    """One thing wrong, pointing at the line to fix."""

    file: Path | None
    line: int | None
    message: str

    def where(self) -> str:
        if self.file is None:
            return "contracts"
        return f"{_display(self.file)}:{self.line}" if self.line else _display(self.file)

    def __str__(self) -> str:
        return f"{self.where()}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "file": _display(self.file) if self.file else None,
            "line": self.line,
            "message": self.message,
        }


@dataclass(frozen=True)
class Mutation:
    """Either a named mutant on `target`, or a source `patch`."""

    target: str | None = None
    mutant: str | None = None
    patch: mutants.Patch | None = None

    def key(self) -> tuple[str, ...]:
        """Falsifiers with equal keys share one mutant run."""
        if self.patch:
            return ("patch", self.patch.file, self.patch.find, self.patch.replace)
        return ("named", self.target or "", self.mutant or "")

    def describe(self) -> str:
        if self.patch:
            return f"patch {self.patch.file}"
        return f"{self.target} → {self.mutant}"

    def to_json(self) -> dict[str, Any]:
        if self.patch:
            p = self.patch
            return {"patch": {"file": p.file, "find": p.find, "replace": p.replace}}
        return {"target": self.target, "mutant": self.mutant}


@dataclass(frozen=True)
class Obligation:
    id: str
    statement: str
    line: int


@dataclass(frozen=True)
class Falsifier:
    id: str
    obligation: str
    prediction: str
    test: str
    mutation: Mutation | None
    contract: str
    file: Path
    line: int
    test_line: int
    mutation_line: int

    @property
    def test_file(self) -> str:
        return self.test.split("::", 1)[0]

    def owns(self, nodeid: str) -> bool:
        """Whether a collected pytest item belongs to this falsifier's node.

        A node may name a parametrised function or a class, which pytest expands into
        several items; all of them are this falsifier's.
        """
        return nodeid == self.test or nodeid.startswith((self.test + "[", self.test + "::"))


@dataclass(frozen=True)
class Contract:
    id: str
    title: str
    file: Path
    obligations: tuple[Obligation, ...]
    falsifiers: tuple[Falsifier, ...]


@dataclass
class Validation:
    """What validate found; check uses it to run only what can run."""

    contracts: list[Contract]
    problems: list[Problem]
    root: Path | None = None
    missing_nodes: set[str] = field(default_factory=set)
    bad_mutations: set[str] = field(default_factory=set)

    @property
    def falsifiers(self) -> list[Falsifier]:
        return [f for c in self.contracts for f in c.falsifiers]


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _read_mutation(r: Reader, value: Any, line: int) -> Mutation | None:
    m = r.mapping(value, line, "mutation", ("target", "mutant", "patch"))
    if m is None:
        return None
    if "patch" in m:
        if "target" in m or "mutant" in m:
            r.problem(m.line, "mutation has both patch and target/mutant; pick one")
            return None
        p = r.mapping(m["patch"], m.key_lines["patch"], "patch", _PATCH_KEYS)
        if p is None:
            return None
        file = r.text(p, "file", "patch")
        find = r.text(p, "find", "patch")
        if "replace" not in p or not isinstance(p["replace"], str):
            r.problem(p.key_lines.get("replace", p.line), "patch needs 'replace' (a string)")
            return None
        if file is None or find is None:
            return None
        return Mutation(patch=mutants.Patch(file, find, p["replace"]))
    target = r.text(m, "target", "mutation", mutants.TARGET_RE)
    mutant = r.text(m, "mutant", "mutation")
    if mutant is not None:
        try:
            mutants.parse_mutant(mutant)
        except mutants.MutantError as exc:
            r.problem(m.key_lines["mutant"], str(exc))
            return None
    if target is None or mutant is None:
        return None
    return Mutation(target=target, mutant=mutant)


def load_file(path: Path) -> tuple[Contract | None, list[Problem]]:
    """Parse and schema-check one contract file; never raises for bad content."""
    r = Reader()
    contract = _read_contract(r, path)
    problems = [Problem(path, line, message) for line, message in r.problems]
    return (None if problems else contract), problems


def _read_contract(r: Reader, path: Path) -> Contract | None:
    try:
        data, duplicate_keys = yaml_lines.load(path.read_text(encoding="utf-8"))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        r.problem(mark.line + 1 if mark else None, f"not valid YAML: {exc.problem or exc}")
        return None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        r.problem(None, f"cannot read: {exc}")
        return None
    for line, key in duplicate_keys:
        r.problem(line, f"key {key!r} appears twice in the same mapping")
    top = r.mapping(data, 1, "contract", _TOP_KEYS)
    if top is None:
        return None
    cid = r.text(top, "id", "contract", CONTRACT_ID_RE)
    if cid and cid != path.stem:
        r.problem(top.key_lines["id"], f"contract id {cid!r} must match the file name {path.name}")
    title = r.text(top, "title", "contract")

    obligations = []
    for value, line in r.sequence(top, "obligations", "contract"):
        m = r.mapping(value, line, "obligation", _OBLIGATION_KEYS)
        if m is None:
            continue
        oid = r.text(m, "id", "obligation", OBLIGATION_ID_RE)
        statement = r.text(m, "statement", "obligation")
        if oid and statement:
            obligations.append(Obligation(oid, statement, m.key_lines["id"]))

    falsifiers = []
    for value, line in r.sequence(top, "falsifiers", "contract"):
        m = r.mapping(value, line, "falsifier", _FALSIFIER_KEYS)
        if m is None:
            continue
        fid = r.text(m, "id", "falsifier", FALSIFIER_ID_RE)
        obligation = r.text(m, "obligation", "falsifier", OBLIGATION_ID_RE)
        prediction = r.text(m, "prediction", "falsifier")
        test = r.text(m, "test", "falsifier", TEST_NODE_RE)
        mutation = None
        if "mutation" in m:
            mutation = _read_mutation(r, m["mutation"], m.key_lines["mutation"])
            if mutation is None:
                continue  # already reported; a falsifier without its mutant must not pass
        if fid and obligation and prediction and test:
            falsifiers.append(
                Falsifier(
                    fid,
                    obligation,
                    prediction,
                    test,
                    mutation,
                    cid or path.stem,
                    path,
                    m.key_lines["id"],
                    m.key_lines["test"],
                    m.key_lines.get("mutation", m.line),
                )
            )
    if cid is None or title is None:
        return None
    return Contract(cid, title, path, tuple(obligations), tuple(falsifiers))


def contract_files(path: Path) -> list[Path]:
    """The contract files under `path` (a file or a folder of *.yaml / *.yml)."""
    if path.is_file():
        return [path]
    return sorted([*path.glob("*.yaml"), *path.glob("*.yml")])


def load(path: Path) -> tuple[list[Contract], list[Problem]]:
    """Every contract under `path`, plus the problems of each file and across files."""
    contracts: list[Contract] = []
    problems: list[Problem] = []
    files = contract_files(path)
    if not files:
        problems.append(Problem(path, None, "no contract files (*.yaml) here"))
    for file in files:
        contract, found = load_file(file)
        problems += found
        if contract:
            contracts.append(contract)
    return contracts, problems + cross_file_problems(contracts)


def cross_file_problems(contracts: list[Contract]) -> list[Problem]:
    """Ids are global (people grep for them), and every obligation needs a falsifier."""
    problems: list[Problem] = []
    seen: dict[tuple[str, str], tuple[Path, int]] = {}

    def unique(kind: str, ident: str, file: Path, line: int) -> None:
        first = seen.setdefault((kind, ident), (file, line))
        if first != (file, line):
            where = f"{_display(first[0])}:{first[1]}"
            problems.append(Problem(file, line, f"duplicate {kind} id {ident} (first at {where})"))

    for c in contracts:
        unique("contract", c.id, c.file, 1)
        for o in c.obligations:
            unique("obligation", o.id, c.file, o.line)
        for f in c.falsifiers:
            unique("falsifier", f.id, c.file, f.line)
        own = {o.id for o in c.obligations}
        for f in c.falsifiers:
            if f.obligation not in own:
                known = ", ".join(sorted(own))
                problems.append(
                    Problem(
                        c.file,
                        f.line,
                        f"{f.id} names unknown obligation {f.obligation} "
                        f"(this contract has: {known})",
                    )
                )
        covered = {f.obligation for f in c.falsifiers}
        for o in c.obligations:
            if o.id not in covered:
                problems.append(Problem(c.file, o.line, f"obligation {o.id} has no falsifier"))
    return problems


# --- where the tests are ----------------------------------------------------------------


def find_root(path: Path) -> Path:
    """The folder falsifier test paths are relative to (and pytest runs in).

    In a checkout that is the nearest folder above the contracts with a pyproject.toml.
    An installed wheel keeps contracts in agent/_data and ships no tests; the walk stops
    at site-packages so it can never adopt some unrelated project's pyproject.toml.
    """
    start = (path if path.is_dir() else path.parent).resolve()
    for candidate in [start, *start.parents]:
        if candidate.name in ("site-packages", "dist-packages", "_data"):
            break
        if (candidate / "pyproject.toml").is_file():
            return candidate
    return start.parent
