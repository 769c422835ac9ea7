"""One settings resolver for every face: each config key, set in the user's config.toml,
reaches the settings each face runs on (`bosun run`, `run --tasks`, `chat`, `acp`, `mcp
serve`), and a flag, where the face has one, beats it. Each face is driven through the
real command line; its runner is replaced by one that keeps the settings it was given,
so a face that set a value of its own after the resolver (as `run` once did with its
own defaults for model, approve and constrain) fails here."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout, suppress
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agent.run.settings import Settings, config_keys
from agent.tools.checks import CheckCmd


@dataclass(frozen=True)
class Case:
    toml: str  # the line(s) in config.toml
    value: Any  # what the settings then hold (a function of them: `read`)
    flag: tuple[str, ...] = ()  # a flag that beats it, where faces have one
    flagged: Any = None  # the value with that flag
    faces: tuple[str, ...] = ("run", "tasks", "chat")  # faces with the flag


def read(settings: Settings, key: str) -> Any:
    value = getattr(settings, config_keys()[key].name)
    if key == "mcp_servers":
        return tuple(s.name for s in value)
    if key == "hooks":
        return tuple(h.command for h in value)
    return value


ALL = ("run", "tasks", "chat", "acp", "serve")
CASES: dict[str, Case] = {
    "model": Case(
        'model = "scripted:a.jsonl"',
        "scripted:a.jsonl",
        ("-m", "scripted:b.jsonl"),
        "scripted:b.jsonl",
        ALL,
    ),
    "approve": Case('approve = "read-only"', "read-only", ("--approve", "auto"), "auto", ALL),
    "constrain": Case('constrain = "never"', "never", ("--constrain", "always"), "always"),
    "speculate": Case('speculate = "off"', "off", ("--speculate", "on"), "on"),
    "context_size": Case(
        "context_size = 4096",
        4096,
        ("--context-size", "8192"),
        8192,
        ("run", "tasks", "chat", "acp"),
    ),
    "compact_at": Case("compact_at = 0.5", 0.5),
    "sandbox": Case('sandbox = "off"', "off", ("--sandbox", "auto"), "auto", ALL),
    "allow_net": Case("allow_net = true", True),
    "allow_git_writes": Case("allow_git_writes = true", True),
    "sandbox_read": Case('sandbox_read = ["/opt"]', ("/opt",)),
    "tools": Case(
        'tools = "+apply_patch"',
        ("+apply_patch",),
        ("--tools", "-edit_file"),
        ("-edit_file",),
        ("run", "tasks", "chat", "acp"),
    ),
    "lint_cmd": Case(
        'lint_cmd = "ruff check"',
        (CheckCmd("ruff check"),),
        ("--lint-cmd", "flake8"),
        (CheckCmd("flake8", "flag"),),
    ),
    "test_cmd": Case(
        'test_cmd = "pytest -q"',
        CheckCmd("pytest -q"),
        ("--test-cmd", "make test"),
        CheckCmd("make test", "flag"),
    ),
    "auto_lint": Case("auto_lint = true", True, ("--no-auto-lint",), False),
    "auto_test": Case("auto_test = true", True, ("--no-auto-test",), False),
    "test_rounds": Case("test_rounds = 5", 5),
    "test_timeout": Case("test_timeout = 60", 60),
    "checkpoint_max_mb": Case("checkpoint_max_mb = 50", 50),
    "repo_map_tokens": Case("repo_map_tokens = 500", 500),
    "otel": Case("otel = true", True),
    "otel_content": Case("otel_content = true", True),
    "mcp_servers": Case('[mcp_servers.time]\ncommand = "mcp-server-time"', ("time",)),
    "hooks": Case('[[hooks.Stop]]\ncommand = "echo done"', ("echo done",)),
}


def test_every_config_key_has_a_case() -> None:
    assert set(CASES) == set(config_keys())


def face(name: str, monkeypatch: pytest.MonkeyPatch, workspace: Path, args: tuple[str, ...]):
    """Run face `name` through the command line; the settings it was handed."""
    from agent.cli.main import app

    seen: list[Settings] = []

    class Handed(Exception):
        pass

    def keep(settings: Settings, *_a: Any, **_k: Any) -> int:
        seen.append(settings)
        raise Handed

    argv: list[str]
    if name == "run":
        monkeypatch.setattr("agent.run.headless.run_once", keep)
        argv = ["run", "go", "-w", str(workspace)]
    elif name == "tasks":
        monkeypatch.setattr("agent.run.batch.run_tasks", keep)
        tasks = workspace / "tasks.jsonl"
        tasks.write_text('{"id": "t", "prompt": "go"}\n')
        argv = ["run", "--tasks", str(tasks), "-w", str(workspace)]
    elif name == "chat":

        class Repl:
            def __init__(self, _console: Any, settings: Settings, *_a: Any, **_k: Any) -> None:
                keep(settings)

        class Tty:
            def isatty(self) -> bool:
                return True

        monkeypatch.setattr("agent.ui.app.Repl", Repl)
        monkeypatch.setattr("agent.ui.app.sys", SimpleNamespace(stdin=Tty(), stdout=Tty()))
        argv = ["chat", "-w", str(workspace)]
    elif name == "acp":
        monkeypatch.setattr("agent.run.acp.serve", keep)
        argv = ["acp", "-w", str(workspace)]
    else:
        monkeypatch.setattr("agent.run.mcp_serve.serve", keep)
        monkeypatch.chdir(workspace)
        argv = ["mcp", "serve"]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), suppress(Handed, SystemExit):
        app([*argv, *args])
    assert seen, f"{name} never got its settings: {err.getvalue()}"
    return seen[0]


@pytest.mark.parametrize("key", list(CASES))
@pytest.mark.parametrize("name", ALL)
def test_a_config_key_reaches_every_face_and_a_flag_beats_it(
    name: str, key: str, bosun_home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = CASES[key]
    before = read(face(name, monkeypatch, workspace, ()), key)
    assert before != case.value  # the default differs, so the file is what changed it
    (bosun_home / "config.toml").write_text(case.toml + "\n")
    assert read(face(name, monkeypatch, workspace, ()), key) == case.value
    if case.flag and name in case.faces:
        flagged = face(name, monkeypatch, workspace, case.flag)
        assert read(flagged, key) == case.flagged


def test_mcp_serve_keeps_its_own_default_below_the_files(
    bosun_home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nobody can answer a question over MCP: auto-edit unless a file or the flag says."""
    assert face("serve", monkeypatch, workspace, ()).approve == "auto-edit"
    (bosun_home / "config.toml").write_text('approve = "ask"\n')
    assert face("serve", monkeypatch, workspace, ()).approve == "ask"
