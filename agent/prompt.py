"""Chat-template rendering and the wire remap: structured history -> the exact prompt.

A model calls tools reliably only when it sees its conversation the way it was trained
to: its own chat template (from the GGUF, or one bosun ships for the family), tool turns
in its own format, and the same bytes for the same history every turn, so the driver's
KV cache is reused (DESIGN rule 6). What a template accepts is found by probing it once
(`agent.dialect`); which template a model gets is data (`agent.capabilities`).

The wire remap lives here too because it is the other half of "what the model sees":
for tokenizers that reserve `<tool_call>` the driver boundary speaks `[[CALL]]`, while
history, sessions and traces stay canonical.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Template, TemplateError

from agent.capabilities import DEFAULT_TEMPLATE, GGUF_TEMPLATE, Capabilities, model_info
from agent.dialect import Dialect, probe, to_template_messages
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
from agent.jinja_env import compile_template
from agent.markup import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, WIRE_CALL_CLOSE, WIRE_CALL_OPEN
from agent.resources import template_path

__all__ = [
    "TemplateRenderError",
    "WireDecoder",
    "canonical_to_wire",
    "data_spans",
    "load_messages",
    "load_template",
    "render",
    "render_for_model",
    "system_prompt",
    "to_template_messages",
    "tool_block",
    "wire_to_canonical",
]


class TemplateRenderError(RuntimeError):
    """A chat template failed to render (a harness or template problem, not the model's)."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def load_template(template: str | Path | None) -> str:
    """Template source: `template` itself, the file it names, or bosun's chatml."""
    if template is None:
        template = template_path(f"{DEFAULT_TEMPLATE}.jinja")
    if isinstance(template, Path):
        try:
            return template.read_text(encoding="utf-8")
        except OSError as exc:
            raise TemplateRenderError(f"cannot read chat template {template}: {exc}") from None
    return template


@dataclass(frozen=True)
class _Target:
    """Everything a render needs to know about the model, resolved once per model."""

    source: str
    label: str
    bos_token: str
    eos_token: str
    caps: Capabilities


@lru_cache(maxsize=32)
def _target(model: str) -> _Target:
    info = model_info(model)
    bos = info.gguf.bos_token if info.gguf else ""
    eos = info.gguf.eos_token if info.gguf else ""
    name = info.caps.template
    if name == GGUF_TEMPLATE and info.gguf is not None and info.gguf.chat_template:
        return _Target(info.gguf.chat_template, f"embedded in {model}", bos, eos, info.caps)
    if name == GGUF_TEMPLATE:
        name = DEFAULT_TEMPLATE
    source = load_template(template_path(f"{name}.jinja"))
    return _Target(source, f"{name}.jinja", bos, eos, info.caps)


def _compile(source: str, label: str) -> Template:
    try:
        return compile_template(source)
    except TemplateError as exc:
        msg = f"chat template {label} does not compile: {_one_line(exc)}"
        raise TemplateRenderError(msg) from None


@lru_cache(maxsize=64)
def _dialect(source: str, bos_token: str, eos_token: str) -> Dialect:
    compiled = compile_template(source)

    def run(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        return compiled.render(
            messages=messages,
            tools=tools,
            add_generation_prompt=True,
            bos_token=bos_token,
            eos_token=eos_token,
        )

    return probe(run)


def tool_block(tools: Sequence[dict[str, Any]]) -> str:
    """bosun's fallback tool block (templates/tools.jinja), for templates without tools."""
    if not tools:
        return ""
    return str(
        _compile(load_template(template_path("tools.jinja")), "tools.jinja").render(
            tools=list(tools)
        )
    )


def render(
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] = (),
    model: str = "",
    template: str | Path | None = None,
    add_generation_prompt: bool = True,
) -> str:
    """The exact canonical prompt `model` sees for `messages`, ending ready to generate.

    `template` (source text, or a Path to read) overrides the model's template; the
    model still supplies bos/eos and its capability flags. Tools reach the model exactly
    once: through the template when it prints `tools`, else in bosun's tool block.
    """
    target = _target(model)
    if template is None:
        source, label = target.source, target.label
    else:
        source = load_template(template)
        label = str(template) if isinstance(template, Path) else "<given source>"
    compiled = _compile(source, label)
    dialect = _dialect(source, target.bos_token, target.eos_token)
    if target.caps.tool_result_role == "user":
        dialect = replace(dialect, native_results=False)
    tools = list(tools)
    native_tools = bool(tools) and dialect.native_tools
    block = "" if native_tools else tool_block(tools)
    try:
        return str(
            compiled.render(
                messages=to_template_messages(messages, dialect, block),
                # A fresh copy: the sandbox lets templates mutate what they are given.
                tools=copy.deepcopy(tools) if native_tools else None,
                add_generation_prompt=add_generation_prompt,
                bos_token=target.bos_token,
                eos_token=target.eos_token,
            )
        )
    except TemplateRenderError:
        raise
    except Exception as exc:  # any failure inside a template is the template's problem
        raise TemplateRenderError(
            f"chat template {label} failed to render: {_one_line(exc)}"
        ) from exc


# --- data spans ---------------------------------------------------------------------
# A tokenizer told to parse special tokens turns "<|im_end|>" into the control token
# wherever it appears, also inside a file the model read, so a tool result could end
# its own turn and open a new one. The driver needs to know which parts of the prompt
# are data (message text) and which are the template's markup: a second render with
# every message's text between two private-use code points shows exactly where each
# landed. Only text that could hold a special token ("<…>", "[…]") is marked, and when
# the marks change what the template prints (it inspected the text), no spans are given.

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


def data_spans(
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]],
    prompt: str,
    model: str = "",
    template: str | Path | None = None,
    wire: bool = False,
) -> list[tuple[int, int]]:
    """[start, end) ranges of `prompt` (render(...), wire-remapped when `wire`) that hold
    message text rather than template markup; [] when there is nothing to protect or the
    template's output depends on the text in a way the marks would disturb."""
    marked = _marked(messages)
    if marked is None:
        return []
    text = render(marked, tools, model=model, template=template)
    if wire:
        text = canonical_to_wire(text)
    spans: list[tuple[int, int]] = []
    plain: list[str] = []
    size = start = pos = 0
    for mark in _MARKS.finditer(text):
        at = mark.start()
        plain.append(text[pos:at])
        size += at - pos
        if mark.group() == _DATA_OPEN:
            start = size
        else:
            spans.append((start, size))
        pos = at + 1
    plain.append(text[pos:])
    return spans if "".join(plain) == prompt else []


def render_for_model(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] = (),
    wire: bool = True,
) -> str:
    """What `bosun render` prints: the bytes the driver sends, wire-remapped if flagged."""
    text = render(messages, tools, model=model)
    if wire and _target(model).caps.reserved_tool_call_token:
        return canonical_to_wire(text)
    return text


def load_messages(path: str | Path) -> list[Message]:
    """Read a messages file (a JSON list in `agent.history.to_json` format).

    Raises ValueError naming the file and the offending message, for `bosun render`.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read messages file: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON: {_one_line(exc)}") from None
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


def system_prompt(
    workspace: str,
    instructions: str = "",
    instructions_source: str = "AGENTS.md",
    files: Sequence[str] = (),
) -> str:
    """The agent's system message (templates/system.jinja), rendered once per session."""
    source = load_template(template_path("system.jinja"))
    return str(
        _compile(source, "system.jinja").render(
            workspace=workspace,
            instructions=instructions,
            instructions_source=instructions_source,
            files=list(files),
        )
    ).strip()


# --- wire remap --------------------------------------------------------------------
# Qwen3-family tokenizers turn "<tool_call>" into one special token that detokenises to
# nothing, so a model told to write it produces a call the harness cannot see. At the
# driver boundary only, those models speak [[CALL]] … [[/CALL]] instead.

_WIRE_MARKERS = (WIRE_CALL_OPEN, WIRE_CALL_CLOSE)
_LONGEST_PARTIAL = max(len(m) for m in _WIRE_MARKERS) - 1


def canonical_to_wire(text: str) -> str:
    """Canonical prompt text -> wire form. Idempotent."""
    return text.replace(TOOL_CALL_OPEN, WIRE_CALL_OPEN).replace(TOOL_CALL_CLOSE, WIRE_CALL_CLOSE)


def wire_to_canonical(text: str) -> str:
    """Wire-form model output -> canonical text. Idempotent; inverts canonical_to_wire
    on text that did not already contain wire markers."""
    return text.replace(WIRE_CALL_OPEN, TOOL_CALL_OPEN).replace(WIRE_CALL_CLOSE, TOOL_CALL_CLOSE)


def _partial_marker_len(text: str) -> int:
    """Length of the longest suffix of `text` that could still grow into a wire marker."""
    for k in range(min(_LONGEST_PARTIAL, len(text)), 0, -1):
        tail = text[-k:]
        if any(m.startswith(tail) for m in _WIRE_MARKERS):
            return k
    return 0


class WireDecoder:
    """Streaming wire_to_canonical: any chunking gives the same text as one call.

    A chunk that ends in what may be the start of a marker ("[[CA") is held back until
    the next chunk settles it; at most 8 characters are ever held, so the work per
    chunk is proportional to the chunk.
    """

    def __init__(self) -> None:
        self._held = ""

    def feed(self, chunk: str) -> str:
        text = self._held + chunk
        if "[" not in text:
            self._held = ""
            return text
        text = wire_to_canonical(text)
        keep = _partial_marker_len(text)
        self._held = text[len(text) - keep :]
        return text[: len(text) - keep]

    def finish(self) -> str:
        held, self._held = self._held, ""
        return wire_to_canonical(held)
