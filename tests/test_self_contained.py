"""The repository stands alone: nothing in it reads, or sends its reader to, a file outside.

A fresh clone has the repository and nothing beside it, so every test, bench and source
file must find what it reads inside the checkout (the public test data lives in
tests/data, with its sources and licences in tests/data/README.md).

Two static checks, each run on the real tree and on a planted one that must be caught:

- code: a path built from `__file__` (`.parent`, `.parents[N]`, `os.path.dirname`, a
  `".."` joined on) must never climb above the repository root, and no path literal
  may name a folder beside the checkout;
- text: no comment, docstring or document cites a file outside the repository (the
  design notes or corpus that sat next to it during development).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

REPO = Path(__file__).resolve().parents[1]
SELF = PurePosixPath("tests/test_self_contained.py")
CODE_DIRS = ("agent", "drivers", "tests", "bench")
TEXT_DIRS = (*CODE_DIRS, "contracts", "templates")

# Path literals in code that reach beside the checkout, whatever they are joined to.
OUTSIDE_PATHS = re.compile(
    r"""\.\./shared\b|/work/shared\b|['"]\.\.['"]\s*,\s*['"]shared['"]"""
    r"|\b\w*(?:repo|root)\w*\.parents?\b",
    re.IGNORECASE,
)
# Citations, in any text, of a file that is not in the repository.
OUTSIDE_CITATIONS = re.compile(
    r"\.\./shared\b|\bshared/corpus\b|/work/shared\b|\b(?:LAYOUT|DESIGN|STYLE)\.md\b"
    r"|\bDESIGN rule\b"
)


def files(root: Path, dirs: tuple[str, ...], suffix: str = "") -> Iterator[Path]:
    """Every file under `dirs`, skipping caches and other dot-folders (tool state)."""
    for top in dirs:
        for folder, subdirs, names in os.walk(root / top):
            subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d != "__pycache__")
            for name in sorted(names):
                if name.endswith(suffix):
                    yield Path(folder) / name


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data:
        return None
    return data.decode("utf-8", errors="replace")


# --- code ----------------------------------------------------------------------------------


class _Climb:
    """How far above a file a path expression built from its `__file__` goes.

    A level is a height above the file's own path: 1 is its folder, `depth` (the number
    of parts of its path inside the repository) the repository root. An expression not
    built from `__file__` has no level. `peak` is the highest level reached on the way
    (`"../x"` goes up before it comes down).
    """

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.names: dict[str, int] = {}

    def level(self, node: ast.AST) -> tuple[int, int] | None:
        match node:
            case ast.Name(id="__file__"):
                return 0, 0
            case ast.Name(id=name) if name in self.names:
                return self.names[name], self.names[name]
            case ast.Attribute(value=inner, attr="parent"):
                return self._up(inner, 1)
            case ast.Subscript(
                value=ast.Attribute(value=inner, attr="parents"),
                slice=ast.Constant(value=int() as n),
            ):
                return self._up(inner, n + 1)
            case ast.Call(func=ast.Attribute(value=inner, attr="resolve" | "absolute")):
                return self.level(inner)
            case ast.Call(func=ast.Name(id="Path" | "PurePath" | "PurePosixPath"), args=[arg]):
                return self.level(arg)
            case ast.Call(func=ast.Attribute(attr="abspath" | "realpath" | "normpath"), args=[a]):
                return self.level(a)
            case ast.Call(func=ast.Attribute(attr="dirname"), args=[arg]):
                return self._up(arg, 1)
            case ast.BinOp(left=left, op=ast.Div(), right=right):
                return self._join(left, [right])
            case ast.Call(func=ast.Attribute(value=inner, attr="joinpath"), args=args):
                return self._join(inner, args)
            case ast.Call(func=ast.Attribute(attr="join"), args=[first, *rest]):
                return self._join(first, rest)  # os.path.join
        return None

    def _up(self, inner: ast.AST, steps: int) -> tuple[int, int] | None:
        got = self.level(inner)
        if got is None:
            return None
        level, peak = got
        return level + steps, max(peak, level + steps)

    def _join(self, base: ast.AST, parts: list[ast.AST]) -> tuple[int, int] | None:
        got = self.level(base)
        if got is None:
            return None
        level, peak = got
        for part in parts:
            if not isinstance(part, ast.Constant) or not isinstance(part.value, str):
                return level - 1, peak  # a name of some file further down
            for step in part.value.split("/"):
                if step == "..":
                    level += 1
                    peak = max(peak, level)
                elif step not in ("", "."):
                    level -= 1
        return level, peak

    def escapes(self, tree: ast.Module) -> list[int]:
        """Line numbers of path expressions that climb above the repository root."""
        assigns = sorted(
            (n for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.AnnAssign)),
            key=lambda n: n.lineno,
        )
        for node in assigns:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            got = self.level(node.value) if node.value is not None else None
            for target in targets:
                if isinstance(target, ast.Name) and got is not None:
                    self.names[target.id] = got[0]
        lines = set()
        for node in ast.walk(tree):
            got = self.level(node) if isinstance(node, ast.expr) else None
            if got is not None and got[1] > self.depth:
                lines.add(node.lineno)
        return sorted(lines)


def code_escapes(root: Path) -> list[str]:
    """`path:line: source` for every line of Python that reads outside `root`."""
    found = []
    for path in files(root, CODE_DIRS, ".py"):
        rel = PurePosixPath(path.relative_to(root).as_posix())
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        try:
            bad = set(_Climb(len(rel.parts)).escapes(ast.parse(source, str(rel))))
        except SyntaxError:  # task material (bench/eval workspaces), never run from here
            bad = set()
        if rel != SELF:  # its own patterns and planted examples are quoted here
            bad |= {i for i, line in enumerate(lines, 1) if OUTSIDE_PATHS.search(line)}
        found += [f"{rel}:{i}: {lines[i - 1].strip()}" for i in sorted(bad)]
    return found


def outside_citations(root: Path) -> list[str]:
    """`path:line: text` for every line of text that cites a file outside `root`."""
    found = []
    for path in files(root, TEXT_DIRS):
        rel = PurePosixPath(path.relative_to(root).as_posix())
        text = _text(path)
        if text is None or rel == SELF:
            continue
        for i, line in enumerate(text.splitlines(), 1):
            if OUTSIDE_CITATIONS.search(line):
                found.append(f"{rel}:{i}: {line.strip()}")
    return found


# --- the real tree ----------------------------------------------------------------------


def test_no_code_reads_outside_the_repository() -> None:
    assert code_escapes(REPO) == []


def test_nothing_cites_a_file_outside_the_repository() -> None:
    assert outside_citations(REPO) == []


def test_the_public_test_data_is_in_the_repository_and_accounted_for() -> None:
    """The third-party files ship in full, each named (source, licence) in the README."""
    data = REPO / "tests" / "data"
    readme = (data / "README.md").read_text(encoding="utf-8")
    templates = sorted((data / "chat-templates").iterdir())
    cases = sorted((data / "tool-calls").iterdir())
    assert len(templates) == 70 and all(p.suffix == ".jinja" for p in templates)
    assert [p.name for p in cases] == ["llama.cpp-cases.jsonl"]
    for path in templates + cases:
        assert path.name in readme, f"{path.name} is not in tests/data/README.md"


# --- the checks can fail -------------------------------------------------------------------

SHARED = "shared"  # spelled apart so that this file does not cite it
PLANTED = {
    "tests/test_planted.py": f'''
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
FINE = HERE.parent / "data" / "x.txt"
UP = Path(__file__).resolve().parents[2] / "corpus"
CLIMB = Path(__file__).parent.parent.parent
SIDE = REPO.parent / "{SHARED}" / "corpus"
DOTTED = REPO / "../{SHARED}/corpus"
BACK = DATA / ".." / ".." / ".." / "other"
JOINED = os.path.join(os.path.dirname(__file__), "..", "..", "{SHARED}")
ABS = Path("/work/{SHARED}/corpus")
''',
    "agent/fine.py": '"""Reads templates/x.jinja and tests/data/README.md only."""\n',
    "contracts/c-v1.yaml": f"# Judged on ../{SHARED}/corpus/tool-calls.\nid: c-v1\n",
    "templates/x.jinja": "{# see DESIGN" + ".md #}\n",
}


def test_the_scanners_flag_a_planted_escape(tmp_path: Path) -> None:
    for rel, text in PLANTED.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text.lstrip("\n"), encoding="utf-8")
    flagged = [line.split(": ", 1)[0] for line in code_escapes(tmp_path)]
    # UP, CLIMB, SIDE, DOTTED, BACK, JOINED, ABS; never HERE, REPO, DATA or FINE
    assert flagged == [f"tests/test_planted.py:{n}" for n in (8, 9, 10, 11, 12, 13, 14)]
    cited = [line.split(": ", 1)[0] for line in outside_citations(tmp_path)]
    # the planted code cites what it reads, too (DOTTED, ABS)
    assert cited == [
        "tests/test_planted.py:11",
        "tests/test_planted.py:14",
        "contracts/c-v1.yaml:1",
        "templates/x.jinja:1",
    ]
