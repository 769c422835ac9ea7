"""How prefix stability is measured (shared by the tests and the contract).

Prompts are prefix-stable: the prompt for turn N+1 starts with the prompt for turn N up
to where the model's reply began. `strict` also demands the generation prompt itself
survive (the issue's literal reading; it holds in bosun's templates); the prefix-stability
measure forgives a generation prompt that the template never prints for a past turn (an empty
`<think></think>`, a turn marker printed only when it is last), because the KV cache
still reuses everything before it.

What the model replied depends on that generation prompt: one that leaves a reasoning
block open gets a reply that reasons, which the runtime keeps as a `Reasoning` message;
any other gets a reply without reasoning. `as_the_model_replies` picks the history
variant accordingly, so each template is measured on the history it would really get.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.history import Message, Reasoning
from agent.protocol.render import render

# How generation prompts in the corpus open a reasoning block the reply starts inside.
REASONING_OPENERS = (
    "<think>",
    "<|START_THINKING|>",
    "<think:opensource>",
    "Here are my reasoning steps:",
)


def without_reasoning(turns: Sequence[Sequence[Message]]) -> list[list[Message]]:
    return [[m for m in turn if not isinstance(m, Reasoning)] for turn in turns]


def opens_reasoning(
    history: Sequence[Message],
    tools: Sequence[dict[str, Any]],
    template: str | Path | None = None,
    model: str = "",
) -> bool:
    """Does the generation prompt after `history` leave a reasoning block open?"""
    prompt = render(history, tools, model=model, template=template)
    return prompt.rstrip().endswith(REASONING_OPENERS)


def as_the_model_replies(
    turns: Sequence[Sequence[Message]],
    tools: Sequence[dict[str, Any]],
    template: str | Path | None = None,
    model: str = "",
) -> list[list[Message]]:
    """`turns` with the replies' reasoning kept only where the template asks for it."""
    if opens_reasoning(turns[0], tools, template, model):
        return [list(turn) for turn in turns]
    return without_reasoning(turns)


def render_turns(
    turns: Sequence[Sequence[Message]],
    tools: Sequence[dict[str, Any]],
    template: str | Path | None = None,
    model: str = "",
) -> list[tuple[str, str]]:
    """(prompt, prompt without the generation prompt) for each turn."""
    return [
        (
            render(turn, tools, model=model, template=template),
            render(turn, tools, model=model, template=template, add_generation_prompt=False),
        )
        for turn in turns
    ]


def broken_in(rendered: Sequence[tuple[str, str]], strict: bool = False) -> list[int]:
    """Indices N (1-based) where the prompt for turn N is not kept by turn N+1."""
    broken = []
    for n in range(len(rendered) - 1):
        before, before_reply = rendered[n]
        if not strict and before.startswith(before_reply):
            before = before_reply
        if not rendered[n + 1][0].startswith(before):
            broken.append(n + 1)
    return broken


def broken_turns(
    turns: Sequence[Sequence[Message]],
    tools: Sequence[dict[str, Any]],
    template: str | Path | None = None,
    model: str = "",
    strict: bool = False,
) -> list[int]:
    return broken_in(render_turns(turns, tools, template, model), strict)
