"""The runs behind `bosun mcp serve`: one request in a workspace, from arguments a peer
sent to a `result`, in a worker thread. The MCP side (agent.run.mcp_serve) only turns
this into tool results; everything here is plain Python, so it is tested the same way.

A peer is untrusted: a workspace that does not exist, an approve mode this server does
not allow, a session id nobody knows or a prompt of megabytes is a `RefusedCall` (a tool
error for the caller), never an exception that reaches the server loop.

Runs on one model take turns: they share one driver, and the in-process llama driver
has one KV cache (a server's `max_concurrency` says how many may share it at once).
A run that has to wait says so through `progress`; runs on other models go at once.

A caller may name any model, and an open model holds its weights and KV cache in memory,
so at most `max_models` are open at once (MAX_MODELS: the server's own and one other).
The server's own stays open once opened; another is closed, least recently used first,
when a model not open is asked for and it has no run. A call that would need more open
models than that, all busy, is refused (try again, or use the server's model) rather
than queued behind runs of other models or allowed to load one more.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.errors import HarnessError, UsageError
from agent.history import ToolResult
from agent.loop.cancel import Cancel
from agent.run.assemble import Assembly, check_workspace, recording, start_session
from agent.run.config import looser_approval
from agent.run.settings import Settings
from agent.session import (
    SessionLog,
    load_session,
    new_session_id,
    session_path,
    unanswered_calls,
)
from agent.tools.checkpoints import Checkpoints
from agent.tools.permissions import APPROVE_MODES

MAX_PROMPT_CHARS = 256 * 1024  # a prompt past this is refused, not sent to a model
MAX_ID_CHARS = 200
MAX_MODELS = 2  # models open at once: the server's own and one a caller named
LOST_CALL = "Error: bosun stopped before this call finished; its effect is unknown"
Progress = Callable[[str], None]


class RefusedCall(Exception):
    """What the caller asked for cannot run; the message is the tool error it gets."""


@dataclass(frozen=True)
class Outcome:
    """What a tool call answers: the run's result and the session to continue."""

    status: str
    final_text: str
    session_id: str
    turns: int = 0
    tool_calls: int = 0
    error: str | None = None

    @classmethod
    def of(cls, result: ev.RunFinished, session_id: str) -> Outcome:
        return cls(
            str(result.status),
            result.final_text,
            session_id,
            result.turns,
            result.tool_calls,
            result.error,
        )


def check_prompt(prompt: str) -> str:
    if not isinstance(prompt, str) or not prompt.strip():
        raise RefusedCall("the prompt is empty")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise RefusedCall(
            f"the prompt is {len(prompt):,} characters; at most {MAX_PROMPT_CHARS:,} are taken"
        )
    if "\x00" in prompt:
        raise RefusedCall("the prompt holds a NUL character")
    return prompt


@dataclass
class _Seat:
    """One model's assembly and the turns taken on it."""

    assembly: Assembly
    slots: threading.Semaphore
    users: int = 0  # runs handed this seat and not done: it is not closed under them


class Runs:
    """Every run this server makes: the models it opened (one assembly each, opened on
    first use, at most `max_models` at once) and the ceiling on approval its user set
    (`base.approve`)."""

    def __init__(
        self,
        base: Settings,
        open_assembly: Callable[[Settings], Assembly],
        max_models: int = MAX_MODELS,
    ) -> None:
        self.base = base
        self._open = open_assembly
        self.max_models = max(1, max_models)
        self._seats: OrderedDict[str, _Seat] = OrderedDict()  # least recently used first
        self._running: set[str] = set()  # sessions a run is writing now
        self._lock = threading.Lock()

    def settings_for(
        self, workspace: str | None, approve: str | None, model: str | None
    ) -> Settings:
        """The caller's choices, checked: its workspace, an approve mode no looser than
        this server's, a model (this server's when it names none)."""
        changes: dict[str, Any] = {}
        if workspace is not None:
            if not isinstance(workspace, str) or not workspace.strip() or "\x00" in workspace:
                raise RefusedCall("workspace must be a folder path")
            try:
                changes["workspace"] = check_workspace(Path(workspace).expanduser())
            except (UsageError, OSError) as exc:
                raise RefusedCall(str(exc)) from None
        if approve is not None:
            if approve not in APPROVE_MODES:
                raise RefusedCall(f"approve must be one of {', '.join(APPROVE_MODES)}")
            if looser_approval(approve, self.base.approve):
                raise RefusedCall(
                    f"approve {approve!r} is looser than this server allows"
                    f" ({self.base.approve!r}; start it with --approve {approve})"
                )
            changes["approve"] = approve
        if model is not None:
            if not isinstance(model, str) or not model.strip() or len(model) > 4096:
                raise RefusedCall("model must be a model name, path or openai:URL#NAME")
            changes["model"] = model.strip()
            if changes["model"] != self.base.model:  # the caller's: a server it names
                changes["workspace_model"] = changes["model"]  # never gets the user's key
        return self.base.but(**changes)

    def _seat(self, settings: Settings) -> _Seat:
        """The model's assembly, opened once (under the lock: two first calls on one
        model must not load it twice), and counted as in use until `_leave`. Opening one
        more than `max_models` closes the least recently used idle one first."""
        model = settings.model
        with self._lock:
            seat = self._seats.get(model)
            if seat is None:
                self._make_room(model)
                try:
                    chosen = self.base.but(model=model, workspace_model=settings.workspace_model)
                    assembly = self._open(chosen)
                except HarnessError as exc:
                    raise RefusedCall(f"cannot open model {model}: {exc}") from None
                slots = max(1, assembly.driver.info.max_concurrency)
                seat = self._seats[model] = _Seat(assembly, threading.Semaphore(slots))
            self._seats.move_to_end(model)
            seat.users += 1
            return seat

    def _make_room(self, model: str) -> None:
        """Close idle models (least recently used first; the server's own only where it
        is the one model kept) until one more fits; RefusedCall when every open one is
        running (held: the lock)."""
        pinned = self.base.model if self.max_models > 1 else None
        while len(self._seats) >= self.max_models:
            idle = [n for n, seat in self._seats.items() if seat.users == 0 and n != pinned]
            if not idle:
                open_now = ", ".join(self._seats)
                raise RefusedCall(
                    f"cannot open model {model}: this server keeps at most"
                    f" {self.max_models} models open and all are running ({open_now});"
                    f" try again when a run ends, or use the server's model ({self.base.model})"
                )
            closing = self._seats.pop(idle[0]).assembly
            with contextlib.suppress(Exception):  # its failure is not this call's
                closing.close()

    def _leave(self, seat: _Seat) -> None:
        with self._lock:
            seat.users -= 1

    def run(
        self,
        settings: Settings,
        prompt: str,
        cancel: Cancel,
        progress: Progress,
        session_id: str | None = None,
    ) -> Outcome:
        """One request on `settings.model`: a new session, or `session_id` continued in
        its own file; waits its turn on the model, stops when `cancel` is set."""
        prompt = check_prompt(prompt)
        stored = self._stored(session_id) if session_id is not None else None
        if stored is not None and stored.workspace:
            try:
                settings = settings.but(workspace=check_workspace(Path(stored.workspace)))
            except UsageError as exc:
                raise RefusedCall(f"session {stored.id}: {exc}") from None
        if stored is not None:
            with self._lock:
                if stored.id in self._running:  # two runs appending to one file
                    raise RefusedCall(f"session {stored.id} is running; wait for its result")
                self._running.add(stored.id)
        try:
            return self._take_turn(settings, prompt, cancel, progress, stored)
        finally:
            if stored is not None:
                with self._lock:
                    self._running.discard(stored.id)

    def _take_turn(
        self, settings: Settings, prompt: str, cancel: Cancel, progress: Progress, stored: Any
    ) -> Outcome:
        seat = self._seat(settings)
        try:
            if not seat.slots.acquire(blocking=False):
                progress(f"queued: another run is using {settings.model}")
                while not seat.slots.acquire(timeout=0.1):
                    if cancel.is_set():
                        sid = stored.id if stored is not None else ""
                        return Outcome.of(ev.RunFinished.of(ev.Status.INTERRUPTED), sid)
            try:
                return self._run(seat.assembly, settings, prompt, cancel, progress, stored)
            finally:
                seat.slots.release()
        finally:
            self._leave(seat)

    def _stored(self, session_id: str) -> Any:
        if not isinstance(session_id, str) or not session_id.strip():
            raise RefusedCall("session_id is empty")
        if len(session_id) > MAX_ID_CHARS or not session_id.replace("-", "").isalnum():
            raise RefusedCall(f"no session {session_id[:MAX_ID_CHARS]!r}")
        try:
            return load_session(session_path(session_id))
        except UsageError as exc:
            raise RefusedCall(str(exc)) from None
        except (OSError, ValueError) as exc:
            raise RefusedCall(f"session {session_id} cannot be read: {exc}") from None

    def _run(
        self,
        assembly: Assembly,
        settings: Settings,
        prompt: str,
        cancel: Cancel,
        progress: Progress,
        stored: Any,
    ) -> Outcome:
        session_id = stored.id if stored is not None else new_session_id()
        with self._lock:  # before its file exists: a continue of it waits for the result
            self._running.add(session_id)
        try:
            log = SessionLog(session_id, stored.path.parent if stored is not None else None)
        except BaseException:
            with self._lock:
                self._running.discard(session_id)
            raise
        try:
            agent = assembly.agent(
                recording(lambda: log, reporter(progress)),
                on_message=log.message,
                settings=settings,
                cancel=cancel,
            )
            agent.checkpoints = Checkpoints(
                settings.workspace, log.id, shell=True, max_mb=settings.checkpoint_max_mb
            )
            try:
                if stored is None:
                    start_session(agent, log.id)
                else:
                    start_session(agent, stored.id, stored.messages, stored.compactions)
                    for call in unanswered_calls(agent.history):
                        agent.add(ToolResult(call.id, LOST_CALL, is_error=True))
            except HarnessError as exc:
                return Outcome.of(ev.RunFinished.of(ev.Status.ERROR, error=str(exc)), log.id)
            result = agent.run(prompt)
            for call in unanswered_calls(agent.history):  # stopped hard mid-call
                agent.add(ToolResult(call.id, LOST_CALL, is_error=True))
            return Outcome.of(result, log.id)
        finally:
            assembly.release(log.id)
            log.close()
            with self._lock:
                self._running.discard(log.id)

    def close(self) -> None:
        with self._lock:
            seats, self._seats = list(self._seats.values()), OrderedDict()
        for seat in seats:
            seat.assembly.close()


def reporter(progress: Progress) -> ev.Emit:
    """The events a caller is shown while it waits: each model call and tool call."""

    def emit(event: ev.AgentEvent) -> None:
        if isinstance(event, ev.TurnFinished):
            progress(f"model call: {event.prompt_tokens} tokens in, {event.completion_tokens} out")
        elif isinstance(event, ev.ToolCallEvent):
            progress(f"tool call: {event.name}")
        elif isinstance(event, ev.ToolResultEvent):
            progress(f"tool result: {'error' if event.is_error else 'ok'}")
        elif isinstance(event, ev.Compaction):
            progress(event.line())

    return emit
