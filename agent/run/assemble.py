"""Where a run is put together: the MCP hub started, the model opened into a driver and
its profile, an Agent built around them on a seat, a session started, and all of it torn
down again. `bosun run`, each `--tasks` task and `bosun chat` come through here, and none
of them imports another, so the three cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.errors import SessionWriteError, UsageError
from agent.history import Message
from agent.loop.budget import Budget
from agent.loop.cancel import Cancel
from agent.loop.checks import Checks
from agent.loop.compact import Compactor
from agent.loop.constraint import constraint_for
from agent.loop.context import Counter, Limits, View
from agent.loop.repomap import PromptMap, auto_budget
from agent.loop.runtime import Agent, Seat
from agent.mcp.connection import warn
from agent.mcp.hub import Hub
from agent.mcp.session import Ask, begin_hub, finish_hub
from agent.protocol.profile import ModelProfile
from agent.run.hooks import AskHooks, HookTrust, SessionTrust
from agent.run.models import open_model, profile_of
from agent.run.settings import Settings
from agent.run.system_prompt import system_message
from agent.run.telemetry import Telemetry, open_telemetry
from agent.session import SessionLog
from agent.tools import KNOWN, Tool, ToolRegistry, default_registry
from agent.tools.hooks import Hooks, HookSpec
from agent.tools.orchestrator import Gate
from agent.tools.permissions import Approver
from agent.tools.skill import find_skills
from agent.untrusted import json_line
from drivers.base import Driver

Trace = Callable[[dict[str, Any]], None]


def check_workspace(path: Path) -> Path:
    if not path.exists():
        raise UsageError(f"workspace does not exist: {path}")
    if not path.is_dir():
        raise UsageError(f"workspace is not a directory: {path}")
    return path.resolve()


def trace_writer(path: Path) -> Trace:
    """Append one JSON line per model call; the file is opened per write so a crash
    leaves every completed call on disk."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.open("a", encoding="utf-8").close()
    except OSError as exc:
        raise UsageError(f"cannot write trace file {path}: {exc.strerror}") from None

    def write(record: dict[str, Any]) -> None:
        try:
            with path.open("a", encoding="utf-8") as fh:
                fh.write(json_line(record) + "\n")
        except OSError as exc:  # a full disk: the run ends as an error, with its result
            raise SessionWriteError(
                f"cannot write the trace file {path}: {exc.strerror or exc}"
            ) from None

    return write


def session_event(agent: Agent, session_id: str) -> ev.SessionStarted:
    """The session line: with the context window in force and where it came from (the
    flag, the model file, a server's own word), as `/model` says it too."""
    n_ctx, source = context_in_force(agent)
    return ev.SessionStarted(session_id, agent.driver.model, str(agent.workspace), n_ctx, source)


def context_in_force(agent: Agent) -> tuple[int | None, str]:
    compactor = agent.compactor
    if compactor is None:
        return None, "unknown"
    return compactor.limits.n_ctx, compactor.limits.source


def compactor_for(
    driver: Driver,
    context_size: int | None,
    compact_at: float | None,
    view: View | None = None,
) -> Compactor | None:
    """The context budget for this backend: the one the user gave, else the backend's
    own (the in-process model's, or what a server said); none when neither is known."""
    n_ctx = context_size or driver.info.n_ctx
    if not n_ctx:
        return None
    source = "--context-size" if context_size else driver.info.context_source or "the model"
    at = compact_at if compact_at is not None else Limits.compact_at
    limits = Limits(n_ctx, at, source=source)
    return Compactor(limits, Counter(driver.info.tokenize), view or View())


def seat_for(
    driver: Driver,
    profile: ModelProfile,
    tools: ToolRegistry,
    settings: Settings,
    view: View | None = None,
) -> Seat:
    """A model's seat: its grammar constraint and context budget for these settings
    (`view`: the compacted view of a conversation it takes over)."""
    return Seat(
        driver,
        profile,
        constraint_for(settings.constrain, driver, tools, profile),
        compactor_for(driver, settings.context_size, settings.compact_at, view),
    )


class Assembly:
    """What a face runs its requests on: the model (driver and profile) and the MCP
    hub's tools, opened once and closed once. A batch builds one agent per task on it,
    a chat one agent for the whole conversation."""

    def __init__(
        self,
        settings: Settings,
        driver: Driver,
        profile: ModelProfile,
        hub: Hub | None,
        hooks: tuple[HookSpec, ...] = (),
        telemetry: Telemetry | None = None,
    ) -> None:
        self.settings = settings
        self.driver = driver
        self.profile = profile
        self.hub = hub
        self.hooks = hooks  # the trusted ones (agent.run.hooks)
        self.trust: HookTrust | None = None  # checks the workspace's before each run
        self.telemetry = telemetry  # OpenTelemetry spans of every agent built here

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        driver: Driver | None = None,
        ask_server: Ask | None = None,
        report: Callable[[str], None] = warn,
        loading: Callable[[str], AbstractContextManager[object]] = lambda _m: nullcontext(),
        ask_hooks: AskHooks | None = None,
    ) -> Assembly:
        """The hub's servers start while the model loads; `driver` replaces opening
        `settings.model` (tests inject failures); `report` gets one line for each
        server that did not start, and for workspace hooks left out (`ask_hooks`: who
        to ask about them; nobody, headless)."""
        trust = HookTrust(
            settings.hooks,
            settings.workspace,
            allow_workspace=settings.allow_workspace_hooks,
            ask=ask_hooks,
            report=report,
        )
        hooks = trust.start()
        telemetry = open_telemetry(settings, report)
        try:
            assembly = cls._open(settings, driver, ask_server, report, loading, hooks)
        except BaseException:
            if telemetry is not None:
                telemetry.close()
            raise
        assembly.telemetry = telemetry
        assembly.trust = trust
        return assembly

    @classmethod
    def _open(
        cls,
        settings: Settings,
        driver: Driver | None,
        ask_server: Ask | None,
        report: Callable[[str], None],
        loading: Callable[[str], AbstractContextManager[object]],
        hooks: tuple[HookSpec, ...],
    ) -> Assembly:
        hub = begin_hub(
            settings.mcp_servers,
            settings.workspace,
            allow_workspace=settings.allow_workspace_mcp,
            ask=ask_server,
            reserved=(t.name for t in KNOWN),
        )
        try:
            if driver is None:
                with loading(settings.model):
                    driver, profile = open_model(
                        settings.model,
                        api=settings.api,
                        context_size=settings.context_size,
                        keyless=settings.model == settings.workspace_model,
                        request_timeout=settings.request_timeout,
                        speculate=settings.speculate,
                    )
            else:
                profile = profile_of(settings.model)
            try:
                if hub is not None:
                    finish_hub(hub, report)
            except BaseException:
                driver.close()
                raise
        except BaseException:
            if hub is not None:
                hub.close()
            raise
        return cls(settings, driver, profile, hub, hooks)

    def __enter__(self) -> Assembly:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def tools(self, settings: Settings | None = None, extra: Sequence[Tool] = ()) -> ToolRegistry:
        """bosun's tools and the hub's, a registry of its own for each agent: the
        model's own set (its profile's changes) with the user's changes on top; `extra`:
        an agent's own MCP servers' tools (an ACP client's)."""
        settings = settings or self.settings
        with_skills = ("+skill",) if find_skills(settings.workspace) else ()
        # the map names definitions; these tools look into them
        with_map = ("+outline", "+find_symbol") if map_budget(settings, self.driver) else ()
        changes = (*self.profile.tool_changes, *with_skills, *with_map, *settings.tools)
        shared = self.hub.tools() if self.hub is not None else ()
        return default_registry((*shared, *extra), changes)

    def agent(
        self,
        emit: ev.Emit,
        *,
        on_message: Callable[[Message], None],
        settings: Settings | None = None,
        approver: Approver | None = None,
        trace: Trace | None = None,
        cancel: Cancel | None = None,
        driver: Driver | None = None,
        extra_tools: Sequence[Tool] = (),
    ) -> Agent:
        """An Agent on this model (or on `driver`, a batch task's copy of it) under
        `settings` (a task's own); `on_message` sees every message added (a session
        file), `cancel` is shared where one Ctrl-C stops several agents (a batch);
        `extra_tools`: its own MCP servers' (see `tools`)."""
        settings = settings or self.settings
        tools = self.tools(settings, extra_tools)
        if self.telemetry is not None:  # spans from the same events the faces see
            emit, on_message = self.telemetry.watch(emit, on_message)
        gate = Gate(settings.approve, approver, settings.sandbox)
        gate.hooks = self._hooks(emit, settings, gate)
        return Agent(
            seat=seat_for(driver or self.driver, self.profile, tools, settings),
            tools=tools,
            workspace=settings.workspace,
            history=[],
            emit=emit,
            budget=Budget(max_turns=settings.max_turns, max_tokens=settings.max_tokens),
            gate=gate,
            on_message=on_message,
            trace=trace,
            salvage="salvage" not in settings.ablate,
            retain="retention" not in settings.ablate,
            cancel=cancel if cancel is not None else Cancel(),
            checks=checks_for(settings),
            repo_map=prompt_map(settings, driver or self.driver),
        )

    def _hooks(self, emit: ev.Emit, settings: Settings, gate: Gate) -> Hooks | None:
        """An agent's own hook state (its session id, its pending context); the
        workspace's hooks run only while `trust` admits them, in the gate's sandbox
        (its mode and sandbox as they are at each run: /approve and /sandbox change
        them)."""
        if not self.hooks:
            return None
        trust = SessionTrust(self.trust, gate) if self.trust is not None else None
        return Hooks(self.hooks, settings.workspace, emit, trust=trust)

    def switch(self, model: str) -> None:
        """Another model for what is built from now on; the new one is opened before the
        old one is closed, so a model that fails to open leaves the old one working."""
        settings = self.settings
        driver, profile = open_model(
            model,
            api=settings.api,
            context_size=settings.context_size,
            request_timeout=settings.request_timeout,
            speculate=settings.speculate,
        )
        self.driver.close()
        self.driver, self.profile = driver, profile
        self.settings = settings.but(model=model)

    def release(self, session_id: str) -> None:
        """A face that keeps this assembly open is done with session `session_id` (a
        batch task, a served run): its session span ends and goes out now."""
        if self.telemetry is not None:
            self.telemetry.release(session_id)

    def close(self) -> None:
        try:
            self.driver.close()
        finally:
            try:
                if self.hub is not None:
                    self.hub.close()
            finally:
                if self.telemetry is not None:  # last: the spans of everything above
                    self.telemetry.close()


def map_budget(settings: Settings, driver: Driver | None) -> int:
    """The repository map's tokens: the user's `repo_map_tokens`, else by the context
    (none while there is no model to say what its context is); never more than a
    quarter of a known context, or the map alone could push the task out of it."""
    n_ctx = settings.context_size or (driver.info.n_ctx if driver is not None else None)
    if settings.repo_map_tokens is None:
        return auto_budget(n_ctx)
    return min(settings.repo_map_tokens, n_ctx // 4) if n_ctx else settings.repo_map_tokens


def prompt_map(settings: Settings, driver: Driver) -> PromptMap | None:
    """The map an agent shows its model (None: no budget), counted by the model's own
    tokenizer where there is one."""
    budget = map_budget(settings, driver)
    if budget <= 0:
        return None
    tokenize = driver.info.tokenize
    if tokenize is None:
        return PromptMap(settings.workspace, budget)
    return PromptMap(settings.workspace, budget, lambda text: len(tokenize(text)))


def checks_for(settings: Settings) -> Checks:
    """The lint/test loop's settings for one agent (agent.loop.checks)."""
    return Checks(
        settings.lint_cmd,
        settings.test_cmd,
        settings.auto_lint,
        settings.auto_test,
        settings.test_rounds,
        float(settings.test_timeout),
    )


def recording(log: Callable[[], SessionLog | None], *sinks: ev.Emit) -> ev.Emit:
    """One event stream: into the session file (`log()`, where there is one now) and
    then to every sink (a printer, a screen)."""

    def emit(event: ev.AgentEvent) -> None:
        session = log()
        if session is not None:
            session.event(event)
        for sink in sinks:
            sink(event)

    return emit


def start_session(
    agent: Agent,
    session_id: str,
    stored: list[Message] | None = None,
    compactions: Sequence[dict[str, Any]] = (),
) -> None:
    """The session line first, then the history: a new one gets the system prompt, read
    now (AGENTS.md may have changed); a stored one is taken as it was saved, compactions
    included, so the next prompt starts with the bytes the model saw before (a prefix
    cache still applies)."""
    agent.emit(session_event(agent, session_id))
    agent.load(stored if stored is not None else [], compactions)
    if stored is None:
        agent.add(system_message(agent.workspace))
    if agent.gate.hooks is not None:  # SessionStart: its context joins the first prompt
        source = "startup" if stored is None else "resume"
        agent.gate.hooks.start(session_id, source, agent.workspace)
