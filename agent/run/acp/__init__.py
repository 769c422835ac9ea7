"""`bosun acp`: bosun as an Agent Client Protocol agent, for editors (Zed and the
editors that speak ACP through it). A face like headless, batch and chat: it builds its
agents through `agent.run.assemble` and imports no other face.

The SDK (`agent-client-protocol`, the `acp` extra) is imported here only when the
command runs, so `bosun --help` and every other command stay as quick as they were.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.errors import UsageError

if TYPE_CHECKING:
    from agent.run.settings import Settings


def serve(settings: Settings) -> int:
    """Speak ACP on stdin/stdout until the editor closes stdin; the exit code (0)."""
    try:
        import acp  # noqa: F401
    except ImportError:
        raise UsageError(
            "bosun acp needs the agent-client-protocol package: pip install 'bosun[acp]'"
        ) from None
    import asyncio

    from agent.run.acp.main import main

    return asyncio.run(main(settings))
