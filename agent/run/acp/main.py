"""The connection's life: stdio set up, the SDK's connection run on it, every session
closed when the editor goes."""

from __future__ import annotations

from acp.agent.connection import AgentSideConnection

from agent.errors import UsageError
from agent.run.acp.server import BosunAgent
from agent.run.acp.wire import quiet_logging, stdio
from agent.run.settings import Settings


async def main(settings: Settings) -> int:
    quiet_logging()
    try:
        lines = await stdio()
    except (OSError, ValueError) as exc:  # stdin a regular file, say
        raise UsageError(f"bosun acp talks JSON-RPC over pipes: {exc}") from None
    agent = BosunAgent(settings)
    lines.at_end = agent.stop_turns
    # The SDK answers "method not found" for what BosunAgent leaves out (fork, list, …)
    conn = AgentSideConnection(agent, lines, listening=False)  # type: ignore[arg-type]
    try:
        await conn.listen()
    finally:
        await agent.close()
        await conn.close()
    return 0
