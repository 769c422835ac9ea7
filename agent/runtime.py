"""The agent loop: run -> step -> query (model) / act (tools).

Budgets are checked before every model call; the outcome is always a `RunFinished`
event, whatever happened. Model mistakes (bad tool calls) go back to the model as
diagnostics or error results; harness failures propagate as exceptions to `run`, which
turns driver failures into status "error".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agent import events as ev
from agent.budget import Budget
from agent.cancel import Cancel
from agent.checkpoints import Checkpoints
from agent.compact import Compactor, model_summariser
from agent.errors import DriverError
from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    Reasoning,
    ToolCall,
    ToolResult,
    User,
)
from agent.permissions import DECLINED, Approver, policy_refused, refusal
from agent.profile import ModelProfile, profile_for
from agent.session import last_call_number
from agent.tools.registry import ToolContext, ToolRegistry
from agent.turn import Reply, Request, Trace, call_model
from drivers.base import Driver, Usage

INTERRUPTED_CALL = "Error: the user interrupted before this call ran"
AFTER_DECLINE = "Error: not run; the user declined an earlier call of this reply"
STOPPED_CALL = "Error: the user interrupted this call while it ran; its effect may be partial"

if TYPE_CHECKING:
    from agent.tools.sandbox import SandboxPolicy


@dataclass
class Agent:
    driver: Driver
    tools: ToolRegistry
    workspace: Path
    history: list[Message]
    emit: ev.Emit = lambda _e: None
    budget: Budget = field(default_factory=Budget)
    approve: str = "auto"
    approver: Approver | None = None  # None: nobody to ask (headless)
    on_message: Callable[[Message], None] = lambda _m: None
    trace: Trace | None = None
    # Everything model-specific: template, call format, reasoning, stops, wire remap.
    # Resolved from the driver's model when not given (tests, scripts).
    profile: ModelProfile | None = None
    # Ablations for bench/eval only (`bosun run --ablate`): with salvage off, bare JSON
    # is never taken as a call; with retain off, history keeps the raw completion,
    # markup and all, the way naive harnesses do.
    salvage: bool = True
    retain: bool = True
    # Picks the GBNF grammar for the next model call (None: unconstrained).
    constraint: Callable[[Sequence[Message]], str | None] | None = None
    cancel: Cancel = field(default_factory=Cancel)  # see agent.cancel
    compactor: Compactor | None = None  # None: the context size is unknown (no budget)
    # bash runs in bubblewrap under this policy; None: as the user, asking in auto-edit
    sandbox: SandboxPolicy | None = None
    # Files as they were before each turn's write tools ran (chat's /undo, /diff)
    checkpoints: Checkpoints | None = None

    turns: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    _format_errors: int = 0
    _recent_calls: list[str] = field(default_factory=list)
    _always: set[str] = field(default_factory=set)
    _ids: int = 0
    _final_text: str = ""
    _declined: bool = False  # the user said no: this turn ends after the reply's calls
    _refused: int = 0  # calls the approval mode kept from running (nobody to ask)
    _ran: int = 0  # calls that ran

    def __post_init__(self) -> None:
        if self.profile is None:
            self.profile = profile_for(self.driver.model)

    @property
    def model(self) -> ModelProfile:
        assert self.profile is not None  # set in __post_init__
        return self.profile

    def add(self, message: Message) -> None:
        self.history.append(message)
        self.on_message(message)

    def load(self, messages: list[Message], compactions: Sequence[dict] = ()) -> None:
        """Start over from `messages` (a new or resumed conversation, with the records
        of its compactions): call ids go on from the highest one there, and no earlier
        "always" answer carries over."""
        self.history[:] = messages
        self._ids = last_call_number(messages)
        self.set_approve(self.approve)
        if self.compactor is not None:
            self.compactor.restart(compactions)

    def set_approve(self, mode: str) -> None:
        self.approve = mode
        self._always.clear()

    @property
    def always_allowed(self) -> frozenset[str]:
        """The tools the user answered "always" for (until the mode changes)."""
        return frozenset(self._always)

    def reset(self) -> None:
        """Budgets guard one request, so each `run` (a chat's next message) starts the
        counters afresh; history, call ids and "always" answers stay. `cancel` belongs
        to whoever stops the run (a chat clears it per message; a batch shares it)."""
        self.turns = self.tool_calls = self._format_errors = 0
        self._refused = self._ran = 0
        self._declined = False
        self._recent_calls.clear()
        self._final_text = ""
        self.usage = Usage()

    def run(self, prompt: str) -> ev.RunFinished:
        """One user request, to the end; always emits and returns its RunFinished."""
        start = time.perf_counter()
        self.reset()
        status, error = "done", None
        if self.checkpoints is not None:
            self.checkpoints.new_turn()
        try:
            self.add(User(prompt))
            while not self.cancel.is_set():
                stopped = self.budget.exceeded(
                    self.turns, self.tool_calls, self._recent_calls, self._format_errors
                )
                if stopped is not None:
                    status, error = stopped
                    break
                if not self.step():
                    break
        except KeyboardInterrupt:  # a hard stop: see agent.cancel
            self.cancel.set()
        except DriverError as exc:
            status, error = "error", str(exc)
        if self.cancel.is_set():
            status, error = "interrupted", None
        elif self._declined:
            status = "declined"
        elif status == "done" and self._refused and not self._ran:
            status, error = "refused", "every tool call needed an approval nobody could give"
        result = ev.RunFinished(
            status=status,
            turns=self.turns,
            tool_calls=self.tool_calls,
            prompt_tokens=self.usage.prompt_tokens,
            cached_tokens=self.usage.cached_tokens,
            completion_tokens=self.usage.completion_tokens,
            duration_ms=round((time.perf_counter() - start) * 1000),
            final_text=self._final_text,
            error=error,
        )
        self.emit(result)
        return result

    def step(self) -> bool:
        """One model call and its consequences; False when the agent is done."""
        return self.act(self.query())

    def query(self) -> Reply:
        """One model call (agent.turn); its usage is counted and its call ids made
        unique across the session."""
        self.turns += 1
        specs = self.tools.specs()
        shown = self.compact() if self.compactor is not None else self.history
        request = Request(
            shown,
            specs,
            self.emit,
            self.budget.max_tokens,
            grammar=self.constraint(self.history) if self.constraint is not None else None,
            salvage=self.salvage,
            retain=self.retain,
            halt=self.cancel.is_set,
            trace=self.trace,
        )
        reply = call_model(self.driver, self.model, request)
        if self.compactor is not None:
            self.compactor.observe(shown, specs, reply.usage.prompt_tokens)
        if reply.interrupted:
            self.cancel.set()
        self._account(reply.usage)
        reply.calls = [self._renumber(call) for call in reply.calls]
        return reply

    def compact(self, force: bool = False) -> list[Message]:
        """The messages the model is shown, compacted first where the context needs it
        (`force`: as far as it goes, for /compact)."""
        assert self.compactor is not None
        specs, tokens = self.tools.specs(), self.compactor.summary_tokens
        summarise = model_summariser(
            self.driver, self.model, specs, self.usage, self.cancel.is_set, self.trace, tokens
        )
        event = self.compactor.fit(self.history, specs, summarise, force=force)
        if event is not None:
            self.emit(event)
        return self.compactor.view.messages(self.history)

    def _account(self, usage: Usage) -> None:
        self.usage.add(usage)
        self.emit(
            ev.TurnFinished(
                usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens, round(usage.ms)
            )
        )

    def _renumber(self, call: ToolCall) -> ToolCall:
        """Ids unique across the session (parsers number calls per completion)."""
        self._ids += 1
        prefix = "salvage-" if call.salvaged else "call_"
        return ToolCall(f"{prefix}{self._ids}", call.name, call.arguments, call.salvaged)

    def act(self, reply: Reply) -> bool:
        if self.cancel.is_set():  # none of its calls was seen through by the user
            reply.calls = []
        if reply.reasoning and (reply.prose.strip() or reply.calls):
            self.add(Reasoning(reply.reasoning))
        if reply.prose.strip():
            self.add(Assistant(reply.prose))
            self._final_text = reply.prose
        if self.cancel.is_set():
            return False
        for message in reply.diagnostics:
            self.emit(ev.Diagnostic(message))
        if not reply.calls:
            if not reply.diagnostics:
                return False
            self._format_errors += 1
            self.add(User("Your last reply had a problem: " + "; ".join(reply.diagnostics)))
            return True
        self._format_errors = 0
        for call in reply.calls:
            if self.retain:  # without retention the raw completion already shows it
                self.add(AssistantToolUse(call))
            self.emit(ev.ToolCallEvent(call.id, call.name, call.arguments, call.salvaged))
        cap = self.budget.max_tool_calls
        for call in reply.calls:
            # Every call in history gets its result, or the next prompt is invalid.
            if self.cancel.is_set():
                result = ToolResult(call.id, INTERRUPTED_CALL, True)
            elif self._declined:
                result = ToolResult(call.id, AFTER_DECLINE, True)
            elif self.tool_calls >= cap:  # a reply may hold more calls than allowed
                why = f"Error: not run; the budget of {cap} tool calls is used up"
                result = ToolResult(call.id, why, True)
            else:
                result = self._execute(call)
                if self.compactor is not None:  # cut on the way in: it must fit
                    result = self.compactor.cap(result, self.history, self.tools.specs())
                self.tool_calls += 1
                self._recent_calls.append(call.name + json.dumps(call.arguments, sort_keys=True))
            self.add(result)
            self.emit(ev.ToolResultEvent(call.id, result.is_error, result.content))
        return not self._declined  # a "no" hands control back to the user

    def _execute(self, call: ToolCall) -> ToolResult:
        """Approval first, then the tool; Ctrl-C while it runs stops it (see Cancel)."""
        tool = self.tools.get(call.name)
        try:
            refused = None
            if tool is not None:
                mode, ask, root = self.approve, self.approver, self.workspace
                sandboxed = self.sandbox is not None
                refused = refusal(mode, ask, self._always, call, tool, root, sandboxed)
        except KeyboardInterrupt:  # Ctrl-C at the question: no, and stop this turn
            self.cancel.set()
            refused = INTERRUPTED_CALL
        if refused is not None:
            self._declined = self._declined or refused.startswith(DECLINED)
            self._refused += policy_refused(refused)
            return ToolResult(call.id, refused, is_error=True)
        self._ran += 1
        path = call.arguments.get("path")
        writes = tool is not None and tool.kind == "write" and isinstance(path, str)
        if self.checkpoints is not None and writes:
            self.checkpoints.before_write(str(path))
        self.cancel.hard = True
        try:
            return self.tools.execute(call, ToolContext(self.workspace, self.sandbox))
        except KeyboardInterrupt:  # the shell tool has killed its command by now
            self.cancel.set()
            return ToolResult(call.id, STOPPED_CALL, is_error=True)
        finally:
            self.cancel.hard = False
