"""A conversation as Markdown, for people: `/save FILE.md` and `bosun sessions show`.

The JSON history is what bosun reads back; this is what a person reads, so the system
prompt (the same in every session) is left out, tool calls are shown as their arguments
and long results are cut to their head with a note of what is left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    Reasoning,
    System,
    ToolResult,
    User,
)

RESULT_LINES = 40


def fence(text: str, info: str = "") -> str:
    """A code fence longer than any run of backticks inside (content is not ours)."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text.rstrip()}\n{ticks}"


def _cut(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= RESULT_LINES:
        return text
    left = len(lines) - RESULT_LINES
    return "\n".join(lines[:RESULT_LINES]) + f"\n… ({left} more lines)"


def transcript(messages: Sequence[Message]) -> str:
    parts: list[str] = []
    for message in messages:
        if isinstance(message, System):
            continue
        if isinstance(message, User):
            parts.append("## User\n\n" + message.content.strip())
        elif isinstance(message, Assistant):
            parts.append("## Assistant\n\n" + message.content.strip())
        elif isinstance(message, Reasoning):
            quoted = "\n".join("> " + line for line in message.content.strip().splitlines())
            parts.append("*Reasoning*\n\n" + quoted)
        elif isinstance(message, AssistantToolUse):
            call = message.call
            arguments = json.dumps(call.arguments, indent=2, ensure_ascii=False)
            parts.append(f"### Tool call `{call.name}` ({call.id})\n\n" + fence(arguments, "json"))
        elif isinstance(message, ToolResult):
            label = "error" if message.is_error else "result"
            parts.append(f"### Tool {label} ({message.call_id})\n\n" + fence(_cut(message.content)))
    return "\n\n".join(parts) + "\n"
