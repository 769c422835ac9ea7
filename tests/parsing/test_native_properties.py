"""Every format bosun writes and reads, under arbitrary input (hypothesis).

For each format: a call written in it (`agent.parsing.shapes.write_call`) parses back to
the same call; any text, however damaged, parses without raising; and any chunking gives
the same events as the text fed at once.
"""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.parsing import FORMATS, coalesce, parse_tool_calls, parser_for
from agent.parsing.formats import FORMAT_REASONING, THINK_PAIR
from agent.parsing.shapes import SHAPES, write_call

WRITTEN = sorted(SHAPES)
# Text that XML-like and Python-like formats carry raw: no markup characters, and no
# whitespace at the ends (Qwen3-Coder's layout newlines are not part of a value).
_SAFE = string.ascii_letters + string.digits + " .,:;!?-_/=+*#@%()'éß上海"
safe_text = st.text(alphabet=_SAFE, min_size=1, max_size=12).map(str.strip).filter(bool)
json_text = st.text(max_size=12)
names = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
keys = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
scalars = st.one_of(st.integers(-(10**6), 10**6), st.booleans())


def _values(text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    leaf = st.one_of(text, scalars)
    return st.one_of(
        leaf,
        st.lists(st.one_of(text, st.integers(0, 99)), max_size=3),
        st.dictionaries(keys, st.one_of(text, st.integers(0, 99)), max_size=2),
    )


def _schema(value: Any) -> dict[str, Any]:
    kind = {bool: "boolean", int: "integer", str: "string", list: "array", dict: "object"}
    return {"type": kind[type(value)]}


def _tools(name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    props = {k: _schema(v) for k, v in args.items()}
    return [{"type": "function", "function": {"name": name, "parameters": {"properties": props}}}]


def _text_for(fmt: str) -> st.SearchStrategy[str]:
    return json_text if SHAPES[fmt].args == "json" else safe_text


@pytest.mark.parametrize("fmt", WRITTEN)
def test_a_written_call_parses_back_to_the_same_call(fmt: str) -> None:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(name=names, args=st.dictionaries(keys, _values(_text_for(fmt)), max_size=3))
    def check(name: str, args: dict[str, Any]) -> None:
        text = write_call(fmt, name, args)
        assert text is not None
        result = parse_tool_calls(text, format=fmt, tools=_tools(name, args))
        assert [(c.name, c.arguments) for c in result.calls] == [(name, args)], text
        assert result.diagnostics == [] and result.text.strip() == ""

    check()


def _soup(fmt: str) -> st.SearchStrategy[str]:
    """Text built from the format's own markup, its written calls cut anywhere, and
    prose: what a damaged completion of that model looks like."""
    sample = write_call(fmt, "read_file", {"path": "a.txt", "n": 3}) or ""
    pair = FORMAT_REASONING.get(fmt, THINK_PAIR) or ("<think>", "</think>")
    pieces = [sample, *pair, "\n", " ", "x", "{", "}", "[", "]", "<", ">", '"', "<|", "|>"]
    cuts = [sample[:k] for k in range(0, len(sample), max(1, len(sample) // 6))]
    return st.lists(st.sampled_from(pieces + cuts + [sample[k:] for k in (3, 7)]), max_size=12).map(
        "".join
    )


def _events(fmt: str, chunks: list[str], opened: bool | None) -> tuple[list[Any], list[str]]:
    parser = parser_for(fmt, None, reasoning=FORMAT_REASONING.get(fmt, THINK_PAIR), opened=opened)
    fed = [e for c in chunks for e in parser.feed(c)]
    finished = parser.finish()
    return coalesce(fed + finished), [e.call.id for e in finished if e.call is not None]


@pytest.mark.parametrize("fmt", FORMATS)
def test_any_chunking_gives_the_one_shot_events(fmt: str) -> None:
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        text=_soup(fmt) if fmt in SHAPES else st.text(max_size=60),
        cuts=st.lists(st.integers(0, 200), max_size=6),
        opened=st.sampled_from([None, True, False]),
    )
    def check(text: str, cuts: list[int], opened: bool | None) -> None:
        points = sorted({min(c, len(text)) for c in cuts})
        chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
        one_shot = _events(fmt, [text], opened)
        assert _events(fmt, chunks, opened) == one_shot
        assert _events(fmt, list(text), opened) == one_shot

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_never_raises_on_any_text(fmt: str) -> None:
    @settings(max_examples=40, deadline=None)
    @given(text=st.text(max_size=80))
    def check(text: str) -> None:
        parse_tool_calls(text, format=fmt)
        parse_tool_calls(text, format=fmt, think_open=True)

    check()


@pytest.mark.parametrize("fmt", WRITTEN)
def test_a_cut_off_call_is_never_a_different_call(fmt: str) -> None:
    """Every prefix of a written call: no call, or the whole call (the reply stopped
    where the call ended); never a call with part of its arguments."""
    args = {"path": "src/a b.py", "count": 12, "flag": True, "tags": ["x", "y"]}
    tools = _tools("read_file", args)
    text = write_call(fmt, "read_file", args)
    assert text is not None
    for k in range(len(text)):
        calls = parse_tool_calls(text[:k], format=fmt, tools=tools).calls
        assert calls == [] or [(c.name, c.arguments) for c in calls] == [("read_file", args)], text[
            :k
        ]


@pytest.mark.parametrize("fmt", WRITTEN)
def test_several_written_calls_parse_back_in_order(fmt: str) -> None:
    from agent.parsing.shapes import write_calls

    calls = [("read_file", {"path": "a.txt"}), ("grep", {"pattern": "TODO", "limit": 5})]
    text = write_calls(fmt, calls)
    schemas = [*_tools("read_file", calls[0][1]), *_tools("grep", calls[1][1])]
    result = parse_tool_calls(text or "", format=fmt, tools=schemas)
    assert [(c.name, c.arguments) for c in result.calls] == calls, text
