"""A completion cut at any byte: never a call unless <|call|> closed it, never twice."""

from __future__ import annotations

from agent.history import ToolCall
from agent.parsing.harmony import parse_harmony
from tests.harmony.support import REALISTIC, REALISTIC_ARGS, comparable, stream

FULL_CALL = [ToolCall("call_1", "read_file", REALISTIC_ARGS)]


def test_truncation_at_every_byte_is_never_a_call() -> None:
    body_at = REALISTIC.rindex("<|message|>") + len("<|message|>")
    for k in range(len(REALISTIC)):
        prefix = REALISTIC[:k]
        fed, finished = stream([prefix])
        calls = [e.call for e in fed + finished if e.kind == "tool_call"]
        assert calls == [], k
        if k >= body_at:  # inside the call body: the cut is reported, not swallowed
            assert [e.kind for e in finished] == ["diagnostic"], k
    assert parse_harmony(REALISTIC).calls == FULL_CALL


def test_truncated_streams_match_their_one_shot_parse() -> None:
    for k in range(0, len(REALISTIC), 7):
        prefix = REALISTIC[:k]
        assert comparable(list(prefix)) == comparable([prefix]), k


def test_finish_never_yields_a_call_or_repeats_text() -> None:
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


def test_a_call_the_driver_stopped_on_needs_its_call_marker_fed_back() -> None:
    """llama.cpp ends gpt-oss generation at <|call|> (an end-of-generation token) and
    drivers strip stop strings, so the text stops short of it; only the runtime, told
    which token stopped the stream, can feed it back. Without it: a diagnostic."""
    stopped = REALISTIC.removesuffix("<|call|>")
    fed, finished = stream([stopped])
    assert [e.kind for e in fed + finished if e.kind in ("tool_call", "diagnostic")] == [
        "diagnostic"
    ]
    fed, finished = stream([stopped, "<|call|>"])
    assert [e.call for e in fed if e.kind == "tool_call"] == FULL_CALL and finished == []
