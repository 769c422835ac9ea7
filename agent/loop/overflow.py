"""A context that overflowed, and what a chat server's replies say about it: the model
call asked again after a compaction where the window ran out (a reply cut off by it, a
prompt refused as too long), and the line a person reads when a server sent its calls
as text. Apart from the loop so `agent.loop.runtime` reads as the turn it runs."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from agent import events as ev
from agent.loop.turn import Query, Reply, call_model
from agent.protocol.profile import ModelProfile
from drivers.base import ContextOverflow
from drivers.server_facts import text_calls_fix

if TYPE_CHECKING:
    from agent.history import Message
    from agent.loop.compact import Compactor
    from drivers.base import Driver, Usage


class Agent(Protocol):
    """What asking again needs of the loop's agent (agent.loop.runtime.Agent), named
    here so the loop imports this module and not the other way round."""

    history: list[Message]
    emit: ev.Emit

    @property
    def compactor(self) -> Compactor | None: ...
    @property
    def driver(self) -> Driver: ...
    @property
    def profile(self) -> ModelProfile: ...
    def observe(self, request: Query, reply: Reply) -> None: ...
    def fit(self, force: bool) -> ev.Compaction | None: ...
    def account(self, usage: Usage) -> None: ...


def ask(agent: Agent, request: Query) -> Reply:
    """The model call; where the context overflowed (the server refused the prompt
    as too long, or cut the reply off at a full window, not at its own limit), the
    conversation is compacted as far as it goes and asked once more. The cut reply
    is dropped (its calls were never whole); when nothing could be compacted, the
    refusal ends the run and a cut reply stands (the model reads it was cut off)."""
    compactor = agent.compactor
    try:
        reply = call_model(agent.driver, agent.profile, request)
    except ContextOverflow:
        refused = "the server refused the prompt as longer than its context"
        if compactor is None or not _make_room(agent, refused):
            raise
        return _ask_again(agent, request)
    if compactor is None:
        return reply
    agent.observe(request, reply)
    if reply.interrupted or not compactor.overflowed(reply.finish, reply.usage, request.max_tokens):
        return reply
    used = reply.usage.prompt_tokens + reply.usage.completion_tokens
    full = f"the reply filled the context ({used:,} of {compactor.limits.n_ctx:,} tokens)"
    if not _make_room(agent, full):
        return reply
    agent.account(reply.usage, reply)
    return _ask_again(agent, request)


def _make_room(agent: Agent, why: str) -> bool:
    assert agent.compactor is not None
    if agent.fit(force=True) is None:
        return False
    agent.emit(ev.Diagnostic(f"{why}: compacted the conversation and asked again"))
    return True


def _ask_again(agent: Agent, request: Query) -> Reply:
    assert agent.compactor is not None
    again = replace(request, history=agent.compactor.view.messages(agent.history))
    reply = call_model(agent.driver, agent.profile, again)
    agent.observe(again, reply)
    return reply


def text_calls_said(server: str, profile: ModelProfile) -> str:
    """The line a person reads when a chat server's reply held its calls as text."""
    fmt = profile.tool_format
    return (
        f"the server sent tool calls as text (its tool parser did not run); bosun's {fmt}"
        f" parser recovered them. To have the server parse them: {text_calls_fix(server, fmt)}"
    )
