"""glob and grep: what they find, what they skip, and how they cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.tools.search import MAX_GLOB_RESULTS, MAX_GREP_MATCHES
from tests.tools.conftest import RunTool


@pytest.fixture
def tree(workspace: Path) -> Path:
    files = {
        "main.py": "import os\nprint('TODO: main')\n",
        "src/app/core.py": "def run():\n    return 'TODO core'\n",
        "src/app/test_core.py": "def test_run():\n    pass\n",
        "docs/guide.md": "TODO write the guide\n",
        "debug.log": "TODO in a log\n",
        "keep.log": "TODO kept log\n",
        "build/out.py": "TODO built\n",
        "dist/pkg.py": "TODO dist\n",
        "src/dist/real.py": "TODO not the root dist\n",
        "src/gen/x.py": "TODO generated\n",
        ".git/config": "TODO git\n",
        ".venv/lib/site.py": "TODO venv\n",
        "node_modules/m/index.py": "TODO node\n",
        "src/__pycache__/core.py": "TODO cache\n",
    }
    for rel, text in files.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text, encoding="utf-8")
    (workspace / ".gitignore").write_text("# comment\n*.log\n!keep.log\nbuild/\n/dist\n")
    (workspace / "src/.gitignore").write_text("gen/\n")
    (workspace / "blob.bin").write_bytes(b"TODO\x00binary")
    return workspace


def test_glob_without_slash_matches_names_at_any_depth(run_tool: RunTool, tree: Path) -> None:
    result = run_tool("glob", pattern="*.py")
    assert result.content.splitlines() == [
        "main.py",
        "src/app/core.py",
        "src/app/test_core.py",
        "src/dist/real.py",
    ]


def test_glob_with_slash_is_anchored_at_the_root(run_tool: RunTool, tree: Path) -> None:
    assert run_tool("glob", pattern="src/**/test_*.py").content == "src/app/test_core.py"
    assert run_tool("glob", pattern="./*.py").content == "main.py"
    assert run_tool("glob", pattern=f"{tree}/src/*/core.py").content == "src/app/core.py"
    assert run_tool("glob", pattern="**/*.md").content == "docs/guide.md"


def test_glob_honours_gitignore_and_always_skips(run_tool: RunTool, tree: Path) -> None:
    everything = run_tool("glob", pattern="**").content.splitlines()
    assert "keep.log" in everything and "debug.log" not in everything
    skipped = ("build/", "dist/pkg.py", "src/gen/", ".git/", ".venv/", "node_modules/", "__pyc")
    assert not [p for p in everything if p.startswith(skipped) or "__pycache__" in p]
    assert "src/dist/real.py" in everything  # "/dist" is anchored to the root


def test_glob_reports_no_matches_and_caps(run_tool: RunTool, workspace: Path) -> None:
    none = run_tool("glob", pattern="*.rs")
    assert not none.is_error and "no files match" in none.content and "ignored" in none.content
    for i in range(MAX_GLOB_RESULTS + 5):
        (workspace / f"f{i:04}.txt").write_text("")
    many = run_tool("glob", pattern="*.txt").content.splitlines()
    assert len(many) == MAX_GLOB_RESULTS + 1 and many[-1].startswith("(6 more not shown")


def test_grep_finds_lines_and_skips_ignored_and_binary(run_tool: RunTool, tree: Path) -> None:
    result = run_tool("grep", pattern="TODO")
    assert result.content.splitlines() == [
        "docs/guide.md:1: TODO write the guide",
        "keep.log:1: TODO kept log",
        "main.py:2: print('TODO: main')",
        "src/app/core.py:2:     return 'TODO core'",
        "src/dist/real.py:1: TODO not the root dist",
    ]


def test_grep_path_and_glob_narrow_the_search(run_tool: RunTool, tree: Path) -> None:
    assert run_tool("grep", pattern=r"def \w+", path="src", glob="test_*.py").content == (
        "src/app/test_core.py:1: def test_run():"
    )
    explicit = run_tool("grep", pattern="TODO", path="debug.log")  # named: searched anyway
    assert explicit.content == "debug.log:1: TODO in a log"
    assert "no such file or folder" in run_tool("grep", pattern="x", path="nope").content


def test_grep_bad_regex_and_no_match(run_tool: RunTool, tree: Path) -> None:
    bad = run_tool("grep", pattern="(unclosed")
    assert bad.is_error and "bad regular expression" in bad.content
    none = run_tool("grep", pattern="NOTHING_LIKE_THIS")
    assert not none.is_error and none.content.startswith("(no matches")


def test_grep_caps_matches_and_long_lines(run_tool: RunTool, workspace: Path) -> None:
    (workspace / "many.txt").write_text("hit\n" * (MAX_GREP_MATCHES * 3) + "hit" + "x" * 5000)
    lines = run_tool("grep", pattern="hit").content.splitlines()
    assert len(lines) == MAX_GREP_MATCHES + 1 and lines[-1].startswith("(stopped at 100 matches")
    last = run_tool("grep", pattern="hitx").content
    assert len(last) < 400 and last.endswith(" …")
