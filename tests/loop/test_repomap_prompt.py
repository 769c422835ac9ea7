"""The repository map in the prompt: after the stable head, at a request's start, again
only when files changed, and the prompt stays a prefix of the next one."""

from __future__ import annotations

from pathlib import Path

from agent.history import System, User
from agent.loop.repomap import auto_budget
from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.settings import Settings


def _chat(workspace: Path, script: Path, tokens: int | None = 400) -> ChatSession:
    config = Config(model=f"scripted:{script}", repo_map_tokens=tokens)
    chat = ChatSession(Settings.from_config(config, workspace=workspace), lambda e: None, None)
    chat.start_new()
    return chat


def test_the_map_follows_the_head_and_comes_back_only_when_files_change(
    workspace: Path, script_file
) -> None:
    (workspace / "billing.py").write_text("def compute_total(items):\n    return sum(items)\n")
    (workspace / "main.py").write_text("from billing import compute_total\ncompute_total([])\n")
    chat = _chat(workspace, script_file("one", "two", "three"))
    chat.send("why does compute_total fail?")
    system = chat.history[0]
    assert isinstance(system, System) and "compute_total" not in system.content  # head as is
    first = chat.history[1]
    assert isinstance(first, User)
    assert first.content.startswith("why does compute_total fail?\n\nRepository map")
    assert "billing.py:\n  1: def compute_total(items):" in first.content
    assert "outline" in chat.tools.names and "find_symbol" in chat.tools.names

    chat.send("and now?")  # nothing changed: no second map
    assert chat.history[-2] == User("and now?")
    assert chat.driver.prompts[1].startswith(chat.driver.prompts[0])

    (workspace / "tax.py").write_text("def apply_tax(total):\n    return total\n")
    chat.send("add tax")  # a file changed: a fresh map with this request
    last = chat.history[-2]
    assert isinstance(last, User) and "def apply_tax(total):" in last.content
    assert chat.driver.prompts[2].startswith(chat.driver.prompts[1])
    chat.close()


def test_zero_turns_it_off(workspace: Path, script_file) -> None:
    (workspace / "billing.py").write_text("def compute_total(items):\n    return 1\n")
    chat = _chat(workspace, script_file("ok"), tokens=0)
    chat.send("hello")
    assert chat.history[1] == User("hello")
    assert "outline" not in chat.tools.names
    chat.close()


def test_the_default_budget_follows_the_context() -> None:
    assert auto_budget(None) == 0
    assert auto_budget(8192) == 0  # the bundled models' window: no map by default
    assert auto_budget(16_384) == 1024
    assert auto_budget(32_768) == 2048
    assert auto_budget(1_000_000) == 4096


def test_a_new_conversation_gets_the_map_again(workspace: Path, script_file) -> None:
    (workspace / "billing.py").write_text("def compute_total(items):\n    return 1\n")
    chat = _chat(workspace, script_file("one", "two"))
    chat.send("hello")
    chat.start_new()  # /clear
    chat.send("hello again")
    again = chat.history[1]
    assert isinstance(again, User) and "def compute_total(items):" in again.content
    chat.close()


def test_a_map_never_takes_more_than_a_quarter_of_the_context(script_file) -> None:
    from agent.run.assemble import map_budget
    from drivers.scripted import ScriptedDriver

    driver = ScriptedDriver(script_file("x"), n_ctx=8192)
    assert map_budget(Settings(repo_map_tokens=30_000), driver) == 2048
    assert map_budget(Settings(repo_map_tokens=500), driver) == 500
    assert map_budget(Settings(), driver) == 0  # 8k: off by default
    assert map_budget(Settings(context_size=32_768), driver) == 2048


def test_bosun_run_takes_the_budget_from_the_config_file(
    workspace: Path, script_file, bosun_home: Path, tmp_path: Path
) -> None:
    import json
    import subprocess
    import sys

    (workspace / "billing.py").write_text("def compute_total(items):\n    return 1\n")
    (bosun_home / "config.toml").write_text("repo_map_tokens = 300\n")
    trace = tmp_path / "trace.jsonl"
    args = ["run", "hi", "--model", f"scripted:{script_file('ok')}", "-w", str(workspace)]
    proc = subprocess.run(
        [sys.executable, "-m", "agent", *args, "--trace", str(trace)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    prompt = json.loads(trace.read_text().splitlines()[0])["prompt"]
    assert "billing.py:\n  1: def compute_total(items):" in prompt
