"""The limits of one request: model calls, tool calls, repeats, malformed replies.

Checked before every model call, so a run that goes wrong ends with a status that says
how (`max_turns`, `stuck`, `error`) instead of spinning.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.events import Status


@dataclass
class Budget:
    max_turns: int = 30
    max_tool_calls: int = 200
    max_identical_calls: int = 3
    max_format_errors: int = 3
    max_tokens: int = 1024

    def exceeded(
        self, turns: int, tool_calls: int, recent: list[str], format_errors: int
    ) -> tuple[Status, str] | None:
        """(status, why) when the next model call would go over a limit, else None."""
        if turns >= self.max_turns:
            return Status.MAX_TURNS, f"stopped after {turns} model calls (--max-turns)"
        if tool_calls >= self.max_tool_calls:
            return Status.MAX_TURNS, f"stopped after {tool_calls} tool calls"
        last = recent[-self.max_identical_calls :]
        if len(last) == self.max_identical_calls and len(set(last)) == 1:
            return Status.STUCK, f"the same tool call was made {len(last)} times in a row"
        if format_errors >= self.max_format_errors:
            return Status.ERROR, f"{format_errors} malformed tool calls in a row"
        return None
