"""Properties: never raise, and any chunking gives the events of the one-shot parse.

Run with HYPOTHESIS_PROFILE=ci for 10,000 examples per property.
"""

from __future__ import annotations

import re

from hypothesis import assume, given
from hypothesis import strategies as st

from agent.markup import strip_markup
from agent.parsing import coalesce, parse_tool_calls
from tests.parsing.support import (
    GOOD_CALL,
    at_most,
    call,
    comparable,
    model_text,
    split_at,
    stream,
)

TOOLS = st.sampled_from([None, ["read_file", "ls"]])


@given(
    text=model_text(),
    cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=12),
    tools=TOOLS,
    think_open=st.booleans(),
)
def test_any_chunking_gives_the_one_shot_events(
    text: str, cuts: list[int], tools: list[str] | None, think_open: bool
) -> None:
    one_shot = comparable([text], tools, think_open)
    assert comparable(split_at(text, cuts), tools, think_open) == one_shot
    # a split at every position at once, checked against parse_tool_calls as well
    fed, finished = stream(list(text), tools, think_open)
    events = coalesce(fed + finished)
    assert (events, [e.call.id for e in finished if e.call]) == one_shot
    result = parse_tool_calls(text, tools, think_open=think_open)
    assert [e.call for e in events if e.kind == "tool_call"] == result.calls
    assert "".join(e.text for e in events if e.kind == "text") == result.text
    assert "".join(e.text for e in events if e.kind == "reasoning") == result.reasoning
    assert [e.text for e in events if e.kind == "diagnostic"] == result.diagnostics
    assert [e.call.id for e in finished if e.call and not e.call.salvaged] == result.unclosed


@at_most(1_000)
@given(text=model_text(max_parts=14), tools=TOOLS)
def test_a_single_split_anywhere_gives_the_one_shot_events(
    text: str, tools: list[str] | None
) -> None:
    one_shot = comparable([text], tools)
    for i in range(1, len(text)):
        assert comparable([text[:i], text[i:]], tools) == one_shot, i


@at_most(2_000)
@given(text=model_text())
def test_ids_are_sequential_and_salvage_only_without_envelope_calls(text: str) -> None:
    calls = parse_tool_calls(text).calls
    envelope = [c.id for c in calls if not c.salvaged]
    salvaged = [c.id for c in calls if c.salvaged]
    assert envelope == [f"call_{k}" for k in range(1, len(envelope) + 1)]
    assert salvaged == [f"salvage-{k}" for k in range(1, len(salvaged) + 1)]
    assert not (envelope and salvaged)
    assert all(isinstance(c.arguments, dict) and isinstance(c.name, str) for c in calls)


@given(text=st.text(max_size=300), think_open=st.booleans())
def test_never_raises_on_arbitrary_text(text: str, think_open: bool) -> None:
    parse_tool_calls(text, think_open=think_open)
    parse_tool_calls(text, ["read_file"])
    stream(list(text), think_open=think_open)


@at_most(2_000)
@given(text=st.text(alphabet=st.characters(blacklist_characters="<{["), max_size=200))
def test_text_without_markup_comes_back_byte_for_byte(text: str) -> None:
    r = parse_tool_calls(text)
    assert r.text == text and r.calls == [] and r.diagnostics == []


_PROSE = st.sampled_from(["Hello", "world.", " ", "  ", "\n", "\n\n", "\t", "a `b` c", "x"])
_MARKUP = st.sampled_from(
    [
        call("ls", path="."),
        "<tool_call>" + GOOD_CALL + "</tool_call>",
        "<tool_result>\nout\n</tool_result>",
        "</tool_call>",
        '<tool_call>{"name": "x", "arguments": {"q": "</tool_call>"}}</tool_call>',
    ]
)


@at_most(2_000)
@given(parts=st.lists(st.one_of(_PROSE, _MARKUP), max_size=12))
def test_prose_matches_strip_markup(parts: list[str]) -> None:
    """The text convention is `strip_markup`'s, bar one documented difference: leading
    whitespace before the first prose stays when the removal comes later."""
    text = "".join(parts)
    assume(not re.match(r"\s+[^\s<]", text))
    assert parse_tool_calls(text).text == strip_markup(text)[0]
