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


def imports(module: str, path: Path, known: dict[str, Path], *, typing: bool = False) -> set[str]:
    """The project modules `module` makes Python import, anywhere in the file; with
    `typing`, also those it names for the type checker only."""
    targets: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not typing and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
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


def import_graph(
    root: Path, packages: Iterable[str] = PACKAGES, *, typing: bool = False
) -> dict[str, set[str]]:
    known = modules(root, packages)
    return {name: imports(name, path, known, typing=typing) for name, path in known.items()}


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


# --- the wings: a request flows down, imports never point up ---------------------------

# Floors from the top: a module may import its own wing or any wing on a lower floor.
# Wings on one floor know nothing of each other. Everything in `agent` outside a wing is
# the shared vocabulary (history, events, errors, session, …), the floor above drivers.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("agent.__main__",),
    ("agent.cli",),
    ("agent.ui",),
    ("agent.run",),
    ("agent.loop",),
    ("agent.protocol", "agent.mcp", "agent.contracts"),
    ("agent.parsing", "agent.tools"),
    ("agent",),  # the shared vocabulary
    ("drivers",),
)
# The faces a request comes in through; none may import another.
FACES = {
    "headless": ("agent.run.headless",),
    "batch": ("agent.run.batch", "agent.run.tasks_file"),
    "chat": ("agent.run.chat", "agent.ui"),
    "acp": ("agent.run.acp",),
    "mcp serve": ("agent.run.mcp_serve", "agent.run.serve_runs"),
}


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def wing(module: str) -> tuple[int, str]:
    """(floor, wing) of a module: the longest wing name it falls under."""
    best = (-1, "")
    for floor, wings in enumerate(FLOORS):
        for name in wings:
            if _within(module, name) and len(name) > len(best[1]):
                best = (floor, name)
    return best


def face(module: str) -> str | None:
    return next(
        (name for name, roots in FACES.items() if any(_within(module, r) for r in roots)), None
    )


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import that points up a floor or across to another wing of the same one."""
    found = []
    for module, targets in graph.items():
        floor, name = wing(module)
        for target in targets:
            t_floor, t_name = wing(target)
            if t_name != name and t_floor <= floor:
                found.append(f"{module} -> {target}")
    return sorted(found)


def face_to_face(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if face(module) and face(target) and face(module) != face(target)
    )


def test_imports_follow_the_flow_type_only_ones_too() -> None:
    graph = import_graph(REPO, typing=True)
    assert upward(graph) == []
    assert cycles(graph) == []


def test_no_face_imports_another() -> None:
    assert face_to_face(import_graph(REPO, typing=True)) == []


def test_the_flow_checks_can_fail(tmp_path: Path) -> None:
    """Planted upward, sideways, type-only and face-to-face imports are all found."""
    _tree(
        tmp_path,
        {
            "agent/__init__.py": "",
            "agent/history.py": "from agent.loop import turn\n",  # vocabulary -> loop
            "agent/loop/__init__.py": "",
            "agent/loop/turn.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from agent.run.chat import C\n",  # type-only, upward
            "agent/protocol/__init__.py": "",
            "agent/protocol/profile.py": "from agent.mcp import hub\n",  # sideways
            "agent/mcp/__init__.py": "",
            "agent/mcp/hub.py": "from agent.tools import t\n",  # down: fine
            "agent/tools/__init__.py": "t = 1\n",
            "agent/run/__init__.py": "",
            "agent/run/chat.py": "from agent.run.headless import check\n",  # face -> face
            "agent/run/headless.py": "from agent.loop import turn\n",
            "agent/ui/__init__.py": "from agent.run import batch\n",
            "agent/run/batch.py": "",
            "drivers/__init__.py": "",
        },
    )
    graph = import_graph(tmp_path, typing=True)
    assert upward(graph) == [
        "agent.history -> agent.loop",
        "agent.history -> agent.loop.turn",
        "agent.loop.turn -> agent.run",
        "agent.loop.turn -> agent.run.chat",
        "agent.protocol.profile -> agent.mcp",
        "agent.protocol.profile -> agent.mcp.hub",
    ]
    assert face_to_face(graph) == [
        "agent.run.chat -> agent.run.headless",
        "agent.ui -> agent.run.batch",
    ]
