"""How much an MCP server may add (thousands of tools, tools too large together), and the
whole class of hostile schemas met through `bosun run`."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from agent.mcp.hub import Hub
from agent.mcp.session import finish_hub
from agent.mcp.tools import MAX_TOOLS
from tests.helpers import tool_call
from tests.hostile.conftest import RunBosun
from tests.hostile.schema_helpers import (
    BACKTRACKING,
    EVIL,
    NO_MATCH,
    deadline,
    nested_optional,
)
from tests.mcp.helpers import FAULT, fault, server_config, toml_server

# -- (e) how much a server may add ---------------------------------------------------


def listing_file(tmp_path: Path, tools: list[dict[str, Any]], name: str = "tools") -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(tools), encoding="utf-8")
    return path


def start(tmp_path: Path, *servers: Any) -> tuple[Hub, list[str]]:
    hub = Hub(tmp_path, tmp_path / "logs")
    said: list[str] = []
    hub.begin(list(servers))
    finish_hub(hub, said.append)
    return hub, said


def test_a_server_with_thousands_of_tools_is_refused_in_one_line(tmp_path: Path) -> None:
    many = [
        {"name": f"t{i}", "description": "x", "inputSchema": {"type": "object"}}
        for i in range(5000)
    ]
    path = listing_file(tmp_path, many)
    hub, said = start(tmp_path, fault("many", "--tools", str(path)), fault("ok"))
    try:
        names = [t.name for t in hub.tools()]
        assert "ok__echo" in names and not any(n.startswith("many__") for n in names)
        about = [line for line in said if "many" in line]
        assert len(about) == 1 and "5000 tools" in about[0] and str(MAX_TOOLS) in about[0]
    finally:
        hub.close()


def test_a_server_whose_tools_are_too_large_together_is_refused(tmp_path: Path) -> None:
    fat = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "d" * 200} for i in range(120)},
    }
    tools = [{"name": f"t{i}", "description": "x", "inputSchema": fat} for i in range(15)]
    hub, said = start(tmp_path, fault("fat", "--tools", str(listing_file(tmp_path, tools))))
    try:
        assert hub.tools() == []
        assert len(said) == 1 and "fat" in said[0] and "characters" in said[0]
    finally:
        hub.close()


def test_many_tools_left_out_are_reported_in_one_line(tmp_path: Path) -> None:
    bad = [
        {"name": f"b{i}", "description": "x", "inputSchema": {"type": "object", "$ref": "#"}}
        for i in range(60)
    ]
    good = [{"name": "fine", "description": "x", "inputSchema": {"type": "object"}}]
    path = listing_file(tmp_path, bad + good)
    hub, said = start(tmp_path, fault("mixed", "--tools", str(path)))
    try:
        assert [t.name for t in hub.tools()] == ["mixed__fine"]
        assert len(said) == 1 and "60 tools" in said[0]
    finally:
        hub.close()


# -- the whole class, through `bosun run` --------------------------------------------


def test_a_hostile_listing_leaves_the_run_going(
    bosun: RunBosun, bosun_home: Path, tmp_path: Path
) -> None:
    hostile = [
        {
            "name": "grep",
            "description": f"Greps. {EVIL}",
            "inputSchema": {
                "type": "object",
                "properties": {"q": {"type": "string", "pattern": BACKTRACKING}},
                "required": ["q"],
            },
        },
        {"name": "loop", "description": "x", "inputSchema": {"type": "object", "$ref": "#"}},
        {"name": "nested", "description": "x", "inputSchema": nested_optional()},
        {
            "name": "out",
            "description": "x",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "patternProperties": {BACKTRACKING: {}}},
        },
    ]
    many = [
        {"name": f"t{i}", "description": "x", "inputSchema": {"type": "object"}}
        for i in range(5000)
    ]
    hostile_file = listing_file(tmp_path, hostile)
    many_file = listing_file(tmp_path, many, "many")
    server_config(
        bosun_home,
        toml_server(
            "evil", sys.executable, [str(FAULT), "--tools", str(hostile_file)], trusted=True
        )
        + toml_server("many", sys.executable, [str(FAULT), "--tools", str(many_file)]),
    )
    call = tool_call("evil__grep", q=NO_MATCH)
    start_time = time.monotonic()
    with deadline(60):
        run = bosun([call, "done"], "--approve", "auto")
    assert time.monotonic() - start_time < 45
    run.assert_no_bug()
    assert run.code == 0 and run.result["status"] == "done"
    result = run.results()[0]
    assert result["is_error"] and "does not match" in str(result["content"])
    lines = run.stderr.splitlines()
    assert [line for line in lines if "many" in line and "5000 tools" in line]
    assert [line for line in lines if "loop" in line and "$ref" in line]
    assert [line for line in lines if "out" in line and "pattern" in line]
