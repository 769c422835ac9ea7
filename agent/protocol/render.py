"""What the model sees: rendering a history into the exact prompt, and its helpers.

A model calls tools reliably only when it sees its conversation the way it was trained
to: its own chat template, tool turns in its own format, and the same bytes for the same
history every turn, so the driver's KV cache is reused. Which template, format and
adaptations a model gets is its profile's business (`agent.protocol.profile`); this module is the
public face of rendering (`render`, `data_spans`, the wire remap, the system prompt).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent.history import (
    Assistant,
    AssistantToolUse,
    HistoryFormatError,
    Message,
    Reasoning,
    System,
    ToolResult,
    User,
    message_from_dict,
)
from agent.parsing.wire import WireDecoder, canonical_to_wire, wire_to_canonical
from agent.protocol.profile import (
    ModelProfile,
    TemplateRenderError,
    load_template,
    one_line,
    profile_for,
    tool_block,
)
from drivers.base import Request

__all__ = [
    "Rendered",
    "TemplateRenderError",
    "WireDecoder",
    "canonical_to_wire",
    "data_spans",
    "load_template",
    "profile_with",
    "read_messages_json",
    "render",
    "render_call",
    "render_for_model",
    "stable_head",
    "tool_block",
    "wire_to_canonical",
]


def profile_with(model: str = "", template: str | Path | None = None) -> ModelProfile:
    """`model`'s profile, rendering with `template` (source text or a file) if given."""
    profile = profile_for(model)
    if template is None:
        return profile
    origin = str(template) if isinstance(template, Path) else "<given source>"
    return profile.with_template(load_template(template), origin)


def render(
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] = (),
    model: str = "",
    template: str | Path | None = None,
    add_generation_prompt: bool = True,
) -> str:
    """The exact canonical prompt `model` sees for `messages`, ending ready to generate.

    `template` (source text, or a Path to read) is used as given instead of the model's
    template; the model still supplies bos/eos. Tools reach the model exactly once:
    through the template when it prints `tools`, else in bosun's tool block.
    """
    profile = profile_with(model, template)
    return profile.canonical(messages, tools, add_generation_prompt)


# --- data spans ---------------------------------------------------------------------
# A tokenizer told to parse special tokens turns "<|im_end|>" into the control token
# wherever it appears, also inside a file the model read, so a tool result could end
# its own turn and open a new one. The driver needs to know which parts of the prompt
# are data (message text) and which are the template's markup: a second render with
# every message's text between two private-use code points shows exactly where each
# landed. Only text that could hold a special token ("<…>", "[…]") is marked, and when
# the marks change what the template prints (it inspected the text), no spans are given.
# Tool specs are data too (an MCP server writes their descriptions, property names and
# enum values): their strings are marked as well; a template that reworks them (sorts
# keys, trims a description) is rendered again with the messages' text marked alone.

_DATA_OPEN, _DATA_CLOSE = "\U000f0000", "\U000f0001"
_MARKS = re.compile(f"[{_DATA_OPEN}{_DATA_CLOSE}]")


def _mark(text: str) -> str:
    if ("<" not in text and "[" not in text) or _DATA_OPEN in text or _DATA_CLOSE in text:
        return text
    return _DATA_OPEN + text + _DATA_CLOSE


def _marked(messages: Sequence[Message]) -> list[Message] | None:
    out: list[Message] = []
    changed = False
    for m in messages:
        if isinstance(m, System | User | Assistant | Reasoning | ToolResult):
            marked: Message = replace(m, content=_mark(m.content))
        elif isinstance(m, AssistantToolUse):
            args = {k: _mark(v) if isinstance(v, str) else v for k, v in m.call.arguments.items()}
            marked = AssistantToolUse(replace(m.call, arguments=args))
        else:
            marked = m
        changed = changed or marked != m
        out.append(marked)
    return out if changed else None


def _marked_tools(tools: Sequence[dict[str, Any]]) -> list[Any] | None:
    """The specs with every string (keys too) that could hold a special token marked;
    None when none could. Recursive: an MCP schema is refused past 32 levels."""
    changed = False

    def mark(value: Any) -> Any:
        nonlocal changed
        if isinstance(value, str):
            marked = _mark(value)
            changed = changed or marked is not value
            return marked
        if isinstance(value, dict):
            return {mark(k): mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(v) for v in value]
        return value

    out = [mark(spec) for spec in tools]
    return out if changed else None


def data_spans(
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]],
    prompt: str,
    model: str = "",
    template: str | Path | None = None,
    wire: bool = False,
    *,
    profile: ModelProfile | None = None,
) -> list[tuple[int, int]]:
    """[start, end) ranges of `prompt` (the canonical render, wire-remapped when `wire`,
    or exactly `profile.render(...)` when a profile is given) that hold message text or
    the text of tool specs rather than template markup; [] when there is nothing to
    protect or the template's output depends on the text in a way the marks would
    disturb (the messages alone are tried when the marked specs disturb it)."""
    marked, marked_tools = _marked(messages), _marked_tools(tools)

    def located(msgs: Sequence[Message], specs: Sequence[dict[str, Any]]) -> list[tuple[int, int]]:
        if profile is None:
            text = render(msgs, specs, model=model, template=template)
            return _spans(canonical_to_wire(text) if wire else text, prompt)
        return _spans(profile.render(msgs, specs), prompt)

    if marked_tools is not None:
        try:
            spans = located(marked if marked is not None else messages, marked_tools)
        except TemplateRenderError:  # the template inspected a spec's text
            spans = []
        if spans or marked is None:
            return spans
    return located(marked, tools) if marked is not None else []


def _spans(text: str, prompt: str) -> list[tuple[int, int]]:
    """Where the marked stretches of `text` lie once the marks are gone; [] unless
    `text` without its marks is exactly `prompt` and every mark is closed in turn."""
    spans: list[tuple[int, int]] = []
    plain: list[str] = []
    size = start = pos = 0
    opened = False
    for mark in _MARKS.finditer(text):
        at = mark.start()
        plain.append(text[pos:at])
        size += at - pos
        if opened == (mark.group() == _DATA_OPEN):  # a template that cut a mark off
            return []
        opened = not opened
        if opened:
            start = size
        else:
            spans.append((start, size))
        pos = at + 1
    plain.append(text[pos:])
    return spans if "".join(plain) == prompt else []


def stable_head(
    profile: ModelProfile,
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]],
    sent: str,
) -> int:
    """How many characters at the start of `sent` (the prompt as sent) any session with
    the same system message and tools begins with: the system turn as the template
    renders it alone, as far as it agrees with `sent` (a template may print the tools
    after the first user message, or close the turn differently when it is the last).
    A driver that keeps prefix states saves this much for the next session; 0 when
    there is no system message to anchor it."""
    if not messages or not isinstance(messages[0], System):
        return 0
    try:
        alone = profile.render(messages[:1], tools, add_generation_prompt=False)
    except TemplateRenderError:
        return 0
    limit = min(len(alone), len(sent))
    return next((i for i in range(limit) if alone[i] != sent[i]), limit)


@dataclass(frozen=True)
class Rendered:
    """One history rendered for one model call, everything the driver needs from it:
    the canonical prompt (what the parser and the trace see), the bytes sent (wire form
    where the profile remaps), the data spans of those bytes and their stable head."""

    canonical: str
    sent: str
    data: tuple[tuple[int, int], ...] = ()
    head: int = 0
    stop: tuple[str, ...] = ()

    def request(self, max_tokens: int, grammar: str | None = None) -> Request:
        return Request(self.sent, self.stop, max_tokens, grammar, self.data, self.head)


def render_call(
    profile: ModelProfile,
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]],
    *,
    spans: bool = False,
    head: bool = False,
) -> Rendered:
    """The prompt of one model call, with its data spans (`spans`: for a driver that
    tokenizes the prompt itself) and its stable head (`head`: for a driver that keeps
    prefix states) worked out against the very bytes that are sent."""
    canonical = profile.canonical(messages, tools)
    sent = profile.to_wire(canonical)
    return Rendered(
        canonical,
        sent,
        tuple(data_spans(messages, tools, sent, profile=profile)) if spans else (),
        stable_head(profile, messages, tools, sent) if head else 0,
        tuple(profile.stop),
    )


def render_for_model(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] = (),
    wire: bool = True,
) -> str:
    """What `bosun render` prints: the bytes the driver sends (`wire=False`: canonical)."""
    profile = profile_for(model)
    return profile.render(messages, tools) if wire else profile.canonical(messages, tools)


def read_messages_json(path: str | Path) -> list[Message]:
    """Read a messages file (a JSON list in `agent.history.to_json` format).

    Raises ValueError naming the file and the offending message, for `bosun render`.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read messages file: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON: {one_line(exc)}") from None
    if not isinstance(data, list):
        raise ValueError(
            f"{path}: expected a JSON list of messages (agent.history.to_json format), "
            f"got a JSON {type(data).__name__}"
        )
    out: list[Message] = []
    for i, item in enumerate(data):
        try:
            out.append(message_from_dict(item))
        except HistoryFormatError as exc:
            raise ValueError(f"{path}: message {i}: {exc}") from None
    return out
