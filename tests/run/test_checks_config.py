"""lint_cmd / test_cmd / auto_lint / auto_test in config files and flags, and the
lint/test loop end to end through `bosun run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.run.config import load_config, resolve, user_config_path
from agent.tools.checks import CheckCmd, command_line, lint_flags
from drivers.base import UsageError
from tests.cli.test_cli import bosun
from tests.helpers import tool_call


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_lint_cmd_by_extension_or_language_and_merged_per_extension(workspace: Path) -> None:
    write(
        user_config_path(),
        'auto_lint = true\ntest_cmd = "make test"\n[lint_cmd]\npython = "ruff check"\n'
        'js = "eslint"\n',
    )
    config = load_config(workspace)
    assert config.auto_lint and not config.auto_test
    assert config.test_cmd == CheckCmd("make test", "user")
    assert {c.ext: c.command for c in config.lint_cmd} == {
        "py": "ruff check",
        "pyi": "ruff check",
        "js": "eslint",
    }
    write(workspace / ".bosun.toml", '[lint_cmd]\n".js" = "npx eslint"\n')
    merged = {c.ext: c for c in load_config(workspace).lint_cmd}
    assert merged["js"] == CheckCmd("npx eslint", "workspace", "js")  # origin kept
    assert merged["py"].origin == "user"


def test_a_bare_lint_cmd_applies_to_every_file_and_flags_win(workspace: Path) -> None:
    write(workspace / ".bosun.toml", 'lint_cmd = "lint-all"\ntest_cmd = "t"\nauto_test = true\n')
    config = load_config(workspace)
    assert config.lint_cmd == (CheckCmd("lint-all", "workspace"),)
    assert config.test_cmd == CheckCmd("t", "workspace")
    flags = resolve(
        workspace, lint_cmd=lint_flags(["py: ruff {files}"]), test_cmd="pytest", auto_test=False
    )
    assert flags.test_cmd == CheckCmd("pytest", "flag") and not flags.auto_test
    assert CheckCmd("ruff {files}", "flag", "py") in flags.lint_cmd


def test_lint_flags_and_command_lines() -> None:
    assert lint_flags(["ruff check --select=E9"]) == (CheckCmd("ruff check --select=E9", "flag"),)
    assert lint_flags([".ts: tsc --noEmit"]) == (CheckCmd("tsc --noEmit", "flag", "ts"),)
    assert command_line("ruff {files} -q", ["a b.py", "c.py"]) == "ruff 'a b.py' c.py -q"
    assert command_line("flake8", ["x;rm -rf y.py"]) == "flake8 'x;rm -rf y.py'"
    # a name that a tool could read as an option (or a response file) is a path
    assert command_line("node --check {files}", ["--require=x.js", "@a", "+b", "-"]) == (
        "node --check ./--require=x.js ./@a ./+b ./-"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lint_cmd = 3", "must be a command or a table"),
        ('lint_cmd = ""', "must be a command line"),
        ('[lint_cmd]\n"a b" = "x"', "not a file extension or a language"),
        ("test_cmd = []", "must be a command line"),
        ('auto_test = "yes"', "must be true or false"),
        ("test_rounds = 99", "from 0 to 10"),
        ("test_timeout = 0", "from 1 to 3600"),
    ],
)
def test_bad_values_name_the_key(workspace: Path, text: str, message: str) -> None:
    write(workspace / ".bosun.toml", text + "\n")
    with pytest.raises(UsageError, match=message):
        load_config(workspace)


def test_bosun_run_lints_and_tests_end_to_end(workspace: Path, script_file) -> None:
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    script = script_file(
        tool_call("write_file", path="calc.py", content="def add(a, b):\n    return (a - b\n"),
        "Done.",
        tool_call("write_file", path="calc.py", content="def add(a, b):\n    return a + b\n"),
        "Fixed.",
    )
    check = "grep -q 'a + b' calc.py || { echo 'FAIL: add is wrong'; exit 1; }"
    proc = bosun(
        "run", "fix calc.py", "-m", f"scripted:{script}", "-w", str(workspace),
        "--output", "jsonl", "--approve", "auto", "--auto-lint", "--auto-test",
        "--test-cmd", check,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    lints = [(e["files"], e["ok"]) for e in events if e["type"] == "lint"]
    assert lints == [(["calc.py"], False), (["calc.py"], True)]
    tests = [(e["command"], e["ok"], e["round"]) for e in events if e["type"] == "test"]
    assert tests == [(check, False, 1), (check, True, 2)]
    first = next(e for e in events if e["type"] == "tool_result")
    assert "SyntaxError" in first["content"]
    assert events[-1]["type"] == "result" and events[-1]["status"] == "done"


def test_bosun_config_shows_the_commands(workspace: Path) -> None:
    write(workspace / ".bosun.toml", '[lint_cmd]\npy = "ruff check"\n')
    proc = bosun("config", "-w", str(workspace), "--json")
    assert proc.returncode == 0, proc.stderr
    shown = {s["name"]: s for s in json.loads(proc.stdout)["settings"]}
    assert shown["lint_cmd"] == {
        "name": "lint_cmd",
        "value": {"py": "ruff check"},
        "source": "workspace",
    }
    assert shown["test_cmd"]["value"] is None
    assert "(none)" in bosun("config", "-w", str(workspace)).stdout
