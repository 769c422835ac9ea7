"""MCP server settings: both shapes people already have, checked like any config file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.errors import UsageError
from agent.mcp.servers import Approvals, ServerSpec
from agent.run.config import load_config


def user_config(home: Path, text: str) -> Path:
    path = home / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_codex_shape_in_config_toml(bosun_home: Path, workspace: Path) -> None:
    user_config(
        bosun_home,
        """
[mcp_servers.time]
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]
env = { TZ = "UTC" }
startup_timeout_sec = 5
tool_timeout_sec = 30
trusted = true

[mcp_servers.web]
url = "http://127.0.0.1:8931/mcp"
enabled = false
""",
    )
    servers = {s.name: s for s in load_config(workspace).mcp_servers}
    time = servers["time"]
    assert time.command == "mcp-server-time" and time.args == ("--local-timezone", "UTC")
    assert time.env == (("TZ", "UTC"),) and time.trusted and time.origin == "user"
    assert (time.startup_timeout, time.tool_timeout) == (5.0, 30.0)
    assert servers["web"].url == "http://127.0.0.1:8931/mcp" and not servers["web"].enabled


def test_claude_code_mcp_json_is_workspace_content(workspace: Path) -> None:
    (workspace / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "git": {"command": "mcp-server-git", "args": ["--repository", "."]},
                    "remote": {"type": "http", "url": "https://example.com/mcp"},
                }
            }
        )
    )
    servers = {s.name: s for s in load_config(workspace).mcp_servers}
    assert servers["git"].origin == "workspace" and servers["git"].args == ("--repository", ".")
    assert servers["remote"].url == "https://example.com/mcp"
    assert servers["git"].source.endswith(".mcp.json")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[mcp_servers.x]\ncommand = "a"\nurl = "http://h/"\n', "exactly one of command"),
        ("[mcp_servers.x]\nargs = []\n", "exactly one of command"),
        ('[mcp_servers.x]\ncommand = "a"\nargz = []\n', "unknown setting 'argz'"),
        ('[mcp_servers.x]\ncommand = "a"\nargs = "b"\n', "args must be a list of strings"),
        ('[mcp_servers.x]\ncommand = "a"\nenv = { A = 1 }\n', "env must be a table of strings"),
        ('[mcp_servers.x]\ncommand = "a"\ntool_timeout = -1\n', "number of seconds"),
        ('[mcp_servers.x]\ncommand = "a"\ntrusted = "yes"\n', "true or false"),
        ('[mcp_servers."a b"]\ncommand = "a"\n', "a server name is"),
        ('[mcp_servers.x]\nurl = "file:///etc/passwd"\n', "http:// or https://"),
        ('mcp_servers = "x"\n', "mcp_servers must be a table"),
    ],
)
def test_bad_server_tables_are_one_line_errors(
    bosun_home: Path, workspace: Path, table: str, message: str
) -> None:
    path = user_config(bosun_home, table)
    with pytest.raises(UsageError) as err:
        load_config(workspace)
    assert message in str(err.value) and str(path) in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "text",
    ["{not json", "[]", '{"mcpServers": []}', "[" * 5000, '{"mcpServers": {"x": 3}}'],
)
def test_bad_mcp_json_is_a_usage_error(workspace: Path, text: str) -> None:
    (workspace / ".mcp.json").write_text(text)
    with pytest.raises(UsageError) as err:
        load_config(workspace)
    assert ".mcp.json" in str(err.value)


def test_a_fifo_mcp_json_is_refused_not_waited_on(workspace: Path) -> None:
    import os

    os.mkfifo(workspace / ".mcp.json")
    with pytest.raises(UsageError, match="not a regular file"):
        load_config(workspace)


def test_workspace_cannot_trust_itself_or_replace_a_user_server(
    bosun_home: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user_config(bosun_home, '[mcp_servers.time]\ncommand = "mcp-server-time"\n')
    (workspace / ".bosun.toml").write_text(
        '[mcp_servers.time]\ncommand = "evil"\n\n[mcp_servers.own]\ncommand = "x"\ntrusted = true\n'
    )
    servers = {s.name: s for s in load_config(workspace).mcp_servers}
    assert servers["time"].command == "mcp-server-time"
    assert servers["own"].origin == "workspace" and not servers["own"].trusted
    err = capsys.readouterr().err
    assert "ignoring MCP server 'time'" in err and "ignoring trusted = true" in err


def test_approval_is_for_one_workspace_and_one_command_line(tmp_path: Path) -> None:
    store = Approvals(tmp_path / "approvals.json")
    spec = ServerSpec("git", command="mcp-server-git", origin="workspace")
    ws = tmp_path / "ws"
    assert not store.allowed(ws, spec)
    store.allow(ws, spec)
    assert store.allowed(ws, spec)
    assert not store.allowed(tmp_path / "other", spec)
    assert not store.allowed(ws, ServerSpec("git", command="sh", args=("-c", "evil")))
    (tmp_path / "approvals.json").write_text("[garbage")
    assert not store.allowed(ws, spec)  # a damaged file approves nothing
