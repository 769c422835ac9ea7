"""The loop guard: a reply stuck repeating itself is stopped early; normal text and
repetitive tool-call content are not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent import events as ev
from agent.loop.loopguard import LoopGuard
from tests.helpers import make_agent, tool_call

REPO = Path(__file__).resolve().parents[2]
SENTENCE = "It's a tool that helps you find out what your own code is doing. "


def fed(text: str, size: int = 7) -> bool:
    guard = LoopGuard()
    return any([guard.feed(text[i : i + size]) for i in range(0, len(text), size)])


def test_a_word_fragment_loop_trips() -> None:
    assert fed("def hello_test" + "_non_empty" * 40)


def test_a_sentence_loop_trips_even_when_its_line_breaks_move() -> None:
    words = (SENTENCE * 8).split(" ")
    # Line breaks at a different place in each repetition, as SmolLM2 writes them.
    text = "".join(w + ("\n" if i % 23 == 0 else " ") for i, w in enumerate(words))
    assert fed(text)


def test_it_trips_soon_after_the_loop_starts() -> None:
    guard = LoopGuard()
    text = "Here is my answer. " + SENTENCE * 20
    at = next(i for i in range(len(text)) if guard.feed(text[i]))
    assert at < len("Here is my answer. ") + 6 * len(SENTENCE)


@pytest.mark.parametrize(
    "text",
    [
        (REPO / "contracts" / "README.md").read_text(encoding="utf-8"),
        (REPO / "agent" / "loop" / "runtime.py").read_text(encoding="utf-8"),
        "ha ha ha ha ha ha, that was funny. " * 2,  # short repeats are not a loop
        "-" * 150,  # a rule under a heading is shorter than the minimum span
    ],
    ids=["readme", "code", "short-repeats", "rule"],
)
def test_ordinary_text_does_not_trip(text: str) -> None:
    assert not fed(text)
    assert not fed(text, size=1)


@given(st.text(min_size=1, max_size=40), st.integers(min_value=1, max_value=50))
def test_any_passage_repeated_over_the_minimum_span_trips(unit: str, size: int) -> None:
    collapsed = re.sub(r"\s+", " ", unit)
    if len(collapsed.strip()) < 1:
        return
    copies = 2 * (LoopGuard().min_span // len(unit) + LoopGuard().min_repeats) + 40
    assert fed("intro " + unit * copies, size)


def test_the_runtime_stops_a_looping_answer_and_keeps_it(workspace: Path) -> None:
    looping = "Sure. " + SENTENCE * 60
    words = re.findall(r"\S+\s*", looping)
    agent, driver, events = make_agent([{"completion": looping, "chunks": words}], workspace)
    result = agent.run("What is this?")
    driver.assert_complete()
    assert result.status == "done" and result.turns == 1
    assert [e.message for e in events if isinstance(e, ev.Diagnostic)] == [
        "stopped the reply early: it kept repeating itself"
    ]
    # Stopped early: what was kept is a prefix of the reply, well short of all of it.
    assert looping.startswith(result.final_text)
    assert len(result.final_text) < len(looping) / 4


def test_repetitive_file_content_in_a_tool_call_is_not_cut(workspace: Path) -> None:
    rows = "0,0,0,0\n" * 200
    call = tool_call("write_file", path="zeros.csv", content=rows)
    agent, driver, events = make_agent(
        [{"completion": call, "chunks": [call[i : i + 5] for i in range(0, len(call), 5)]}, "ok"],
        workspace,
    )
    result = agent.run("Write 200 rows of zeros to zeros.csv.")
    driver.assert_complete()
    assert result.status == "done" and result.tool_calls == 1
    assert not [e for e in events if isinstance(e, ev.Diagnostic)]
    assert (workspace / "zeros.csv").read_text(encoding="utf-8") == rows


@given(st.lists(st.text(max_size=300), max_size=40))
def test_the_guard_is_total_on_any_model_output(chunks: list[str]) -> None:
    guard = LoopGuard()
    answers = [guard.feed(chunk) for chunk in chunks]
    assert all(isinstance(a, bool) for a in answers)
    assert answers == sorted(answers)  # once tripped, it stays tripped
