"""outline and find_symbol: through the registry, confined, bounded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent.history import ToolCall
from agent.tools import ToolContext, default_registry
from tests.tools.conftest import RunTool

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def run_tool(workspace: Path) -> RunTool:
    """The registry with the symbol tools added, as the map's sessions have it."""
    registry = default_registry(changes=("+outline", "+find_symbol"))
    return lambda tool_name, **args: registry.execute(
        ToolCall("t1", tool_name, dict(args)), ToolContext(workspace)
    )


def _copy(workspace: Path) -> None:
    for f in FIXTURES.iterdir():
        shutil.copy(f, workspace / f.name)
    (workspace / "use.py").write_text(
        "from shapes import total_area\n\nprint(total_area([]))\n", encoding="utf-8"
    )


def test_outline_lists_a_files_definitions(workspace: Path, run_tool: RunTool) -> None:
    _copy(workspace)
    result = run_tool("outline", path="shapes.go")
    assert not result.is_error, result.content
    assert "19: function TotalArea | func TotalArea(shapes []Shape) int {" in result.content
    assert "15: method Size" in result.content


def test_find_symbol_gives_definition_and_uses(workspace: Path, run_tool: RunTool) -> None:
    _copy(workspace)
    result = run_tool("find_symbol", name="total_area")
    assert not result.is_error, result.content
    text = result.content
    assert "shapes.py:15: def total_area(shapes):  (function)" in text
    assert "use.py:3: print(total_area([]))" in text
    assert "shapes.rb:15" in text  # a Ruby method of the same name is one too


def test_the_tools_stay_in_the_workspace(
    workspace: Path, run_tool: RunTool, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.py"
    secret.write_text("def leaked():\n    pass\n")
    (workspace / "link.py").symlink_to(secret)
    for path in ("../secret.py", str(secret), "link.py"):
        result = run_tool("outline", path=path)
        assert result.is_error and "leaked" not in result.content, result.content
    result = run_tool("find_symbol", name="leaked")
    assert "no definition" in result.content


def test_bad_arguments_are_the_models_errors(workspace: Path, run_tool: RunTool) -> None:
    (workspace / "x.py").write_text("x = 1\n")
    assert run_tool("outline", path="notes.txt").is_error
    assert run_tool("outline", path="nope.py").is_error
    assert run_tool("outline", path=".").is_error
    assert run_tool("find_symbol", name="a b; rm").is_error
    assert run_tool("find_symbol", name="x" * 500).is_error
