"""Properties: never raise, and any chunking gives the events of the one-shot parse.

Run with HYPOTHESIS_PROFILE=ci for 10,000 examples per property.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.history import ToolCall
from agent.parsing import coalesce
from agent.parsing.base import WS
from agent.parsing.harmony import parse_harmony
from tests.parsing.harmony.support import (
    CALL_CLOSE,
    any_harmony,
    at_most,
    comparable,
    completions,
    harmony_text,
    near_harmony,
    split_at,
    stream,
)

CUTS = st.lists(st.integers(min_value=1, max_value=400), max_size=12)


@given(text=harmony_text(), cuts=CUTS)
def test_any_chunking_gives_the_one_shot_events(text: str, cuts: list[int]) -> None:
    check_chunkings(text, cuts)


@at_most(1_000)
@given(text=near_harmony(), cuts=CUTS)
def test_any_chunking_of_damaged_completions_gives_the_one_shot_events(
    text: str, cuts: list[int]
) -> None:
    """Well-formed completions with fragments spliced in and cut short: the soup above
    rarely builds a whole call, these reach every state with real bodies."""
    check_chunkings(text, cuts)


def check_chunkings(text: str, cuts: list[int]) -> None:
    one_shot = comparable([text])
    assert comparable(split_at(text, cuts)) == one_shot
    fed, finished = stream(list(text))  # a split at every position at once
    unclosed = [e.call.id for e in finished if e.call is not None]
    assert (coalesce(fed + finished), unclosed) == one_shot


@at_most(300)
@given(text=st.one_of(harmony_text(max_parts=14), near_harmony()))
def test_a_single_split_anywhere_gives_the_one_shot_events(text: str) -> None:
    one_shot = comparable([text])
    for i in range(1, len(text)):
        assert comparable([text[:i], text[i:]]) == one_shot, i


@at_most(2_000)
@given(text=st.text(max_size=300))
def test_never_raises_on_arbitrary_text(text: str) -> None:
    """Capped: the 10,000 soups above also never raise, and their pieces include
    arbitrary text; this adds long runs with no marker-like piece at all."""
    parse_harmony(text)
    stream(list(text))


@at_most(300)
@given(text=any_harmony())
def test_calls_need_a_closing_marker_and_finish_yields_at_most_the_last(text: str) -> None:
    """A call closes at <|call|> or <|end|>; only the body the text ends in can be a
    call from finish() (generation stopped on <|call|>, which the text does not show)."""
    fed, finished = stream([text])
    calls = [e.call for e in fed if e.call is not None]
    late = [e.call for e in finished if e.call is not None]
    assert len(late) <= 1
    assert len(calls) <= text.count(CALL_CLOSE) + text.count("<|end|>")
    everything = calls + late
    assert [c.id for c in everything] == [f"call_{k}" for k in range(1, len(everything) + 1)]
    assert all(isinstance(c.arguments, dict) and c.name for c in everything)


@at_most(500)
@given(text=st.text(alphabet=st.characters(blacklist_characters="<"), max_size=200))
def test_text_without_markers_is_final_text(text: str) -> None:
    r = parse_harmony(text)
    assert (r.text, r.reasoning, r.calls, r.diagnostics) == (text.strip(WS), "", [], [])


@at_most(500)
@given(case=completions(), cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=12))
def test_well_formed_completions_parse_to_what_they_say(
    case: tuple[str, list[tuple[str, object]]], cuts: list[int]
) -> None:
    text, meaning = case
    calls = [m for kind, m in meaning if kind == "call"]
    expected = (
        "\n\n".join(str(m) for kind, m in meaning if kind == "text"),
        "\n".join(str(m) for kind, m in meaning if kind == "reasoning"),
        [ToolCall(f"call_{k}", *c) for k, c in enumerate(calls, 1)],  # type: ignore[misc]
        [],
    )
    r = parse_harmony(text)
    assert (r.text, r.reasoning, r.calls, r.diagnostics) == expected
    assert comparable(split_at(text, cuts)) == comparable([text])


@at_most(60)
@given(case=completions())
def test_well_formed_completions_split_anywhere(case: tuple[str, list[tuple[str, object]]]) -> None:
    text = case[0]
    one_shot = comparable([text])
    for i in range(1, len(text)):
        assert comparable([text[:i], text[i:]]) == one_shot, i
