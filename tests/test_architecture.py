"""The package seams, checked by reading the imports (an AST walk, nothing imported).

`agent` may use `drivers.base`; `drivers` may use nothing of `agent` but `agent.history`;
no two modules import each other, directly or around a loop, whether at module level or
inside a function (a lazy import hides a cycle from Python, not from the design).
Importing `a.b.c` runs `a/__init__` and `a/b/__init__` first, so those count as edges
too, except from inside the package itself.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("agent", "drivers")


def modules(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _named(node: ast.AST, module: str, is_package: bool) -> Iterable[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, base] if base else package)
        # `from a import b`: the module a.b where there is one, else a itself
        yield from (f"{base}.{alias.name}" for alias in node.names)


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules `module` makes Python import, anywhere in the file."""
    targets: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []  # typing only: never imported at run time
    for node in ast.walk(tree):
        for name in _named(node, module, path.name == "__init__.py"):
            while name and name not in known:
                name = name.rpartition(".")[0]
            if not name:
                continue
            parts = name.split(".")
            for k in range(1, len(parts) + 1):
                target = ".".join(parts[:k])
                inside = module == target or module.startswith(target + ".")
                if target in known and (k == len(parts) or not inside):
                    targets.add(target)
    targets.discard(module)
    return targets


def import_graph(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, set[str]]:
    known = modules(root, packages)
    return {name: imports(name, path, known) for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_module_imports_itself_around_a_loop() -> None:
    assert cycles(import_graph(REPO)) == []


def test_drivers_use_nothing_of_agent_but_history() -> None:
    graph = import_graph(REPO)
    reach = {
        (module, target)
        for module, targets in graph.items()
        if module.startswith("drivers")
        for target in targets
        if target.split(".")[0] == "agent" and target not in ("agent", "agent.history")
    }
    assert reach == set()


def test_the_agent_never_probes_a_driver_with_getattr() -> None:
    """What a backend offers is in its DriverInfo; `getattr(driver, …)` would bring
    back the implicit contract."""
    probes = []
    for path in (REPO / "agent").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and node.args
                and "driver" in ast.unparse(node.args[0])
            ):
                probes.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert probes == []


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_walk_finds_loops_direct_lazy_and_through_a_package(tmp_path: Path) -> None:
    """The checks above must be able to fail: planted loops are all found."""
    _tree(
        tmp_path,
        {
            "agent/__init__.py": "",
            "agent/a.py": "from agent.b import x\n",
            "agent/b.py": "def f():\n    from agent import a\n",  # lazy, still a loop
            "agent/tools/__init__.py": "from agent.tools.edit import e\n",
            "agent/tools/edit.py": "from agent.tools.confine import c\n",  # inside: fine
            "agent/tools/confine.py": "",
            "agent/permissions.py": "from agent.tools.confine import c\n",
            "agent/tools/registry.py": "from .. import permissions\n",
            "agent/typed.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from agent.a import x\n",
            "drivers/__init__.py": "",
            "drivers/base.py": "from agent.history import m\nfrom agent import dialect\n",
            "agent/history.py": "",
            "agent/dialect.py": "",
        },
    )
    graph = import_graph(tmp_path)
    assert cycles(graph) == [["agent.a", "agent.b"]]
    assert "agent.tools" in graph["agent.permissions"]  # runs agent/tools/__init__
    assert "agent.tools" not in graph["agent.tools.edit"]
    assert graph["agent.tools.registry"] == {"agent.permissions"}  # relative, resolved
    assert graph["agent.typed"] == set()
    assert graph["drivers.base"] == {"agent", "agent.history", "agent.dialect"}
    _tree(tmp_path, {"agent/tools/registry.py": "from agent.permissions import p\n"})
    _tree(tmp_path, {"agent/tools/__init__.py": "from agent.tools.registry import r\n"})
    assert ["agent.permissions", "agent.tools", "agent.tools.registry"] in cycles(
        import_graph(tmp_path)
    )
