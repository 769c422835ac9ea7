"""A regular (non-editable) install finds templates/ and contracts/ inside the wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_carries_the_data_folders(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = dist.glob("bosun-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "agent/_data/templates/chatml.jinja" in names
    assert "agent/_data/templates/system.jinja" in names
    assert "agent/_data/contracts/toolcall-retention-v1.yaml" in names
    assert "drivers/capabilities.toml" in names

    target = tmp_path / "site"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    code = (
        "import agent, agent.resources as r; from agent.protocol.render import render;"
        "from agent.run.system_prompt import system_prompt;"
        "from agent.history import System, User;"
        "print(agent.__file__); print(r.data_dir('templates')); print(r.data_dir('contracts'));"
        "print(render([System(system_prompt('/w')), User('hi')])[-22:].strip())"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    module, templates, contracts, tail = run.stdout.splitlines()
    for shown in (module, templates, contracts):
        assert shown.startswith(str(target)), shown
    assert tail == "<|im_start|>assistant"
