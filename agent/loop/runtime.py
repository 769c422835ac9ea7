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
from agent.errors import HarnessError
from agent.events import Status
from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    Reasoning,
    ToolCall,
    ToolResult,
    User,
)
from agent.loop.budget import Budget
from agent.loop.cancel import Cancel
from agent.loop.checks import Checks
from agent.loop.compact import Compactor, model_summariser
from agent.loop.overflow import ask, text_calls_said
from agent.loop.repomap import PromptMap, with_map
from agent.loop.turn import Query, Reply, Trace
from agent.protocol.profile import ModelProfile
from agent.session import last_call_number
from agent.tools.checkpoints import Checkpoints, may_change_files
from agent.tools.hooks import HookBlocked
from agent.tools.orchestrator import INTERRUPTED_CALL, Gate, run_call
from agent.tools.permissions import Approver, refused_run
from agent.tools.registry import ToolRegistry
from drivers.base import Driver, Usage

if TYPE_CHECKING:
    from agent.tools.sandbox import SandboxPolicy

__all__ = ["INTERRUPTED_CALL", "Agent", "RunState", "Seat"]

AFTER_DECLINE = "Error: not run; the user declined an earlier call of this reply"
AFTER_REDIRECT = (
    "Error: not run; the user declined an earlier call of this reply and said what to do instead"
)

Constraint = Callable[[Sequence[Message]], str | None]


@dataclass
class Seat:
    """The model an agent talks to, as one thing: its driver, its profile (template,
    call format, reasoning, stops, wire remap), the grammar it is held to and its context
    budget. Switching models is one assignment of a new seat."""

    driver: Driver
    profile: ModelProfile
    # Picks the GBNF grammar for the next model call (None: unconstrained).
    constraint: Constraint | None = None
    compactor: Compactor | None = None  # None: the context size is unknown (no budget)


@dataclass
class RunState:
    """The counters of one user request; the next request starts with a new one."""

    turns: int = 0  # model calls
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    format_errors: int = 0
    recent_calls: list[str] = field(default_factory=list)
    final_text: str = ""
    declined: bool = False  # the user said no: this request ends after the reply's calls
    refused: int = 0  # calls the approval mode kept from running (nobody to ask)
    ran: int = 0  # calls that ran
    edited: set[str] = field(default_factory=set)  # files written since the last test run
    test_runs: int = 0  # the lint/test loop's (agent.loop.checks)


@dataclass
class Agent:
    seat: Seat
    tools: ToolRegistry
    workspace: Path
    history: list[Message]
    emit: ev.Emit = lambda _e: None
    budget: Budget = field(default_factory=Budget)
    gate: Gate = field(default_factory=Gate)  # approve mode, who asks, bash's sandbox
    on_message: Callable[[Message], None] = lambda _m: None
    trace: Trace | None = None
    # Ablations for bench/eval only (`bosun run --ablate`): with salvage off, bare JSON
    # is never taken as a call; with retain off, history keeps the raw completion,
    # markup and all, the way naive harnesses do.
    salvage: bool = True
    retain: bool = True
    cancel: Cancel = field(default_factory=Cancel)  # see agent.loop.cancel
    # Files as they were before each request's write tools ran (chat's /undo, /diff)
    checkpoints: Checkpoints | None = None
    checks: Checks | None = None  # lint after edits, tests at the end (agent.loop.checks)
    repo_map: PromptMap | None = None  # the map appended to a request (agent.loop.repomap)
    state: RunState = field(default_factory=RunState)
    _ids: int = 0
    _told: set[str] = field(default_factory=set)

    @property
    def driver(self) -> Driver:
        return self.seat.driver

    @property
    def profile(self) -> ModelProfile:
        return self.seat.profile

    @property
    def compactor(self) -> Compactor | None:
        return self.seat.compactor

    @property
    def approve(self) -> str:
        return self.gate.approve

    @property
    def approver(self) -> Approver | None:
        return self.gate.approver

    @approver.setter
    def approver(self, approver: Approver | None) -> None:
        self.gate.approver = approver

    @property
    def sandbox(self) -> SandboxPolicy | None:
        return self.gate.sandbox

    @sandbox.setter
    def sandbox(self, policy: SandboxPolicy | None) -> None:
        """bash in (a policy) or out of (None) the sandbox; "always" answers are reset."""
        self.gate.sandbox = policy
        self.gate.reset()

    def add(self, message: Message) -> None:
        self.history.append(message)
        self.on_message(message)

    def load(self, messages: list[Message], compactions: Sequence[dict] = ()) -> None:
        """Start over from `messages` (a new or resumed conversation, with the records
        of its compactions): call ids go on from the highest one there, and no earlier
        "always" answer carries over."""
        self.history[:] = messages
        self._ids = last_call_number(messages)
        self.gate.reset()
        if self.compactor is not None:
            self.compactor.restart(compactions)
        if self.repo_map is not None:  # a new conversation has not seen any map
            self.repo_map.forget()

    def set_approve(self, mode: str) -> None:
        self.gate.approve = mode
        self.gate.reset()

    @property
    def always_allowed(self) -> frozenset[str]:
        """The tools the user answered "always" for (until the mode changes)."""
        return frozenset(self.gate.always or ())

    def run(self, prompt: str, *, attached: bool = False) -> ev.RunFinished:
        """One user request, to the end; always emits and returns its RunFinished.
        `attached`: the prompt carries its material (see `User.attached`)."""
        start = time.perf_counter()
        # Budgets guard one request: counters start afresh, while history, call ids and
        # "always" answers stay. `cancel` belongs to whoever stops the run (a chat clears
        # it per message; a batch shares it).
        self.state = state = RunState()
        status, error = Status.DONE, None
        self._checkpoint(prompt)
        hooks = self.gate.hooks
        try:
            text = hooks.prompt(prompt) if hooks else prompt
            if self.repo_map is not None:  # after the stable head, at a request's start
                text = with_map(text, self.repo_map.note(prompt, self.history))
            self.add(User(text, attached))
            while not self.cancel.is_set():
                stopped = self.budget.exceeded(
                    state.turns, state.tool_calls, state.recent_calls, state.format_errors
                )
                if stopped is not None:
                    status, error = stopped
                    break
                if self.step():
                    continue
                if self.checks is not None and self.checks.retest(self):
                    continue  # the tests failed: their output went to the model
                if hooks and hooks.go_on(self.add, self.cancel, state):
                    continue  # a Stop hook sent the model back to work
                break
        except HookBlocked as exc:  # UserPromptSubmit: the model never sees the request
            status, error = Status.REFUSED, str(exc)
        except KeyboardInterrupt:  # a hard stop: see agent.loop.cancel
            self.cancel.set()
        except HarnessError as exc:  # a backend, a file that cannot be written, …
            status, error = Status.ERROR, str(exc)
        if self.cancel.is_set():
            status, error = Status.INTERRUPTED, None
        elif state.declined:
            status = Status.DECLINED
        elif status == Status.DONE and state.refused and not state.ran:
            status, error = Status.REFUSED, refused_run(self.gate.approve)
        self._checkpoint(None)
        ms = round((time.perf_counter() - start) * 1000)
        result = ev.RunFinished.of(status, state, ms, state.final_text, error)
        self.emit(result)
        return result

    def _checkpoint(self, prompt: str | None) -> None:
        """Snapshots before a request (its prompt) and after it (None), and what they say."""
        if self.checkpoints is not None:
            writes = may_change_files(self.tools, self.gate.approve, self.sandbox is not None)
            for notice in self.checkpoints.around(prompt, writes, len(self.history)):
                self.emit(ev.Diagnostic(notice))

    def step(self) -> bool:
        """One model call and its consequences; False when the agent is done."""
        return self.act(self.query())

    def query(self) -> Reply:
        """One model call (agent.loop.turn); its usage is counted and its call ids made
        unique across the session."""
        self.state.turns += 1
        specs = self.tools.specs()
        shown = self.compact() if self.compactor is not None else self.history
        request = Query(
            shown,
            specs,
            self.emit,
            self.budget.max_tokens,
            grammar=self.seat.constraint(self.history) if self.seat.constraint else None,
            salvage=self.salvage,
            retain=self.retain,
            halt=self.cancel.is_set,
            trace=self.trace,
        )
        reply = self._ask(request)
        if reply.text_calls:
            self._tell("text calls", text_calls_said(self.driver.info.server, self.profile))
        if reply.interrupted:
            self.cancel.set()
        self.account(reply.usage, reply)
        reply.calls = [self._renumber(call) for call in reply.calls]
        return reply

    def _ask(self, request: Query) -> Reply:
        return ask(self, request)

    def observe(self, request: Query, reply: Reply) -> None:
        """What the backend counted, for the budget; a warning it gives is said once."""
        assert self.compactor is not None
        info = self.driver.info
        real = reply.usage.prompt_tokens
        warning = self.compactor.observe(
            request.history, request.specs, real, chat=info.chat, served=info.server_counts
        )
        if warning is not None:
            self._tell("tools left out", warning)

    def _tell(self, kind: str, notice: str) -> None:
        """A diagnostic about the server, said once a session (per `kind`): the server
        stays as it is, and saying it every turn would bury the conversation."""
        if kind not in self._told:
            self._told.add(kind)
            self.emit(ev.Diagnostic(notice))

    def compact(self, force: bool = False) -> list[Message]:
        """The messages the model is shown, compacted first where the context needs it
        (`force`: as far as it goes, for /compact)."""
        assert self.compactor is not None
        self.fit(force)
        return self.compactor.view.messages(self.history)

    def fit(self, force: bool) -> ev.Compaction | None:
        """Compact where needed (`force`: as far as it goes); the event, if it did."""
        assert self.compactor is not None
        specs, tokens = self.tools.specs(), self.compactor.summary_tokens
        summarise = model_summariser(
            self.driver,
            self.profile,
            specs,
            self.state.usage,
            self.cancel.is_set,
            self.trace,
            tokens,
        )
        hooks = self.gate.hooks  # PreCompact, told once a compaction is due
        due = hooks.pre_compact if hooks else None
        event = self.compactor.fit(self.history, specs, summarise, force=force, due=due)
        if event is not None:
            self.emit(event)
        return event

    def account(self, usage: Usage, reply: Reply | None = None) -> None:
        self.state.usage.add(usage)
        self.emit(
            ev.TurnFinished(
                usage.prompt_tokens,
                usage.cached_tokens,
                usage.completion_tokens,
                round(usage.ms),
                self.driver.model,
                reply.finish if reply is not None else "",
                reply.ttft_ms if reply is not None else None,
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
        state = self.state
        if reply.prose.strip():
            self.add(Assistant(reply.prose))
            state.final_text = reply.prose
        if self.cancel.is_set():
            return False
        for message in reply.diagnostics:
            self.emit(ev.ReplyProblem(message))
        if not reply.calls:
            if not reply.diagnostics:
                return False
            state.format_errors += 1
            self.add(User("Your last reply had a problem: " + "; ".join(reply.diagnostics)))
            return True
        state.format_errors = 0
        for call in reply.calls:
            if self.retain:  # without retention the raw completion already shows it
                self.add(AssistantToolUse(call))
            self.emit(ev.ToolCallEvent(call.id, call.name, call.arguments, call.salvaged))
        cap = self.budget.max_tool_calls
        redirected = False  # a "no, do this instead": the reply's other calls wait
        for call in reply.calls:
            # Every call in history gets its result, or the next prompt is invalid.
            began, decision = time.perf_counter(), "not_run"
            if self.cancel.is_set():
                result = ToolResult(call.id, INTERRUPTED_CALL, True)
            elif state.declined:
                result = ToolResult(call.id, AFTER_DECLINE, True)
            elif redirected:
                result = ToolResult(call.id, AFTER_REDIRECT, True)
            elif state.tool_calls >= cap:  # a reply may hold more calls than allowed
                why = f"Error: not run; the budget of {cap} tool calls is used up"
                result = ToolResult(call.id, why, True)
            else:
                result, redirected, decision = self._execute(call)
                if self.compactor is not None:  # cut on the way in: it must fit
                    result = self.compactor.cap(result, self.history, self.tools.specs())
                state.tool_calls += 1
                state.recent_calls.append(call.name + json.dumps(call.arguments, sort_keys=True))
            self.add(result)
            ms = round((time.perf_counter() - began) * 1000)
            self.emit(
                ev.ToolResultEvent(
                    call.id, result.is_error, result.content, call.name, ms, decision
                )
            )
            if (report := self.tools.reported(call, result)) is not None:
                self.emit(report)  # update_plan's plan
        return not state.declined  # a "no" hands control back to the user

    def _execute(self, call: ToolCall) -> tuple[ToolResult, bool, str]:
        """The call through the tools' gate (agent.tools.orchestrator); counted here.
        True with it: the user declined it and said what to do instead; then what the
        gate decided (ToolResultEvent.decision)."""
        outcome = run_call(
            call,
            self.tools,
            self.workspace,
            self.gate,
            self.checkpoints,
            self.cancel.hard_stop,
            stop=self.cancel,
        )
        state = self.state
        state.declined = state.declined or outcome.declined
        state.refused += outcome.refused
        state.ran += outcome.ran
        if outcome.interrupted:
            self.cancel.set()
        decision = outcome.decision
        if self.checks is not None and outcome.ran:
            result = self.checks.after_call(self, call, outcome.result)
            return result, outcome.redirected, decision
        return outcome.result, outcome.redirected, decision
