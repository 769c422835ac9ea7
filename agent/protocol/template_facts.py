"""What a chat template does, learned by rendering small probes through it once.

A model's own template is the best description of its protocol there is: it prints the
model's call markup, its reasoning markers, its end-of-turn marker, and whether the
reply starts inside a reasoning block. Reading those off rendered probes, rather than
off a list of model names, routes a fine-tune or a renamed GGUF the same way as the
original, and a new family needs no code as long as its markup is one bosun parses.
Everything here runs once per template source (cached) and never raises: a template
that fails a probe simply tells us less. All the probes of one template share one meter
(`agent.protocol.template_bounds`): a template that goes past a bound is reported in
`exceeded`, after costing the bound once, and the profile refuses it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from jinja2 import Template

from agent.history import Assistant, AssistantToolUse, Message, System, ToolCall, User
from agent.parsing.formats import REASONING_PAIRS, REGISTRY, format_of_markup
from agent.parsing.record import SAMPLE_NAME
from agent.protocol.dialect import FALLBACK, Dialect, probe, reasoning_fields, to_template_messages
from agent.protocol.jinja_env import compile_template
from agent.protocol.template_bounds import TemplateBoundsError, metered

SAMPLE_TOOL = SAMPLE_NAME  # formats.SIGNATURES name it where a format has no marker
SAMPLE_ARGUMENTS = {"example_argument": "value"}
_SYSTEM = "bosunprobesystem"
_QUESTION = "bosunprobequestion"
_ANSWER = "bosunprobeanswer"
_THOUGHT = "bosunprobereasoning"
_FOLLOW = "bosunprobefollowup"

# Which shipped template speaks the same turn markup as a model's own template: the one
# bosun falls back to when that template has no tool support. A format with a template
# of its own (harmony) says so in its record, and is tried first; the others speak
# Hermes calls in their turns.
_STYLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    *((f.template, f.turn_markers) for f in REGISTRY.values() if f.template),
    ("llama3", ("<|start_header_id|>",)),
    ("gemma", ("<start_of_turn>",)),
    ("chatml", ("<|im_start|>",)),
)
# A marker right after an answer's text: "<|im_end|>", "<end_of_turn>", "</s>",
# "<｜end▁of▁sentence｜>", "[/INST]"-style, or the next turn's header ("<|user|>").
_END_MARKER = re.compile(r"\s*(<[|｜]?/?[^<>\s]{1,40}?[|｜]?>|\[/?[A-Z_]{2,20}\])")


@dataclass(frozen=True)
class TemplateFacts:
    """What one template source does with bosun's conversations."""

    error: str = ""  # why the template is unusable ("" when it renders)
    dialect: Dialect = field(default_factory=Dialect)
    style: str | None = None  # the shipped template with the same turn markup, if any
    call_markup: str = ""  # what it prints for one sample call, "" if it prints none
    tool_format: str | None = None  # the FORMATS name that markup belongs to
    reasoning: tuple[str, str] | None = None  # (open, close) around reasoning
    preopens: bool = False  # the generation prompt ends inside an open reasoning block
    end_of_turn: str = ""  # the marker printed after an assistant turn
    exceeded: str = ""  # the bound the template went past, if it did

    @property
    def usable(self) -> bool:
        return not self.error

    @property
    def tool_support(self) -> bool:
        """It prints calls in a markup bosun parses: the model's own protocol is usable."""
        return self.usable and self.dialect.native_calls and self.tool_format is not None


Render = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None, bool], str]


def _renderer(compiled: Template, bos: str, eos: str) -> Render:
    def run(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, gen: bool) -> str:
        return str(
            compiled.render(
                messages=messages,
                tools=tools,
                add_generation_prompt=gen,
                bos_token=bos,
                eos_token=eos,
            )
        )

    return run


SAMPLE_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": SAMPLE_TOOL,
            "description": "An example tool.",
            "parameters": {
                "type": "object",
                "properties": {
                    "example_argument": {"type": "string", "description": "An example."}
                },
                "required": ["example_argument"],
            },
        },
    }
]


def _attempt(render: Render, messages: list[dict[str, Any]], gen: bool) -> str | None:
    """The template's output, or None if it raised. Tools are passed as well, because
    some templates iterate `tools` unconditionally (Hermes 2 Pro, Command R+) and bosun
    always has tools to pass them."""
    for tools in (None, SAMPLE_TOOLS, []):
        try:
            return render(messages, tools, gen)
        except Exception:  # the template's own failure: this probe tells us nothing
            continue
    return None


def _shaped(history: list[Message], dialect: Dialect) -> list[dict[str, Any]]:
    return to_template_messages(history, dialect)


@lru_cache(maxsize=64)
def template_facts(source: str, bos: str = "", eos: str = "") -> TemplateFacts:
    """Probe `source` (cached per source and bos/eos)."""
    with metered() as meter:
        try:
            facts = _probe(source, bos, eos)
        except Exception as exc:  # a bound met outside a probe (compiling the source)
            facts = TemplateFacts(error=f"does not compile: {' '.join(str(exc).split())}")
    if meter.exceeded:
        return TemplateFacts(error=meter.exceeded, dialect=FALLBACK, exceeded=meter.exceeded)
    return facts


def _probe(source: str, bos: str, eos: str) -> TemplateFacts:
    try:
        compiled = compile_template(source)
    except Exception as exc:  # a syntax error, or anything else Jinja raises
        if isinstance(exc, TemplateBoundsError):
            raise
        return TemplateFacts(error=f"does not compile: {' '.join(str(exc).split())}")
    render = _renderer(compiled, bos, eos)
    dialect = probe(lambda m, t: render(m, t, True))
    opening = _shaped([System(_SYSTEM), User(_QUESTION)], dialect)
    generation = _attempt(render, opening, True)
    if generation is None:
        # Not even a question renders: the template is unusable as it stands.
        try:
            render(opening, SAMPLE_TOOLS, True)
        except Exception as exc:
            return TemplateFacts(
                error=f"fails to render: {' '.join(str(exc).split())}", dialect=FALLBACK
            )
    end_of_turn = _end_of_turn(render, dialect)
    markup = _call_markup(render, dialect, end_of_turn) if dialect.native_calls else ""
    tool_format = None
    if markup:
        # Some generation prompts already open the call ("…assistant\n\n>>>").
        tool_format = format_of_markup(markup) or format_of_markup(generation[-64:] + markup)
    reasoning = _reasoning(render, dialect, generation, source)
    if end_of_turn and (end_of_turn in markup or (reasoning and end_of_turn in reasoning)):
        end_of_turn = ""  # it also occurs inside a call or ends reasoning: not a stop
    tail = generation.rstrip()
    return TemplateFacts(
        dialect=dialect,
        style=next((name for name, marks in _STYLES if all(m in generation for m in marks)), None),
        call_markup=markup,
        tool_format=tool_format,
        reasoning=reasoning,
        preopens=reasoning is not None and tail.endswith(reasoning[0]),
        end_of_turn=end_of_turn,
    )


def _call_markup(render: Render, dialect: Dialect, end_of_turn: str) -> str:
    """What the model writes for one sample call: the reply the template prints after
    the generation prompt, less the end-of-turn marker (or, for a template whose past
    turns do not extend its generation prompt, the difference between an assistant turn
    with the call and one without it)."""
    head = _shaped([System(_SYSTEM), User(_QUESTION)], dialect)
    call = AssistantToolUse(ToolCall("call_1", SAMPLE_TOOL, dict(SAMPLE_ARGUMENTS)))
    base: list[Message] = [System(_SYSTEM), User(_QUESTION)]
    with_call = _attempt(render, _shaped([*base, call], dialect), False)
    if with_call is None or SAMPLE_TOOL not in with_call:
        return ""
    generation = _attempt(render, head, True)
    if generation and with_call.startswith(generation):
        reply = with_call[len(generation) :]
    else:
        reply = _difference(
            with_call, _attempt(render, _shaped([*base, Assistant("")], dialect), False)
        )
    reply = reply.strip()
    if end_of_turn and reply.endswith(end_of_turn):
        reply = reply[: -len(end_of_turn)].rstrip()
    for open_, close in REASONING_PAIRS:  # an empty reasoning block the template adds
        if reply.startswith(open_) and reply[len(open_) :].lstrip().startswith(close):
            reply = reply[len(open_) :].lstrip()[len(close) :].lstrip()
    return reply


def _difference(with_call: str, without: str | None) -> str:
    """The part of `with_call` that `without` lacks, widened to whole markers."""
    if without is None:
        return with_call[with_call.find(SAMPLE_TOOL) :]
    limit = min(len(with_call), len(without))
    start = 0
    while start < limit and with_call[start] == without[start]:
        start += 1
    end = 0
    while end < limit - start and with_call[-1 - end] == without[-1 - end]:
        end += 1
    while start > 0 and not with_call[start - 1].isspace() and with_call[start - 1] not in ">]":
        start -= 1
    stop = len(with_call) - end
    text = with_call[start:stop]
    last = max(text.rfind(">"), text.rfind("]"), text.rfind("}"))
    opened = max(text.rfind("<"), text.rfind("["))
    return text[: last + 1] if opened > last else text


def _reasoning(
    render: Render, dialect: Dialect, generation: str, source: str
) -> tuple[str, str] | None:
    """The (open, close) pair around reasoning: as the template prints the reasoning of
    a reply to the last question, else as its generation prompt opens one, else as its
    source names one."""
    reply = [System(_SYSTEM), User(_QUESTION)]
    messages = _shaped(reply, dialect)
    messages.append({"role": "assistant", "content": _ANSWER, **reasoning_fields(_THOUGHT)})
    text = _attempt(render, messages, False) or ""
    at = text.find(_THOUGHT)
    if at >= 0:
        before, after = text[:at], text[at + len(_THOUGHT) :]
        found = [
            (before.rfind(pair[0]), pair)
            for pair in REASONING_PAIRS
            if pair[0] in before and pair[1] in after
        ]
        if found:
            return max(found)[1]
    tail = generation.rstrip()
    for pair in REASONING_PAIRS:
        if tail.endswith(pair[0]):
            return pair
    for pair in REASONING_PAIRS:
        if pair[0] in source and pair[1] in source:
            return pair
    for pair in REASONING_PAIRS:  # a template that only strips "</think>" from past turns
        if "think" in pair[1].lower() and pair[1] in source:
            return pair
    return None


def _end_of_turn(render: Render, dialect: Dialect) -> str:
    history: list[Message] = [
        System(_SYSTEM),
        User(_QUESTION),
        Assistant(_ANSWER),
        User(_FOLLOW),
    ]
    text = _attempt(render, _shaped(history, dialect), False) or ""
    at = text.find(_ANSWER)
    if at < 0:
        return ""
    match = _END_MARKER.match(text, at + len(_ANSWER))
    return match.group(1) if match else ""
