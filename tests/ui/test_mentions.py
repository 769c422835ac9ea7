"""`@path` mentions: attached as read_file would read them, never more (agent.ui.mentions);
and `bosun config` / unknown keys (agent.cli.config_report, agent.run.config)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.errors import UsageError
from agent.run.config import load_config
from agent.ui.mentions import MAX_ATTACH_BYTES, complete, expand


def test_a_mentioned_file_is_attached_once_and_lookalikes_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print(1)\n")
    out = expand("compare @a.py, and @a.py; mail me@example.com about @decorator", tmp_path)
    assert out.attached == ["a.py"] and out.problems == []
    assert out.text.count('<file path="a.py">\nprint(1)\n</file>') == 1
    assert out.text.startswith("compare @a.py, and @a.py; mail me@example.com about @decorator")


def test_a_missing_file_the_user_plainly_meant_is_said_not_dropped(tmp_path: Path) -> None:
    out = expand("fix @missing.py and @src/gone, thanks @decorator @channel", tmp_path)
    assert out.attached == []
    assert out.problems == [
        "@missing.py: no such file in the workspace; not attached",
        "@src/gone: no such file in the workspace; not attached",
    ]


def test_mentions_are_confined_like_read_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("secret\n")
    (ws / "link").symlink_to(tmp_path / "secret.txt")
    (ws / "bin.dat").write_bytes(b"\0\1\2" * 100)
    os.mkfifo(ws / "pipe")
    (ws / "big.txt").write_text("x" * (MAX_ATTACH_BYTES + 10))
    out = expand("@../secret.txt @link @/etc/passwd @sub @bin.dat @pipe @big.txt", ws)
    assert "secret\n" not in out.text  # neither through ../ nor through the symlink
    assert out.attached == ["big.txt"] and "cut at 64 kB" in out.text
    assert len(out.problems) == 6, out.problems
    assert all(p.startswith("@") for p in out.problems)


def test_completion_lists_workspace_paths_only(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("")
    (tmp_path / ".hidden").write_text("")
    assert complete("s", tmp_path) == ["src/"]
    assert complete("src/m", tmp_path) == ["src/main.py"]
    assert complete("", tmp_path) == ["src/"] and complete(".h", tmp_path) == [".hidden"]
    assert complete("../", tmp_path) == []


def test_an_unknown_config_key_names_the_file_and_the_key_meant(tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text('aprove = "auto"\n')
    with pytest.raises(
        UsageError, match=r"config.toml: unknown setting 'aprove' \(did you mean 'approve'\?\)"
    ):
        load_config(None, user_file=user)


def test_bosun_config_shows_each_settings_source(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    (home / "config.toml").write_text('approve = "auto-edit"\ncontext_size = 4096\n')
    (ws / ".bosun.toml").write_text('approve = "ask"\n')
    env = {**os.environ, "BOSUN_HOME": str(home)}
    cmd = [sys.executable, "-m", "agent", "config", "-w", str(ws)]
    data = json.loads(
        subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True).stdout
    )
    source = {s["name"]: (s["value"], s["source"]) for s in data["settings"]}
    assert source["approve"] == ("ask", "workspace")  # stricter: the workspace may
    assert source["context_size"] == (4096, "user")
    assert source["model"] == ("smollm2-135m", "default")
    text = subprocess.run(cmd, env=env, capture_output=True, text=True).stdout
    assert f"user       {home / 'config.toml'}" in text and "(absent)" in text
