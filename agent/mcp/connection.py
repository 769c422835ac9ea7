"""One MCP server as the hub holds it: its state for people (`bosun mcp list`, `/mcp`),
its connection, and what is done with one connection alone (a call, its log, why it
failed). Apart from agent.mcp.hub, which owns the event loop and every server's life."""

from __future__ import annotations

import asyncio
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from agent.mcp.servers import ServerSpec
from agent.mcp.tools import result_text


@dataclass
class ServerState:
    """What `bosun mcp list` and `/mcp` show of one server."""

    spec: ServerSpec
    # running | failed | stopped | disabled | not approved | refused (too many tools)
    status: str = "starting"
    error: str = ""
    tools: dict[str, str] = field(default_factory=dict)  # bosun name -> the server's name
    skipped: list[str] = field(default_factory=list)  # "tool: why it was left out"
    restarts: int = 0


@dataclass
class Conn:
    state: ServerState
    log: TextIO | None = None
    client: Any = None
    task: asyncio.Task[None] | None = None
    scope: Any = None  # the anyio cancel scope its task runs in
    stop: asyncio.Event | None = None
    listing: list[Any] = field(default_factory=list)


def message(exc: BaseException) -> str:
    """The first real cause of a failure, in one line (task groups wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) < 300 else text[:297] + "…"


def why(conn: Conn, exc: BaseException) -> str:
    """The failure, with the last line the server wrote to stderr where there is one."""
    text = message(exc)
    if conn.log is not None:
        try:
            lines = Path(conn.log.name).read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        if last and last not in text:
            text = f"{text}; it said: {last[:200]}"
    return text


def open_log(conn: Conn, log_dir: Path | None) -> TextIO:
    """Where a server's stderr goes: a log file (never the user's terminal)."""
    if conn.log is None:
        if log_dir is None:
            conn.log = open("/dev/null", "w")  # noqa: SIM115 - closed in close()
        else:
            log_dir.mkdir(parents=True, exist_ok=True)
            path = log_dir / f"mcp-{conn.state.spec.name}.log"
            conn.log = path.open("w", encoding="utf-8", errors="replace")
    return conn.log


async def call_tool(conn: Conn, remote: str, arguments: dict[str, Any]) -> Any:
    """(text, is_error, lost): one tool call on a running server; `lost`: the
    connection is gone (a restart may help)."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    spec = conn.state.spec
    client = conn.client
    if client is None:
        return "the server is not running", True, True
    try:
        result = await asyncio.wait_for(
            client.call_tool(remote, arguments), timeout=spec.tool_timeout
        )
    except TimeoutError:
        return f"{remote} did not answer within {spec.tool_timeout:g} s", True, False
    except MCPError as exc:
        if exc.code == CONNECTION_CLOSED:
            conn.state.status, conn.state.error = "failed", "the connection closed"
            return "the connection closed", True, True
        return f"the server refused the call: {message(exc)}", True, False
    except Exception as exc:  # a malformed answer: the server's fault, the model's result
        return f"the server's answer could not be read: {message(exc)}", True, False
    text = result_text(result.content, result.structured_content)
    return text, bool(result.is_error), False


def quiet_sdk_logs() -> None:
    """The SDK logs a server's misbehaviour with tracebacks; bosun reports it in one
    line instead, so its records stop here rather than reaching the terminal."""
    for name in ("mcp", "mcp_types", "httpx", "httpx2"):
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


def warn(line: str) -> None:
    """One line to stderr; it may carry a server's own words (its name, its last line of
    stderr), so escapes are shown, never sent."""
    from agent.untrusted import visible

    sys.stderr.write(f"bosun: {visible(line)}\n")
