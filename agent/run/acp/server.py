"""`bosun acp`: the Agent Client Protocol's agent side, over stdin/stdout.

What `initialize` promises is what this module does: sessions that can be loaded again
(bosun's session files), text, resource links and embedded text resources in prompts,
the editor's MCP servers over stdio and HTTP (not SSE), and the approval modes as ACP
session modes. The model is opened once, at the first session, and shared: turns of
different sessions take it one at a time (an in-process model runs one prompt at once).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp import schema as s
from acp.helpers import update_agent_message_text

from agent import __version__
from agent.errors import HarnessError, UsageError
from agent.events import Status
from agent.run.acp.conversation import Conversation, server_specs
from agent.run.acp.outbox import Outbox
from agent.run.acp.prompt import prompt_text
from agent.run.acp.updates import plan_of, replay
from agent.run.assemble import Assembly
from agent.run.settings import Settings
from agent.session import StoredSession, load_session, new_session_id, sessions_dir
from agent.tools.permissions import APPROVE_MODES
from agent.tools.plan import plan_from_record

SESSION_ID = re.compile(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{6}")
MODES = {
    "ask": "Ask before edits, commands and MCP tools",
    "auto-edit": "Edit files unasked; ask before commands outside the sandbox",
    "auto": "Run every tool unasked",
    "read-only": "Only tools that read",
}
STOP_REASONS: dict[Status, str] = {
    Status.DONE: "end_turn",
    Status.DECLINED: "end_turn",
    Status.REFUSED: "end_turn",
    Status.MAX_TURNS: "max_turn_requests",
    Status.STUCK: "max_turn_requests",
    Status.INTERRUPTED: "cancelled",
}


def invalid(details: str) -> RequestError:
    return RequestError.invalid_params({"details": details})


def workspace_of(cwd: str) -> Path:
    """ACP's cwd: an absolute path to an existing folder (the session's workspace)."""
    path = Path(cwd)
    if "\x00" in cwd or not path.is_absolute():
        raise invalid(f"cwd must be an absolute path, not {cwd[:200]!r}")
    if not path.is_dir():
        raise invalid(f"cwd is not a folder: {cwd[:200]}")
    return path.resolve()


def stored_session(session_id: str) -> StoredSession:
    """The session file an id names; the id is checked first, so no client string
    becomes a path or a glob."""
    if not SESSION_ID.fullmatch(session_id):
        raise invalid(f"no session {session_id[:80]!r}")
    path = sessions_dir() / f"{session_id}.jsonl"
    if not path.is_file():
        raise invalid(f"no session {session_id}")
    try:
        return load_session(path)
    except (OSError, ValueError) as exc:
        raise invalid(f"session {session_id} cannot be read: {exc}") from None


class BosunAgent:
    """The SDK's `Agent`: one per connection."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.conn: Any = None
        self.client: s.ClientCapabilities | None = None
        self.assembly: Assembly | None = None
        self.conversations: dict[str, Conversation] = {}
        self._opening = asyncio.Lock()
        self._model = asyncio.Lock()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: s.ClientCapabilities | None = None,
        client_info: s.Implementation | None = None,
        **_: Any,
    ) -> s.InitializeResponse:
        self.client = client_capabilities
        return s.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=s.AgentCapabilities(
                load_session=True,
                prompt_capabilities=s.PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                mcp_capabilities=s.McpCapabilities(http=True, sse=False),
            ),
            agent_info=s.Implementation(name="bosun", title="bosun", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **_: Any) -> s.AuthenticateResponse:
        return s.AuthenticateResponse()  # nothing to sign in to: the model is local

    async def _assembly(self) -> Assembly:
        """The model (and the config's MCP servers), opened at the first session."""
        async with self._opening:
            if self.assembly is None:
                try:
                    self.assembly = await asyncio.to_thread(Assembly.open, self.settings)
                except (UsageError, HarnessError) as exc:
                    raise RequestError.internal_error({"details": str(exc)}) from None
            return self.assembly

    async def _open(
        self, cwd: str, servers: list[Any] | None, stored: StoredSession | None
    ) -> Conversation:
        workspace = workspace_of(cwd)
        assembly = await self._assembly()
        session_id = stored.id if stored is not None else new_session_id()
        old = self.conversations.pop(session_id, None)
        if old is not None:  # loaded again: the old one stops first
            await old.close()
        outbox = Outbox(self.conn, session_id, asyncio.get_running_loop())
        specs = server_specs(servers)
        try:
            conversation = await asyncio.to_thread(
                Conversation, assembly, workspace, outbox, specs, stored, self.client
            )
        except (UsageError, HarnessError) as exc:
            outbox.close()
            raise RequestError.internal_error({"details": str(exc)}) from None
        self.conversations[session_id] = conversation
        return conversation

    def _modes(self, conversation: Conversation) -> s.SessionModeState:
        return s.SessionModeState(
            current_mode_id=conversation.agent.approve,
            available_modes=[
                s.SessionMode(id=mode, name=mode, description=MODES[mode]) for mode in APPROVE_MODES
            ],
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> s.NewSessionResponse:
        conversation = await self._open(cwd, mcp_servers, None)
        return s.NewSessionResponse(session_id=conversation.id, modes=self._modes(conversation))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> s.LoadSessionResponse:
        """The stored conversation, replayed to the editor before the answer (as the
        protocol asks), then continued with its history as the model saw it."""
        stored = stored_session(session_id)
        conversation = await self._open(cwd, mcp_servers, stored)
        agent = conversation.agent
        for update in replay(agent.history, agent.tools, conversation.context):
            conversation.outbox.put(update)
        plan = plan_from_record(stored.plan)
        if plan is not None:
            conversation.outbox.put(plan_of(plan))
        await conversation.outbox.flushed()
        return s.LoadSessionResponse(modes=self._modes(conversation))

    async def set_session_mode(
        self, mode_id: str, session_id: str, **_: Any
    ) -> s.SetSessionModeResponse:
        conversation = self._conversation(session_id)
        if mode_id not in APPROVE_MODES:
            raise invalid(f"unknown mode {mode_id[:40]!r} (modes: {', '.join(APPROVE_MODES)})")
        conversation.agent.set_approve(mode_id)
        return s.SetSessionModeResponse()

    def _conversation(self, session_id: str) -> Conversation:
        conversation = self.conversations.get(session_id)
        if conversation is None:
            raise invalid(f"no session {session_id[:80]!r} on this connection")
        return conversation

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> s.PromptResponse:
        conversation = self._conversation(session_id)
        if conversation.busy:
            raise RequestError.invalid_request(
                {"details": "a prompt is already running in this session"}
            )
        text, attached = prompt_text(prompt, conversation.workspace)
        conversation.busy = True
        conversation.agent.cancel.clear()  # before waiting: a cancel meanwhile counts
        try:
            async with self._model:
                result = await asyncio.to_thread(conversation.send, text, attached)
            if result.error and result.status != Status.ERROR:
                conversation.outbox.put(update_agent_message_text(f"\n\nbosun: {result.error}"))
            await conversation.outbox.flushed()
        finally:
            conversation.busy = False
        if result.status == Status.ERROR:
            raise RequestError.internal_error({"details": result.error or "the request failed"})
        return s.PromptResponse(stop_reason=STOP_REASONS.get(result.status, "end_turn"))  # type: ignore[arg-type]

    async def cancel(self, session_id: str, **_: Any) -> None:
        """bosun's one cancel: the stream stops at the next token, a question to the
        editor is withdrawn, the loop ends at its next safe point."""
        conversation = self.conversations.get(session_id)
        if conversation is not None:
            conversation.agent.cancel.set()

    def stop_turns(self) -> None:
        """The editor is gone: every turn in flight is cancelled, so it can answer."""
        for conversation in self.conversations.values():
            conversation.agent.cancel.set()

    async def close(self) -> None:
        for conversation in list(self.conversations.values()):
            await conversation.close()
        self.conversations.clear()
        if self.assembly is not None:
            await asyncio.to_thread(self.assembly.close)
