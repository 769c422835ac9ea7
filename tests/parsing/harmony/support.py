"""Helpers for the Harmony parser tests: streaming runs, chunkings, harmony-like text."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from hypothesis import settings
from hypothesis import strategies as st

from agent.parsing import Event, HarmonyStreamParser, coalesce

CALL_CLOSE = "<|call|>"
PROMPT_TAIL = "<|start|>assistant"  # what the generation prompt already wrote


def split_at(text: str, cuts: Iterable[int]) -> list[str]:
    points = sorted({c for c in cuts if 0 < c < len(text)})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


def stream(chunks: Sequence[str]) -> tuple[list[Event], list[Event]]:
    """(events from feed() calls, events from finish())."""
    parser = HarmonyStreamParser()
    fed: list[Event] = []
    for chunk in chunks:
        fed += parser.feed(chunk)
    return fed, parser.finish()


def comparable(chunks: Sequence[str]) -> tuple[list[Event], list[str]]:
    """Merged events, and the ids of calls finish() reported (the one a stop token
    ended, which the text does not show)."""
    fed, finished = stream(chunks)
    return coalesce(fed + finished), [e.call.id for e in finished if e.call is not None]


def call(name: str, arguments: object, header: str = " <|constrain|>json") -> str:
    """A complete call message as gpt-oss writes it after the generation prompt."""
    body = json.dumps(arguments, ensure_ascii=False)
    return f"<|channel|>commentary to=functions.{name}{header}<|message|>{body}<|call|>"


# A realistic completion: reasoning, a preamble, then a call whose arguments hold markers.
REALISTIC = (
    "<|channel|>analysis<|message|>The user wants the file. I should read a.txt first."
    "<|end|><|start|>assistant<|channel|>commentary<|message|>Let me look at it.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json"
    '<|message|>{"path": "a.txt", "note": "ends <|call|> or <|end|>?"}<|call|>'
)
REALISTIC_ARGS = {"path": "a.txt", "note": "ends <|call|> or <|end|>?"}

MARKERS = [
    "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>",
    "<|call|>",
]  # fmt: skip
FRAGMENTS = [
    *MARKERS, "<|", "<|ca", "<|en", "<", "|>", "|", "assistant", " to=functions.read_file",
    "to=functions.ls", " to=browser.search", "functions.read_file to=assistant", "analysis",
    "commentary", "final", " json", "json", "user", "{", "}", '"', '\\"', "\\", ":", ",",
    '"path"', '"a.txt"', '{"path": "a.txt"}', "{}", "[1]", "\n", " ", "\t", "hello",
    "Let me look.", "</tool_call>", "```", "é", "🙂", "<|start|>assistant",
    "<|channel|>analysis<|message|>", "<|channel|>final<|message|>",
    "<|channel|>commentary<|message|>", " to=functions.ls<|channel|>commentary json<|message|>",
    "<|channel|>commentary to=functions.ls <|constrain|>json<|message|>",
    '{"path": "a.txt"}<|call|>', '{"s": "<|end|>"}', "<|end|><|start|>assistant",
]  # fmt: skip


def harmony_text(max_parts: int = 40) -> st.SearchStrategy[str]:
    """Marker soup: the pieces a Harmony parser trips on, plus arbitrary characters."""
    part = st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4))
    return st.lists(part, max_size=max_parts).map("".join)


def at_most(n: int) -> settings:
    """The active profile capped at `n` examples, for properties a bigger one covers."""
    return settings(max_examples=min(n, settings.default.max_examples))


# -- well-formed completions with a known meaning -----------------------------------------

_PROSE = st.text(
    alphabet=st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=30
).map(lambda s: s.strip(" \t\r\n")).filter(bool) | st.sampled_from(["a < b", "x<y", "<"])
_VALUE = st.one_of(
    st.sampled_from(MARKERS), st.sampled_from(['"', "\\", "</tool_call>"]), st.text(max_size=8)
)
_ARGS = st.dictionaries(st.text(max_size=6), st.lists(_VALUE, max_size=4).map("".join), max_size=3)
_CALL_HEADERS = [
    "{start}<|channel|>commentary to=functions.{name} <|constrain|>json",
    "{start}<|channel|>commentary to=functions.{name}<|constrain|>json",
    "{start} to=functions.{name}<|channel|>commentary json",
    "{start} to=functions.{name}<|channel|>commentary <|constrain|>json",
    "{start}<|channel|>commentary to=functions.{name}",
]


@st.composite
def completions(draw: st.DrawFn) -> tuple[str, list[tuple[str, object]]]:
    """(completion text, what it means): a list of ("reasoning"|"text", str) and
    ("call", (name, arguments)) in order, written after the generation prompt."""
    parts: list[str] = []
    meaning: list[tuple[str, object]] = []
    for k in range(draw(st.integers(min_value=1, max_value=5))):
        start = "" if k == 0 else PROMPT_TAIL
        kind = draw(st.sampled_from(["reasoning", "final", "preamble", "call"]))
        if kind == "call":
            name = draw(st.sampled_from(["read_file", "ls", "run_shell"]))
            args = draw(_ARGS)
            header = draw(st.sampled_from(_CALL_HEADERS)).format(start=start, name=name)
            body = json.dumps(args, ensure_ascii=draw(st.booleans()))
            parts.append(f"{header}<|message|>{body}<|call|>")
            meaning.append(("call", (name, args)))
            continue
        prose = draw(_PROSE)
        channel = {"reasoning": "analysis", "final": "final", "preamble": "commentary"}[kind]
        closer = draw(
            st.sampled_from(["<|end|>", "<|return|>"] if kind == "final" else ["<|end|>"])
        )
        parts.append(f"{start}<|channel|>{channel}<|message|>{prose}{closer}")
        meaning.append(("reasoning" if kind == "reasoning" else "text", prose))
    return "".join(parts), meaning


@st.composite
def near_harmony(draw: st.DrawFn) -> str:
    """Well-formed completions with random fragments spliced in and random cuts."""
    text = draw(completions())[0]
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        at = draw(st.integers(min_value=0, max_value=len(text)))
        text = text[:at] + draw(harmony_text(max_parts=3)) + text[at:]
    return text[: draw(st.integers(min_value=0, max_value=len(text)))]


def any_harmony() -> st.SearchStrategy[str]:
    return st.one_of(harmony_text(), near_harmony())
