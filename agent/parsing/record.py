"""One record per tool-call format: every fact bosun knows about it, written once.

A format is a vocabulary: the markers that identify it in a chat template, the regions
its calls are read from, the shape a call is written (and constrained) in, the stop
strings and reasoning markers its models use. Those facts used to sit in one table per
kind, so adding a format meant editing five files and a forgotten one disagreed in
silence. Now each format is one `Format` (kept in `agent.parsing.catalog_1`,
`catalog_2` and `catalog_3`, or beside its own parser: harmony),
`agent.parsing.formats.REGISTRY` holds them all, and the old tables (`FORMATS`,
`SIGNATURES`, `NATIVE`, `SHAPES`, …) are views computed from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agent.parsing import decoders as d
from agent.parsing.native import Decoder, NativeFormat, Region

ArgsStyle = Literal["json", "kv", "python", "gemma"]

# The reasoning markers most models use; a format's record says where its models differ.
THINK_PAIR = ("<think>", "</think>")


@dataclass(frozen=True)
class Shape:
    """How one call looks, as data: the same description writes a call in the format
    (`agent.parsing.shapes.write_call`) and builds the grammar that constrains one
    (`agent.protocol.grammar_shapes`), so the two cannot disagree."""

    head: str  # before the arguments; "{name}" is the tool's name, "{index}" its number
    args: ArgsStyle
    tail: str
    # For "kv": the text around each value; "{key}" is the key, "{type}" its JSON type,
    # "{string}" "true" or "false" (whether the value is written as plain text).
    key_open: str = ""
    key_close: str = ""
    sep: str = ""  # between two key/value pairs (Python, Gemma)
    # Several calls share one section in some formats: its opening, closing and what
    # stands between two calls in it.
    section: tuple[str, str] = ("", "")
    join: str = ""
    # For constrained decoding only: other openings models of the format also write
    # ("{id}": a 9-character call id), other sections, text that may follow the calls,
    # and, where the variants are too many to list, the call's head as raw GBNF.
    alt_heads: tuple[str, ...] = ()
    alt_sections: tuple[tuple[str, str], ...] = ()
    trailer: str = ""
    gbnf_head: str = ""
    gbnf_prefix: str = ""

    def head_for(self, name: str, index: int = 0) -> str:
        return self.head.replace("{name}", name).replace("{index}", str(index))

    def tail_for(self, index: int = 0) -> str:
        return self.tail.replace("{id}", f"{index + 1:09d}")


@dataclass(frozen=True)
class Format:
    """Everything about one tool-call format. Only `name` is required: a format bosun
    can parse but not write has no `shape`, one with its own parser no `regions`."""

    name: str  # as llama.cpp's parser tests name it (the shared corpus is keyed by it)
    aliases: tuple[str, ...] = ()  # older or peer names for the same format
    # How a template's rendered call (or a model's output) shows this format: each entry
    # is one alternative, and every marker in it must occur. Which format is tried first
    # is `agent.parsing.formats.SIGNATURE_ORDER`'s to say, most specific first.
    signature: tuple[tuple[str, ...], ...] = ()
    # End-of-message tokens the parser itself reads (a harmony call exists only once its
    # call token closes it): the stop strings of such a reply, kept by the stop cut.
    stops: tuple[str, ...] = ()
    # The reasoning markers this format's models write where no template says otherwise
    # (a parse without a profile); None: the format has none, or carries it itself.
    reasoning: tuple[str, str] | None = THINK_PAIR
    # The native parse spec: where `NativeStreamParser` finds calls, and the control
    # tokens that may appear in prose and mean nothing. () for a format with a parser
    # of its own (hermes: fences and salvage; harmony: channels).
    regions: tuple[Region, ...] = ()
    strip: tuple[str, ...] = ()
    shape: Shape | None = None  # how bosun writes and constrains a call; None: it cannot
    # Its calls are wrapped in <tool_call>…</tool_call>: the tag remap
    # (`agent.parsing.wire`) can apply to it.
    enveloped: bool = False
    # The shipped template written for this format (its turns and its calls are one
    # markup), and the markers that show a model's own template speaks that markup, so
    # the shipped one can stand in for it.
    template: str | None = None
    turn_markers: tuple[str, ...] = ()

    @property
    def native(self) -> NativeFormat | None:
        """The description `NativeStreamParser` reads, or None for an own parser."""
        return NativeFormat(self.name, self.regions, self.strip) if self.regions else None


def json_shape(head: str, tail: str, section: tuple[str, str] = ("", ""), **more: Any) -> Shape:
    """A call whose arguments are one JSON object between `head` and `tail`."""
    return Shape(head, "json", tail, section=section, **more)


def json_region(opener: str, closer: str | None, decode: Decoder = d.json_calls) -> Region:
    """A region of JSON calls: a closer inside a JSON string does not end it."""
    return Region(opener, closer, decode, json=closer is not None)


# The tool routing renders a sample call with (`agent.protocol.template_facts`). Formats
# whose markup has no marker of its own (a Python list `[f(a=1)]`, a bare JSON object)
# are recognised by that call's head, so their signatures name it.
SAMPLE_NAME = "example_tool"

# Vocabulary several formats share (their models descend from one family).
NAMED = '{"name": "{name}", "arguments": '  # the OpenAI-style JSON call, up to its arguments
LLAMA3_END = ("<|eom_id|>", "<|eot_id|>")  # Llama 3's end-of-message tokens
LLAMA4_END = ("<|eom|>", "<|eot|>")  # Llama 4's
IM_END = "<|im_end|>"  # ChatML's end of turn
