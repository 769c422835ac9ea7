"""What an attacker controls, set up for real: a workspace full of traps, a tree of
sentinels outside it that must come out byte-identical, and `bosun run` on a scripted
model (a hostile model is a script) run in process through the real command line, so
its exit code, its JSONL events, its stderr and its session file are all checked."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import snapshot

SECRET = "TOP SECRET: outside the workspace"


@dataclass
class Run:
    code: int
    events: list[dict[str, Any]]
    stderr: str
    session: list[dict[str, Any]] = field(default_factory=list)

    @property
    def result(self) -> dict[str, Any]:
        results = [e for e in self.events if e.get("type") == "result"]
        assert len(results) == 1, f"expected one result event, got {results} ({self.stderr})"
        return results[0]

    def results(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == "tool_result"]

    def assert_no_bug(self) -> None:
        """The run ended the way bosun ends runs: no internal error, a result event."""
        assert "internal error" not in self.stderr, self.stderr
        assert "Traceback" not in self.stderr, self.stderr
        self.result  # noqa: B018 - asserts there is exactly one


def jsonl_steps(steps: list[str | dict[str, Any]]) -> str:
    """A scripted-driver file; lone surrogates in completions survive (as JSON escapes)."""
    lines = [json.dumps(s if isinstance(s, dict) else {"completion": s}) for s in steps]
    return "\n".join(lines) + "\n"


def run_bosun(steps: list[str | dict[str, Any]], workspace: Path, scripts: Path, *args: str) -> Run:
    """`bosun run go -m scripted:… -w workspace --output jsonl *args`, in process."""
    from agent.cli.main import app
    from agent.session import sessions_dir

    script = scripts / f"script-{len(list(scripts.iterdir()))}.jsonl"
    script.write_text(jsonl_steps(steps), encoding="utf-8")
    before = set(sessions_dir().glob("*.jsonl")) if sessions_dir().is_dir() else set()
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", "go", "-m", f"scripted:{script}", "-w", str(workspace), "--output", "jsonl"]
    with redirect_stdout(out), redirect_stderr(err):
        try:
            app([*argv, *args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    events = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
    run = Run(code, events, err.getvalue())
    new = sorted(set(sessions_dir().glob("*.jsonl")) - before) if sessions_dir().is_dir() else []
    for path in new:  # every line whole, valid JSON, valid UTF-8
        for line in path.read_text(encoding="utf-8").splitlines():
            run.session.append(json.loads(line))
    return run


RunBosun = Callable[..., Run]


@pytest.fixture
def bosun(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> RunBosun:
    scripts = tmp_path_factory.mktemp("scripts")

    def go(steps: list[str | dict[str, Any]], *args: str, workspace: Path = workspace) -> Run:
        return run_bosun(steps, workspace, scripts, *args)

    return go


class World:
    """Sentinels outside the workspace. `seal()` once the test has built its traps:
    from then on everything outside the workspace must stay byte-identical."""

    def __init__(self, tmp_path: Path, workspace: Path) -> None:
        self.root, self.workspace = tmp_path, workspace
        self.outside = tmp_path / "outside"
        self.outside.mkdir()
        self.secret = self.outside / "secret.txt"
        self.secret.write_text(SECRET)
        self._sealed: dict[str, bytes | str] | None = None

    def seal(self) -> None:
        self._sealed = snapshot(self.root, self.workspace)

    def check(self) -> None:
        if self._sealed is not None:
            assert snapshot(self.root, self.workspace) == self._sealed, "outside changed"


@pytest.fixture
def world(tmp_path: Path, workspace: Path) -> Iterator[World]:
    w = World(tmp_path, workspace)
    yield w
    w.check()
