"""How prefix stability is measured (shared by the tests and the contract).

DESIGN rule 6: the prompt for turn N+1 starts with the prompt for turn N up to where
the model's reply began. `strict` also demands the generation prompt itself survive
(it does in bosun's templates); the rule-6 measure forgives a generation prompt that
opens a block the re-rendered reply lacks (`<think>\\n` of reasoning models), because
the KV cache still reuses everything before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.history import Message
from agent.prompt import render


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
