"""The strict scripted driver: replays, records, and refuses to be misused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drivers.base import Request, UsageError, collect
from drivers.scripted import ScriptedDriver, ScriptExhausted


def test_replays_in_order_and_records_every_prompt(script_file) -> None:
    d = ScriptedDriver(script_file("one", {"chunks": ["t", "wo"]}))
    first = collect(d.stream(Request("prompt A", stop=["<|im_end|>"], max_tokens=7)))
    chunks = [c.text for c in d.stream(Request("prompt A then B")) if c.text]
    assert first.text == "one"
    assert chunks == ["t", "wo"]
    assert d.prompts == ["prompt A", "prompt A then B"]
    assert d.calls[0].stop == ("<|im_end|>",) and d.calls[0].max_tokens == 7
    d.assert_complete()


def test_an_extra_call_raises(script_file) -> None:
    d = ScriptedDriver(script_file("only"))
    collect(d.stream(Request("a")))
    with pytest.raises(ScriptExhausted, match="unexpected call 2"):
        d.stream(Request("b"))
    assert d.prompts == ["a"]


def test_unused_completions_fail_assert_complete(script_file) -> None:
    d = ScriptedDriver(script_file("a", "b"))
    collect(d.stream(Request("x")))
    with pytest.raises(AssertionError, match="1 of 2 completions unused"):
        d.assert_complete()


def test_usage_counts_the_shared_prefix_as_cached(script_file) -> None:
    d = ScriptedDriver(script_file("a", "b"))
    u1 = collect(d.stream(Request("alpha beta"))).usage
    u2 = collect(d.stream(Request("alpha beta gamma"))).usage
    assert (u1.cached_tokens, u2.cached_tokens) == (0, 2)
    assert u2.prompt_tokens == 3


def test_finish_reason_is_replayed(script_file) -> None:
    d = ScriptedDriver(script_file({"completion": "cut", "finish_reason": "length"}))
    assert collect(d.stream(Request("p"))).finish_reason == "length"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"completion": "ok"}\n{oops\n', ":2: not valid JSON"),
        ('{"text": "no completion"}\n', ':1: expected a JSON object with a "completion" string'),
        ('["a"]\n', ":1: expected a JSON object"),
        ('{"completion": "ab", "chunks": ["a"]}\n', "do not add up"),
        ('{"chunks": [1]}\n', "must be a list of strings"),
        ('{"completion": "a", "finish_reason": "x"}\n', "finish_reason"),
    ],
)
def test_bad_script_files_are_usage_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UsageError, match=message):
        ScriptedDriver(path)


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not found"):
        ScriptedDriver(tmp_path / "absent.jsonl")


def test_blank_lines_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("\n" + json.dumps({"completion": "x"}) + "\n\n", encoding="utf-8")
    assert ScriptedDriver(path).remaining == 1
