"""Real MCP servers for the tests: the SDK-written fault server and PyPI's servers."""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from pathlib import Path

from agent.mcp.servers import ServerSpec

FAULT = Path(__file__).with_name("fault_server.py")
BIN = Path(sys.executable).parent


def mark() -> str:
    """A token put in a server's environment, to find its process later."""
    return f"bosun-test-{uuid.uuid4().hex}"


def fault(name: str = "fault", *args: str, tag: str = "", **settings: object) -> ServerSpec:
    env = (("BOSUN_TEST_MARK", tag),) if tag else ()
    return ServerSpec(name, command=sys.executable, args=(str(FAULT), *args), env=env, **settings)  # type: ignore[arg-type]


def pypi_server(script: str) -> str:
    """The console script of a server installed from PyPI (the dev extra)."""
    path = BIN / script
    return str(path) if path.exists() else (shutil.which(script) or script)


def marked_pids(tag: str) -> list[int]:
    """Live processes whose environment carries `tag` (zombies do not count: they are
    gone but for their exit status)."""
    needle = f"BOSUN_TEST_MARK={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


def server_config(home: Path, body: str) -> None:
    (home / "config.toml").write_text(body, encoding="utf-8")


def toml_server(name: str, command: str, args: list[str], **extra: object) -> str:
    import json

    lines = [
        f"[mcp_servers.{name}]",
        f"command = {json.dumps(command)}",
        f"args = {json.dumps(args)}",
    ]
    for key, value in extra.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items())
            lines.append(f"{key} = {{ {inner} }}")
        else:
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n\n"
