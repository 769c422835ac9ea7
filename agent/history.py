"""Structured conversation history.

History never stores raw tool-call markup: a tool-using turn is an `AssistantToolUse`,
its outcome a `ToolResult`, and only genuine prose survives as `Assistant`. Re-rendering
from structure (not from what the model happened to type) is what keeps a small model's
tool calling from eroding over a long session.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agent import untrusted
from agent.markup import strip_markup


@dataclass(frozen=True)
class System:
    content: str


@dataclass(frozen=True)
class User:
    content: str
    # The message brings its own material (piped text, @-mentioned files, a `!command`'s
    # output): an answer may need no tool, so no tool call is forced on it. Not part of
    # what the message is (equality, the session file): only the request in flight reads it.
    attached: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class Assistant:
    content: str


@dataclass(frozen=True)
class Reasoning:
    """What the model thought before the rest of its turn (`<think>`, an analysis channel).

    Kept apart from the prose so it never leaks into an answer, yet kept at all because
    reasoning templates re-render it for the turns of the current request: without it a
    prompt that pre-opened `<think>` would not be a prefix of the next one, and models
    trained on interleaved thinking (MiniMax-M2, GLM, Qwen3) lose their plan between
    tool calls. Whether older reasoning is shown is each template's own decision.
    """

    content: str


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    salvaged: bool = False


@dataclass(frozen=True)
class AssistantToolUse:
    call: ToolCall


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    content: str
    is_error: bool = False


Message = System | User | Assistant | Reasoning | AssistantToolUse | ToolResult

_KINDS: dict[str, type] = {
    "system": System,
    "user": User,
    "assistant": Assistant,
    "reasoning": Reasoning,
    "assistant_tool_use": AssistantToolUse,
    "tool_result": ToolResult,
}
_KIND_OF: dict[type, str] = {cls: kind for kind, cls in _KINDS.items()}


class HistoryFormatError(ValueError):
    """A serialised message does not describe a bosun message (corrupt session file)."""


def message_to_dict(message: Message) -> dict[str, Any]:
    kind = _KIND_OF.get(type(message))
    if kind is None:
        raise TypeError(f"not a history message: {type(message).__name__}")
    if isinstance(message, AssistantToolUse):
        c = message.call
        return {
            "kind": kind,
            "call": {"id": c.id, "name": c.name, "arguments": c.arguments, "salvaged": c.salvaged},
        }
    if isinstance(message, ToolResult):
        return {
            "kind": kind,
            "call_id": message.call_id,
            "content": message.content,
            "is_error": message.is_error,
        }
    return {"kind": kind, "content": message.content}


def message_from_dict(data: Any) -> Message:
    if not isinstance(data, dict):
        raise HistoryFormatError(f"message must be an object, got {type(data).__name__}")
    kind = data.get("kind")
    try:
        if kind == "assistant_tool_use":
            c = data["call"]
            args = c["arguments"]
            if not isinstance(args, dict):
                raise HistoryFormatError("tool call arguments must be an object")
            return AssistantToolUse(
                ToolCall(str(c["id"]), str(c["name"]), args, bool(c.get("salvaged", False)))
            )
        if kind == "tool_result":
            return ToolResult(
                str(data["call_id"]), str(data["content"]), bool(data.get("is_error", False))
            )
        cls = _KINDS.get(str(kind))
        if cls is None:
            raise HistoryFormatError(f"unknown message kind {kind!r}")
        content = data["content"]
        if not isinstance(content, str):
            raise HistoryFormatError(f"{kind} content must be a string")
        return cls(content)  # type: ignore[no-any-return]
    except (KeyError, TypeError) as exc:
        raise HistoryFormatError(f"malformed {kind} message: missing {exc}") from None


def to_json(obj: Message | Sequence[Message]) -> str:
    """Serialise one message or a list of them; `from_json` gives back equal objects."""
    if isinstance(obj, Sequence):
        return json.dumps([message_to_dict(m) for m in obj], ensure_ascii=False)
    return json.dumps(message_to_dict(obj), ensure_ascii=False)


def from_json(text: str) -> Message | list[Message]:
    try:
        data = untrusted.loads(text)
    except ValueError as exc:
        raise HistoryFormatError(f"not valid JSON: {exc}") from None
    if isinstance(data, list):
        return [message_from_dict(d) for d in data]
    return message_from_dict(data)


def retain_assistant_text(text: str) -> str:
    """The prose of an assistant turn, without tool-call or tool-result residue.

    Strips closed `<tool_call>…</tool_call>` / `<tool_result>…</tool_result>` spans, an
    unclosed trailing one, wire-form `[[CALL]]` spans and stray closing tags. Markup that
    sits inside fenced or inline code is content and stays. Text with no markup comes
    back unchanged, byte for byte; text that was only markup comes back as "".
    """
    stripped, _removed = strip_markup(text)
    return stripped
