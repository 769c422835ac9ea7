"""Shared fixtures: every test gets its own bosun home, never the user's."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent.history import ToolCall, ToolResult
from agent.tools import ToolContext, default_registry

if TYPE_CHECKING:
    from tests.openai_servers import Stub


def pytest_sessionstart(session: pytest.Session) -> None:
    """Every `bosun` the tests start reads /dev/null from stdin unless a test pipes
    something in: a runner's stdin may be a pipe held open, and `bosun run PROMPT`
    waits a few seconds for piped input there (agent.cli.piped)."""
    import os

    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


@pytest.fixture(autouse=True)
def bosun_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("bosun-home")
    monkeypatch.setenv("BOSUN_HOME", str(home))
    # One model cache for the whole run (a joined model is 250 MB), still not the user's.
    monkeypatch.setenv("BOSUN_CACHE", str(tmp_path_factory.getbasetemp() / "bosun-cache"))
    # Saved prompt states, though, per test: a state one test saved must not warm another.
    monkeypatch.setenv("BOSUN_PREFIX_CACHE", str(tmp_path_factory.mktemp("prefix-cache")))
    monkeypatch.delenv("BOSUN_PREFIX_CACHE_MAX", raising=False)
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello from bosun\n", encoding="utf-8")
    return ws


@pytest.fixture
def script_file(tmp_path: Path) -> Callable[..., Path]:
    """Write a scripted-driver JSONL file from completions (str) or step dicts."""

    def make(*steps: str | dict[str, object]) -> Path:
        path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.jsonl"
        lines = [json.dumps(s if isinstance(s, dict) else {"completion": s}) for s in steps]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return make


@pytest.fixture
def stub() -> Iterator[Stub]:
    """A stub OpenAI-compatible server on loopback (tests/openai_servers.py)."""
    from tests.openai_servers import model_stub

    with model_stub() as state:
        yield state


@pytest.fixture
def run_tool(workspace: Path) -> Callable[..., ToolResult]:
    """run_tool("read_file", path="x") -> ToolResult, never an exception: a tool
    called the way the loop calls it, through the registry."""
    registry = default_registry()

    def run(name: str, **arguments: object) -> ToolResult:
        return registry.execute(ToolCall("t1", name, dict(arguments)), ToolContext(workspace))

    return run
