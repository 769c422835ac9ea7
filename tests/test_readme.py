"""The README's first command, run as written (minus the install), on the real model."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")
pytestmark = pytest.mark.model

REPO = Path(__file__).resolve().parent.parent


def first_command() -> list[str]:
    """The bosun part of the README's first line of commands."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    first = block.splitlines()[0]
    install, _, run = first.partition(" && ")
    assert install == "./install.sh"
    argv = shlex.split(run)
    assert argv[0] == ".venv/bin/bosun"
    return [sys.executable, "-m", "agent", *argv[1:]]


def test_the_readme_first_command_completes_a_task(bosun_home: Path) -> None:
    proc = subprocess.run(
        [*first_command(), "--output", "jsonl"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-800:]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    calls = [e for e in events if e["type"] == "tool_call"]
    assert calls and calls[0]["name"] == "read_file"
    assert calls[0]["arguments"] == {"path": "README.md"}
    result = events[-1]
    assert result["type"] == "result" and result["status"] == "done"
    assert result["final_text"].strip()
