"""A completion cut at any byte: a call only when its JSON is whole, never twice.

Generation stops on <|call|> (a stop token the text does not show), so a body left open
with complete JSON is a call, reported by finish(); the runtime runs such a call only
when no token limit cut the reply (tests/loop/test_runtime.py)."""

from __future__ import annotations

from agent.history import ToolCall
from agent.parsing.harmony import parse_harmony
from tests.parsing.harmony.support import REALISTIC, REALISTIC_ARGS, comparable, stream

FULL_CALL = [ToolCall("call_1", "read_file", REALISTIC_ARGS)]


def test_truncation_at_every_byte_is_never_a_partial_call() -> None:
    body_at = REALISTIC.rindex("<|message|>") + len("<|message|>")
    body_end = REALISTIC.rindex("<|call|>")
    for k in range(len(REALISTIC)):
        prefix = REALISTIC[:k]
        fed, finished = stream([prefix])
        assert [e for e in fed if e.kind == "tool_call"] == [], k
        calls = [e.call for e in finished if e.kind == "tool_call"]
        if body_at <= k < body_end:  # inside the JSON: the cut is reported, never run
            assert calls == [] and [e.kind for e in finished] == ["diagnostic"], k
        elif k == body_end:  # the whole JSON, stopped where <|call|> would be
            assert calls == FULL_CALL, k
        elif k > body_end:  # a cut inside the <|call|> marker itself: never a wrong call
            assert calls in ([], FULL_CALL), k
    assert parse_harmony(REALISTIC).calls == FULL_CALL


def test_truncated_streams_match_their_one_shot_parse() -> None:
    for k in range(0, len(REALISTIC), 7):
        prefix = REALISTIC[:k]
        assert comparable(list(prefix)) == comparable([prefix]), k


def test_finish_never_repeats_a_call_or_text() -> None:
    fed, finished = stream(list(REALISTIC))
    assert [e.kind for e in finished] == []
    assert [e.call for e in fed if e.kind == "tool_call"] == FULL_CALL
    assert "".join(e.text for e in fed if e.kind == "text") == "Let me look at it."
    final = "<|channel|>final<|message|>All done here.<|return|>"
    fed, finished = stream(list(final))
    assert "".join(e.text for e in fed + finished if e.kind == "text") == "All done here."
    fed, finished = stream(list(REALISTIC[: REALISTIC.index('"note"')]))
    assert [e.kind for e in finished] == ["diagnostic"]


def test_a_cut_after_the_inner_call_marker_is_not_a_call() -> None:
    inner = REALISTIC.index("<|call|>") + len("<|call|>")
    r = parse_harmony(REALISTIC[:inner])
    assert r.calls == [] and len(r.diagnostics) == 1


def test_a_call_the_driver_stopped_on_is_read_with_or_without_its_marker() -> None:
    """llama.cpp ends gpt-oss generation at <|call|> (an end-of-generation token) and
    drivers strip stop strings, so the text stops short of it. Fed back, the marker
    closes the call at once; not fed, finish() reports the same call."""
    stopped = REALISTIC.removesuffix("<|call|>")
    fed, finished = stream([stopped])
    assert [e.call for e in finished if e.kind == "tool_call"] == FULL_CALL
    assert [e.kind for e in fed + finished if e.kind == "diagnostic"] == []
    fed, finished = stream([stopped, "<|call|>"])
    assert [e.call for e in fed if e.kind == "tool_call"] == FULL_CALL and finished == []
