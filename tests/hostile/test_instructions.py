"""AGENTS.md is repository content: opened like any workspace file, never followed out
of the workspace, never read past its cap, never waited on."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from agent.run.system_prompt import MAX_INSTRUCTIONS_BYTES, project_instructions, system_message
from tests.hostile.conftest import SECRET, World, jsonl_steps

KEY = "sk-bosun-test-" + "7" * 24  # a planted API key


def test_a_symlink_out_of_the_workspace_is_not_read(world: World, workspace: Path) -> None:
    (workspace / "AGENTS.md").symlink_to(world.secret)
    world.seal()
    assert SECRET not in system_message(workspace).content
    assert project_instructions(workspace) == ("", "AGENTS.md")


def test_the_environment_never_reaches_the_prompt_or_the_session(
    workspace: Path, tmp_path: Path, bosun_home: Path
) -> None:
    """A real process with a key in its environment from the start, as a user's shell
    gives it (/proc/self/environ shows the environment a process was started with)."""
    (workspace / "AGENTS.md").symlink_to("/proc/self/environ")
    (workspace / "BOSUN.md").symlink_to("/proc/self/cmdline")
    script = tmp_path / "script.jsonl"
    script.write_text(jsonl_steps(["nothing to do"]))
    argv = [sys.executable, "-m", "agent", "run", "go", "-m", f"scripted:{script}"]
    argv += ["-w", str(workspace), "--output", "jsonl", "--approve", "read-only"]
    env = {**os.environ, "BOSUN_TEST_API_KEY": KEY}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    sessions = list((bosun_home / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1 and "nothing to do" in sessions[0].read_text()
    assert KEY not in proc.stdout + proc.stderr + sessions[0].read_text()
    # and the same through a symlink that first stays inside
    (workspace / "AGENTS.md").unlink()
    (workspace / "docs").mkdir()
    (workspace / "docs" / "agents.md").symlink_to("/proc/self/environ")
    (workspace / "AGENTS.md").symlink_to("docs/agents.md")
    assert "PATH=" not in system_message(workspace).content


def test_a_huge_sparse_file_costs_its_cap_not_its_size(workspace: Path) -> None:
    with open(workspace / "AGENTS.md", "wb") as fh:
        fh.write(b"Use tabs.\n")
        fh.truncate(512 * 1024 * 1024)  # 512 MB that take no disk
    tracemalloc.start()
    try:
        text, name = project_instructions(workspace)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert name == "AGENTS.md" and text.startswith("Use tabs.")
    assert "the rest is cut" in text and len(text) < MAX_INSTRUCTIONS_BYTES + 200
    assert peak < 1_000_000, peak  # the whole file would be 512 MB


@pytest.mark.parametrize("kind", ["fifo", "folder", "dangling", "loop", "device"])
def test_what_is_not_a_regular_file_is_skipped_at_once(workspace: Path, kind: str) -> None:
    agents = workspace / "AGENTS.md"
    if kind == "fifo":
        os.mkfifo(agents)  # nobody will ever write: a blocking open would hang
    elif kind == "folder":
        agents.mkdir()
    elif kind == "dangling":
        agents.symlink_to("nowhere.md")
    elif kind == "loop":
        agents.symlink_to("AGENTS.md")
    else:
        agents.symlink_to("/dev/zero")
    (workspace / "BOSUN.md").write_text("Fallback rules.\n")
    start = time.monotonic()
    text, name = project_instructions(workspace)
    assert time.monotonic() - start < 5
    assert (text, name) == ("Fallback rules.\n", "BOSUN.md")


def test_bytes_that_are_not_utf8_are_shown_replaced(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_bytes(b"Rules \xff\xfe and \xed\xa0\x80 end.\n")
    text, _ = project_instructions(workspace)
    assert text.startswith("Rules ") and "end." in text
    text.encode("utf-8")  # no lone surrogate can reach the session file


def test_a_real_agents_md_still_reaches_the_prompt(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Run `make check` before you finish.\n")
    assert "make check" in system_message(workspace).content
