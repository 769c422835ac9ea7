"""Helpers for the parser tests: streaming runs, chunkings, model-like text."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from hypothesis import settings
from hypothesis import strategies as st

from agent.parsing import Event, GenericStreamParser, coalesce


def call(name: str, **arguments: object) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def split_at(text: str, cuts: Iterable[int]) -> list[str]:
    points = sorted({c for c in cuts if 0 < c < len(text)})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


def stream(
    chunks: Sequence[str], tool_names: Iterable[str] | None = None, think_open: bool = False
) -> tuple[list[Event], list[Event]]:
    """(events from feed() calls, events from finish())."""
    parser = GenericStreamParser(tool_names, think_open=think_open)
    fed: list[Event] = []
    for chunk in chunks:
        fed += parser.feed(chunk)
    return fed, parser.finish()


def comparable(
    chunks: Sequence[str], tool_names: Iterable[str] | None = None, think_open: bool = False
) -> tuple[list[Event], list[str]]:
    """What streaming parity compares: the merged events, and which calls only finish()
    reported (the runtime treats those as possibly truncated)."""
    fed, finished = stream(chunks, tool_names, think_open)
    late = [e.call.id for e in finished if e.call is not None]
    return coalesce(fed + finished), late


GOOD_CALL = '{"name": "read_file", "arguments": {"path": "a.txt"}}'
FRAGMENTS = [
    "<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_result>", "</tool_result>",
    "<tool_", "</", "<", ">", "```", "```json\n", "```python\n", "~~~", "`", "``", "\n",
    "\n\n", " ", "  ", "\t", "\r\n", "{", "}", "[", "]", '"', "\\", ":", ",", '"name"',
    '"arguments"', '"input"', ": ", "name", GOOD_CALL, '{"name": "x"}',
    '{"name": 3, "arguments": {}}',
    '{"name": "w", "arguments": "{\\"a\\": 1}"}', '{"name": "ls", "input": {}}',
    "<function=read_file>", "<parameter=path>", "</parameter>", "</function>", "hello",
    "Let me look.", "a.txt", "5", "true", "null", "x", "é", "🙂",
]  # fmt: skip


def model_text(max_parts: int = 40) -> st.SearchStrategy[str]:
    """Text built from the pieces parsers trip on, plus arbitrary characters."""
    part = st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4))
    return st.lists(part, max_size=max_parts).map("".join)


def at_most(n: int) -> settings:
    """The active profile, capped at `n` examples: for properties that repeat what a
    10,000-example property already covers, to keep the CI run near a minute."""
    return settings(max_examples=min(n, settings.default.max_examples))
