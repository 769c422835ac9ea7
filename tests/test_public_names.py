"""The public names the README lists import from the homes it gives them, and the old
homes of moved modules are gone (a name has one home, not two)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def public_names_block() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Public names and where they live", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_lists_imports_that_work() -> None:
    code = public_names_block()
    assert code.count("import") >= 10
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "old", ["agent.profile", "agent.prompt", "agent.wire", "agent.runtime", "agent.cli_common"]
)
def test_moved_modules_have_no_second_home(old: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_the_console_script_points_at_the_cli_wing() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'bosun = "agent.cli.main:app"' in pyproject
    assert callable(importlib.import_module("agent.cli.main").app)
