"""A real ACP client (the SDK's client side) that drives `python -m agent acp` as a
subprocess over stdio, and records what the agent sent it."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from acp import RequestError, spawn_agent_process
from acp import schema as s

REPO = Path(__file__).resolve().parents[3]


class Recorder:
    """The editor: answers permissions with `answer`, holds unsaved `buffers` (absolute
    path -> text) when it offers fs, and records every update."""

    def __init__(self, answer: str = "allow", buffers: dict[str, str] | None = None) -> None:
        self.answer = answer
        self.buffers = buffers
        self.updates: list[Any] = []
        self.asked: list[s.ToolCallUpdate] = []
        self.written: dict[str, str] = {}
        self.reads: list[str] = []
        self.first_text = asyncio.Event()

    def kinds(self) -> list[str]:
        return [u.session_update for u in self.updates]

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(kind))

    def capabilities(self) -> s.ClientCapabilities:
        fs = self.buffers is not None
        return s.ClientCapabilities(
            fs=s.FileSystemCapabilities(read_text_file=fs, write_text_file=fs)
        )

    async def request_permission(
        self, options: list[s.PermissionOption], session_id: str, tool_call: Any, **_: Any
    ) -> s.RequestPermissionResponse:
        self.asked.append(tool_call)
        if self.answer == "cancelled":
            outcome: Any = s.DeniedOutcome(outcome="cancelled")
        else:
            outcome = s.AllowedOutcome(outcome="selected", option_id=self.answer)
        return s.RequestPermissionResponse(outcome=outcome)

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)
        if update.session_update == "agent_message_chunk":
            self.first_text.set()

    async def read_text_file(self, path: str, session_id: str, **_: Any) -> s.ReadTextFileResponse:
        self.reads.append(path)
        if self.buffers is None or path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return s.ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(
        self, content: str, path: str, session_id: str, **_: Any
    ) -> s.WriteTextFileResponse:
        self.written[path] = content
        Path(path).write_text(content, encoding="utf-8")  # and saved, as an editor would
        return s.WriteTextFileResponse()

    def on_connect(self, conn: Any) -> None:
        pass


Body = Callable[[Any], Awaitable[Any]]


def drive(
    client: Recorder,
    body: Body,
    *args: str,
    stderr: Path,
    timeout: float = 90,
) -> Any:
    """Start `bosun acp ARGS`, initialize, run `body(conn)`, close stdin; its result."""

    async def go() -> Any:
        env = {"BOSUN_HOME": os.environ["BOSUN_HOME"], "PYTHONPATH": str(REPO)}
        with stderr.open("ab") as err:
            async with spawn_agent_process(
                client,
                sys.executable,
                "-m",
                "agent",
                "acp",
                *args,
                env=env,
                cwd=REPO,
                transport_kwargs={"stderr": err},
            ) as (conn, _proc):
                init = await conn.initialize(
                    protocol_version=1, client_capabilities=client.capabilities()
                )
                assert init.agent_capabilities.load_session is True
                return await body(conn)

    return asyncio.run(asyncio.wait_for(go(), timeout))
