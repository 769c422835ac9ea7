"""`bosun map`: the map as text (escapes shown, not sent), every definition as JSON,
and a usage error for a folder that is not there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def bosun(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=REPO
    )


def test_map_text_json_and_errors(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):  # \x1b[2J\n    return a + b\n")
    (tmp_path / "main.go").write_text("package main\n\nfunc Run() {}\n")
    out = bosun("map", str(tmp_path), "--tokens", "200")
    assert out.returncode == 0, out.stderr
    assert "calc.py:\n  1: def add(a, b):  # \\x1b[2J" in out.stdout
    assert "\x1b" not in out.stdout and "(2 of 2 files shown)" in out.stdout
    data = json.loads(bosun("map", str(tmp_path), "--json").stdout)
    rows = {(d["path"], d["name"], d["kind"], d["line"]) for d in data["definitions"]}
    assert rows == {("calc.py", "add", "function", 1), ("main.go", "Run", "function", 3)}
    missing = bosun("map", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such folder" in missing.stderr
    assert bosun("map", str(tmp_path), "--tokens", "0").returncode == 2
