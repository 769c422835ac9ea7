"""One ACP session: a bosun Agent on the shared model, its session file, the editor's
MCP servers, and the bridges that let the editor see and answer what the agent does.

Built through `agent.run.assemble` like every face; an ACP session id is a bosun
session id, so `session/load` (and `bosun chat --resume ID`) find the same file.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from acp import schema as s

from agent import events as ev
from agent.errors import UsageError
from agent.events import Status
from agent.history import ToolCall, ToolResult
from agent.loop.runtime import INTERRUPTED_CALL, Agent
from agent.mcp.connection import warn
from agent.mcp.hub import Hub
from agent.mcp.servers import ServerSpec, server_spec
from agent.mcp.session import begin_hub, finish_hub
from agent.run.acp.files import EditorFiles
from agent.run.acp.outbox import Outbox
from agent.run.acp.permissions import editor_approver
from agent.run.acp.updates import finished, of_event, started
from agent.run.assemble import Assembly, recording, start_session
from agent.session import LOST_CALL, SessionLog, StoredSession, unanswered_calls
from agent.tools import KNOWN, ToolContext
from agent.tools.checkpoints import Checkpoints

FROM_EDITOR = "the editor (ACP)"


def server_specs(servers: Sequence[Any] | None) -> list[ServerSpec]:
    """The editor's MCP servers as bosun's own (the user's: they ask unless `auto`);
    one it names that bosun cannot start (SSE, HTTP headers) is reported and left out."""
    specs: list[ServerSpec] = []
    taken: set[str] = set()
    for server in servers or ():
        name = re.sub(r"[^A-Za-z0-9_-]", "_", str(server.name))[:28] or "server"
        while name in taken:
            name += "_"
        table: dict[str, Any]
        if isinstance(server, s.McpServerStdio):
            table = {
                "command": server.command,
                "args": list(server.args),
                "env": {e.name: e.value for e in server.env},
            }
        elif isinstance(server, s.HttpMcpServer) and not server.headers:
            table = {"url": server.url}
        else:
            warn(f"MCP server {name}: SSE servers and HTTP headers are not supported; left out")
            continue
        try:
            specs.append(server_spec(name, table, FROM_EDITOR, "user"))
        except UsageError as exc:
            warn(f"MCP server {name}: {exc}; left out")
            continue
        taken.add(name)
    return specs


class Conversation:
    """An ACP session, from `session/new` or `session/load` to the connection's end."""

    def __init__(
        self,
        assembly: Assembly,
        workspace: Path,
        outbox: Outbox,
        servers: Sequence[ServerSpec],
        stored: StoredSession | None,
        client: s.ClientCapabilities | None,
    ) -> None:
        """Blocking (MCP servers start, the session file opens): run in a thread."""
        self.outbox = outbox
        self.busy = False
        self.diffs: dict[str, list[Any]] = {}  # a call's diff, shown again with its result
        settings = assembly.settings.but(workspace=workspace)
        shared = [t.name for t in assembly.hub.tools()] if assembly.hub is not None else []
        self.hub: Hub | None = begin_hub(
            list(servers), workspace, reserved=[*(t.name for t in KNOWN), *shared]
        )
        if self.hub is not None:
            finish_hub(self.hub)
        session_id = stored.id if stored is not None else outbox.session_id
        folder = stored.path.parent if stored is not None else None
        self.log = SessionLog(session_id, folder)
        self.agent: Agent = assembly.agent(
            recording(lambda: self.log, self._show),
            on_message=self.log.message,
            settings=settings,
            extra_tools=self.hub.tools() if self.hub is not None else (),
        )
        agent = self.agent
        fs = client.fs if client is not None else None
        if fs is not None and (fs.read_text_file or fs.write_text_file):
            agent.gate.editor = EditorFiles(
                outbox, agent.cancel, read=bool(fs.read_text_file), write=bool(fs.write_text_file)
            )
        agent.approver = editor_approver(outbox, agent.tools, self.context, agent.cancel)
        agent.checkpoints = Checkpoints(
            workspace, session_id, shell=True, max_mb=settings.checkpoint_max_mb
        )
        if stored is None:
            start_session(agent, session_id)
        else:
            start_session(agent, session_id, stored.messages, stored.compactions)
            self._answer(LOST_CALL)

    @property
    def id(self) -> str:
        return self.log.id

    @property
    def workspace(self) -> Path:
        return self.agent.workspace

    @property
    def context(self) -> ToolContext:
        """What the tools see (read lazily: the editor bridge is set after the agent)."""
        agent = self.agent
        return ToolContext(agent.workspace, agent.sandbox, agent.gate.editor)

    def _show(self, event: ev.AgentEvent) -> None:
        """Every event the agent emits, as the editor's updates (in the worker thread)."""
        if isinstance(event, ev.ToolCallEvent):
            call = ToolCall(event.id, event.name, event.arguments, event.salvaged)
            update = started(call, self.agent.tools, self.context)
            self.diffs[call.id] = list(update.content or [])
            self.outbox.put(update)
        elif isinstance(event, ev.ToolResultEvent):
            diff = self.diffs.pop(event.id, [])
            self.outbox.put(finished(event.id, event.is_error, event.content, diff))
        elif (update := of_event(event)) is not None:
            self.outbox.put(update)

    def _answer(self, content: str) -> None:
        """Calls left without a result get one, or the next prompt would be invalid."""
        for call in unanswered_calls(self.agent.history):
            self.agent.add(ToolResult(call.id, content, is_error=True))

    def send(self, prompt: str, attached: bool = False) -> ev.RunFinished:
        """One prompt turn, to the end (blocking: the worker thread's). The cancel was
        cleared by the caller before the turn was queued, so a cancel that comes while
        it waits for the model still counts. `attached`: the prompt carries files."""
        result: ev.RunFinished | None = None
        try:
            result = self.agent.run(prompt, attached=attached)
        except KeyboardInterrupt:  # a stop outside the loop's own safe points
            self.agent.cancel.set()
        self._answer(INTERRUPTED_CALL)
        if result is None:
            result = ev.RunFinished.of(Status.INTERRUPTED)
            self.agent.emit(result)
        return result

    async def close(self) -> None:
        self.agent.cancel.set()
        await asyncio.to_thread(self._close)
        self.outbox.close()

    def _close(self) -> None:
        self.log.close()
        if self.hub is not None:
            self.hub.close()
