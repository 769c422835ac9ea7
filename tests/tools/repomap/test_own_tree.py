"""On bosun's own tree: every top-level function and class of agent/ is in
`bosun map --json`, with its line (Python's ast is the reference)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_every_top_level_definition_of_agent_is_in_the_map(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agent", "map", str(REPO), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    mapped = {(d["path"], d["name"], d["line"]) for d in data["definitions"]}
    expected = set()
    for path in sorted((REPO / "agent").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(REPO).as_posix()
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                # a decorated definition's name is on its `def`/`class` line
                line = node.lineno
                expected.add((rel, node.name, line))
    assert len(expected) > 500
    missing = expected - mapped
    assert not missing, sorted(missing)[:20]
    kinds = {d["kind"] for d in data["definitions"] if d["path"].startswith("agent/")}
    assert {"class", "function", "method", "constant"} <= kinds
