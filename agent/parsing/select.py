"""One stream parser for one model's raw output, whatever its format.

The model profile knows the format, the reasoning markers, whether the reply starts
inside reasoning, the stop strings and the wire remap; this is where those facts become
one object with the parser interface (`feed(chunk)` / `finish()` -> events), so the
runtime feeds raw driver text and never asks which model it is talking to. A stop string
that ended generation may be fed or not: the events are the same either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agent.markup import TOOL_CALL_OPEN, partial_suffix
from agent.parsing.base import Event, ParseResult, coalesce, result_from_events
from agent.parsing.formats import canonical_format, format_record
from agent.parsing.harmony import HarmonyStreamParser
from agent.parsing.lead import ReasoningLead
from agent.parsing.native import NativeStreamParser, Schemas
from agent.parsing.native_formats import NATIVE
from agent.parsing.stream import GenericStreamParser
from agent.parsing.stream import parse_tool_calls as _parse_generic
from agent.parsing.wire import WireDecoder


class _StopCut:
    """Passes text up to the first stop string; holds a suffix that may become one."""

    def __init__(self, stops: Sequence[str], keep: bool) -> None:
        self.stops = tuple(s for s in stops if s)
        self.keep = keep  # the parser reads the stop itself (harmony's call tag)
        self.held = ""
        self.done = False

    def feed(self, text: str) -> str:
        if self.done:
            return ""
        if not self.stops:
            return text
        buf = self.held + text
        hits = [(i, s) for s in self.stops if (i := buf.find(s)) >= 0]
        if hits:
            at, stop = min(hits)
            self.done, self.held = True, ""
            return buf[: at + (len(stop) if self.keep else 0)]
        keep = partial_suffix(buf, self.stops)
        self.held = buf[len(buf) - keep :]
        return buf[: len(buf) - keep]

    def finish(self) -> str:
        held, self.held = self.held, ""
        return held


class ModelOutputParser:
    """Wire decoding and stop strings in front of the format's own stream parser."""

    def __init__(self, inner: object, stops: Sequence[str], keep_stop: bool, wire: bool):
        self.inner = inner
        self._stop = _StopCut(stops, keep_stop)
        self._wire = WireDecoder() if wire else None

    @property
    def openers(self) -> tuple[str, ...]:
        """The format's own tags a reply could be cut inside (bosun's are known to all)."""
        return tuple(getattr(self.inner, "OPENERS", ()))

    def feed(self, chunk: str) -> list[Event]:
        text = self._wire.feed(chunk) if self._wire is not None else chunk
        text = self._stop.feed(text)
        return self.inner.feed(text) if text else []  # type: ignore[attr-defined]

    def finish(self) -> list[Event]:
        rest = self._wire.finish() if self._wire is not None else ""
        rest = self._stop.feed(rest) + self._stop.finish()
        events = self.inner.feed(rest) if rest else []  # type: ignore[attr-defined]
        return events + self.inner.finish()  # type: ignore[attr-defined]


def parser_for(
    tool_format: str,
    tool_names: Iterable[str] | None = None,
    *,
    reasoning: tuple[str, str] | None = None,
    opened: bool | None = False,
    stop: Sequence[str] = (),
    wire: bool = False,
    salvage: bool = True,
    schemas: Schemas | None = None,
) -> ModelOutputParser:
    """The parser for `tool_format` (a FORMATS name or alias), wrapped for raw output.

    `opened`: whether the prompt left a reasoning block open (None: not known, so the
    reply's own text decides). `schemas`: tool name -> parameters schema, to type the
    arguments of formats that carry them as text."""
    fmt = canonical_format(tool_format)
    names = None if tool_names is None else list(tool_names)
    inner: Any
    openers: tuple[str, ...] = (TOOL_CALL_OPEN,)
    if fmt == "gpt_oss_harmony":
        inner = HarmonyStreamParser(names)
    elif fmt in NATIVE:
        inner = NativeStreamParser(NATIVE[fmt], names, schemas=schemas, reasoning=reasoning)
        openers = tuple(r.opener for r in NATIVE[fmt].regions if r.opener)
    else:
        inner = GenericStreamParser(names, salvage_bare_json=salvage)
    if reasoning is not None and opened is not False and fmt != "gpt_oss_harmony":
        inner = ReasoningLead(inner, reasoning, openers, "open" if opened else "maybe")
    return ModelOutputParser(inner, stop, bool(format_record(fmt).stops), wire)


def parse_tool_calls(
    text: str,
    tool_names: Iterable[str] | None = None,
    *,
    format: str = "hermes",
    tools: Sequence[dict[str, Any]] | None = None,
    think_open: bool = False,
) -> ParseResult:
    """Prose, reasoning, tool calls and diagnostics of one completion in `format` (a
    FORMATS name or alias). Never raises on model text.

    `tools` (OpenAI-style specs) name the tools when `tool_names` is not given, and type
    the arguments of formats that carry them as text. `think_open`: the prompt opened a
    reasoning block (for formats other than Hermes, left False, the text decides). The
    same answer as the format's stream parser on any chunking of `text`, because it is
    that parser.
    """
    schemas = tool_schemas(tools)
    if tool_names is None and tools is not None:
        tool_names = list(schemas)
    fmt = canonical_format(format)
    if fmt == "hermes":
        return _parse_generic(text, tool_names, think_open=think_open)
    parser = parser_for(
        fmt,
        tool_names,
        reasoning=format_record(fmt).reasoning,
        opened=True if think_open else None,
        schemas=schemas,
    )
    fed = parser.feed(text)
    finished = parser.finish()
    unclosed = [e.call.id for e in finished if e.call is not None and not e.call.salvaged]
    return result_from_events(coalesce(fed + finished), unclosed)


def tool_schemas(tools: Iterable[Any] | None) -> dict[str, dict[str, Any]]:
    """Tool name -> its parameters schema, from OpenAI-style specs (others ignored)."""
    out: dict[str, dict[str, Any]] = {}
    for spec in tools or ():
        fn = spec.get("function", spec) if isinstance(spec, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            out[fn["name"]] = params if isinstance(params, dict) else {}
    return out
