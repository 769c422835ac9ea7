"""Which grammar constrains the next model call (`--constrain`).

Small models call tools reliably only under a grammar, and the grammar can also steer
them out of the two ruts they fall into: answering a fresh request from imagination
(so a fresh request must start with a tool call, unless it brings its material along:
piped text, attached files) and repeating a call whose result they already have (so
after such a repeat the next reply must be an answer).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence

from agent.errors import UsageError
from agent.history import AssistantToolUse, Message, ToolCall, User
from agent.protocol.grammar import GRAMMAR_BUDGET, GrammarTooLarge
from agent.protocol.profile import ModelProfile
from agent.tools import ToolRegistry
from drivers.base import Driver

SMALL_MODEL_PARAMS = 3_000_000_000
Constraint = Callable[[Sequence[Message]], str | None]


def _key(call: ToolCall) -> str:
    return call.name + json.dumps(call.arguments, sort_keys=True)


def repeats_unchanged_call(history: Sequence[Message], kinds: Mapping[str, str]) -> bool:
    """Did the latest call repeat one made earlier for the same request, with only reads
    in between? Then its result is already in the prompt and cannot have changed.

    A repeat after a write or a shell command is not counted: `bash("pytest")` again
    after an edit is how a fix gets checked.
    """
    calls: list[ToolCall] = []
    for message in reversed(history):
        if isinstance(message, User):
            break
        if isinstance(message, AssistantToolUse):
            calls.append(message.call)
    if len(calls) < 2:
        return False
    last, earlier = _key(calls[0]), calls[1:]  # newest first
    for call in earlier:
        if _key(call) == last:
            return True
        if kinds.get(call.name, "shell") != "read":
            return False
    return False


def _warn(line: str) -> None:
    sys.stderr.write(f"bosun: warning: {line}\n")


def constraint_for(
    mode: str,
    driver: Driver,
    tools: ToolRegistry,
    profile: ModelProfile,
    report: Callable[[str], None] = _warn,
) -> Constraint | None:
    """--constrain: `always`, or `auto` for models under ~3B parameters; None = free.
    The grammars are the profile's, in the model's own call format.

    Tool schemas may come from MCP servers, so the grammar is built within a budget:
    a tool whose schema would take too much of it gets free arguments, and tools that
    would pass the whole budget mean decoding without a grammar, even with `always`.
    Either is said once, through `report`, here where the seat is made, not per turn."""
    if mode == "never" or not tools.names:
        return None
    if not driver.info.grammar:
        if mode == "always":
            raise UsageError(f"--constrain always: the {driver.model} backend takes no grammar")
        return None
    n_params = driver.info.n_params
    if mode == "auto" and (n_params is None or n_params >= SMALL_MODEL_PARAMS):
        return None
    loose: list[str] = []
    try:
        grammars = profile.grammars(tools.specs(), loose)
    except GrammarTooLarge:
        report(
            f"the tool-call grammar for these {len(tools.names)} tools would pass"
            f" {GRAMMAR_BUDGET} characters; the model decodes without one"
        )
        return None
    if loose:
        named = ", ".join(loose[:5]) + (f" and {len(loose) - 5} more" if len(loose) > 5 else "")
        report(f"the grammar leaves the arguments of {named} free: their schemas are too large")
    if grammars is None:
        if mode == "always":
            raise UsageError(
                f"--constrain always: bosun has no grammar for {profile.tool_format} calls"
            )
        return None
    first, later, answer = grammars
    kinds = {name: tool.kind for name in tools.names if (tool := tools.get(name)) is not None}

    def pick(history: Sequence[Message]) -> str | None:
        if history and isinstance(history[-1], User) and not history[-1].attached:
            return first
        return answer if repeats_unchanged_call(history, kinds) else later

    return pick
