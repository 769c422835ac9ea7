"""The old homes of moved modules are gone (a name has one home, not two); that the
public names the manual lists import is tests/test_docs.py's."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


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
