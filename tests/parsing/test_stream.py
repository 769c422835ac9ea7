"""What the stream parser promises the runtime: when events come, and what is held."""

from __future__ import annotations

from agent.history import ToolCall
from agent.parsing import Event, GenericStreamParser
from tests.parsing.support import GOOD_CALL, call, stream


def test_a_closed_call_is_reported_by_feed() -> None:
    parser = GenericStreamParser()
    assert parser.feed("Reading.\n<tool_call>\n" + GOOD_CALL) == [Event("text", "Reading.")]
    events = parser.feed("\n</tool_call>")
    assert events == [Event("tool_call", call=ToolCall("call_1", "read_file", {"path": "a.txt"}))]
    assert parser.finish() == []


def test_an_unclosed_call_is_reported_by_finish_only() -> None:
    """The runtime refuses a finish()-only call when max_tokens cut the completion."""
    fed, finished = stream(["<tool_call>\n", GOOD_CALL])
    assert fed == []
    assert [e.call.id for e in finished if e.call] == ["call_1"]


def test_only_a_possible_partial_marker_is_held_back() -> None:
    parser = GenericStreamParser()
    assert parser.feed("Hello <tool_") == [Event("text", "Hello")]
    assert parser.feed("ca") == []
    assert parser.feed("ll>") == []
    assert parser.feed('{"name": "ls", "arguments": {}}</tool_call>') == [
        Event("tool_call", call=ToolCall("call_1", "ls", {}))
    ]
    assert parser.feed(" bye") == [Event("text", " bye")]
    assert parser.finish() == []


def test_a_lookalike_prefix_is_released_when_it_stops_matching() -> None:
    parser = GenericStreamParser()
    assert parser.feed("a <thin") == [Event("text", "a")]
    assert parser.feed("g> b") == [Event("text", " <thing> b")]


def test_text_and_reasoning_stream_as_they_arrive() -> None:
    parser = GenericStreamParser()
    assert parser.feed("<think>\nfirst") == [Event("reasoning", "first")]
    assert parser.feed(" second") == [Event("reasoning", " second")]
    assert parser.feed("</think>\n\nAnswer") == [Event("text", "Answer")]
    assert parser.feed(" goes on") == [Event("text", " goes on")]


def test_code_streams_line_by_line() -> None:
    parser = GenericStreamParser()
    assert parser.feed("```python\nx = 1\n") == [Event("text", "```python\nx = 1")]
    assert parser.feed("y = {") == [Event("text", "\ny = {")]


def test_a_salvage_candidate_holds_prose_until_finish() -> None:
    parser = GenericStreamParser()
    assert parser.feed("Reading. " + GOOD_CALL) == [Event("text", "Reading.")]
    assert parser.feed(" then more") == []
    events = parser.finish()
    assert [e.kind for e in events] == ["tool_call", "diagnostic", "text"]
    assert events[0].call is not None and events[0].call.id == "salvage-1"
    assert events[2].text == " then more"  # "Reading. then more": spacing as for an envelope


def test_an_envelope_call_releases_a_held_candidate_as_prose() -> None:
    parser = GenericStreamParser()
    parser.feed("Like " + GOOD_CALL + " but ")
    events = parser.feed(call("ls"))
    assert [e.kind for e in events] == ["text", "tool_call"]
    assert events[0].text == " " + GOOD_CALL + " but"


def test_feed_after_finish_and_finish_twice_are_empty() -> None:
    parser = GenericStreamParser()
    assert parser.feed("hi ") == [Event("text", "hi")]
    assert parser.finish() == [Event("text", " ")]  # nothing was removed: kept byte for byte
    assert parser.feed("more") == [] and parser.finish() == []


def test_empty_chunks_and_empty_completions() -> None:
    assert stream([]) == ([], [])
    assert stream(["", "", ""]) == ([], [])
