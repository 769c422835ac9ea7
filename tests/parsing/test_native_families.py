"""The call formats of issue #35, as their models write them: Llama 3.2 and Llama 4
pythonic lists, Olmo 3's <function_calls> lines, InternLM 2.5's action tokens, Granite
3.x's <|tool_call|> list, Llama 3's bare JSON with prose around it, Phi-4-mini's
functools[…].

The replies are written from the models' own prompts and chat templates (what the
template teaches and how it prints past calls), not taken from a peer's tests. Each is
parsed whole, in random chunks and a character at a time: the same calls, prose and
diagnostics every time. Hostile replies end in a diagnostic or prose, never an
exception, and cost time linear in their length.
"""

from __future__ import annotations

import builtins
import random
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.parsing import coalesce, parse_tool_calls, parser_for
from agent.parsing.formats import FORMAT_REASONING, THINK_PAIR
from agent.parsing.shapes import write_call

W = "get_weather"
# (format, reply, expected calls, expected prose, diagnostics expected)
Case = tuple[str, str, list[tuple[str, dict[str, Any]]], str, bool]
CASES: list[Case] = [
    # Llama 3.2 under vLLM's pythonic template: a Python list, single or double quotes.
    ("pythonic", "[get_weather(city='San Francisco', metric='celsius')]",
     [(W, {"city": "San Francisco", "metric": "celsius"})], "", False),
    ("pythonic", '[get_weather(city="Paris"), get_time(timezone="Europe/Paris")]',
     [(W, {"city": "Paris"}), ("get_time", {"timezone": "Europe/Paris"})], "", False),
    ("pythonic", "I'll look for it.\n\n[search_files(pattern='TODO', hidden=False, limit=20)]",
     [("search_files", {"pattern": "TODO", "hidden": False, "limit": 20})],
     "I'll look for it.", False),
    ("pythonic",
     "[write_config(path='a.json', data={'retries': 3, 'hosts': ['a', \"b\"], 'tls': True, "
     "'proxy': None}, ratio=0.5, offset=-2)]",
     [("write_config", {"path": "a.json", "ratio": 0.5, "offset": -2,
                        "data": {"retries": 3, "hosts": ["a", "b"], "tls": True, "proxy": None}})],
     "", False),
    ("pythonic", "[set_flags(flags=[true, false, null], extra={'on': true})]",
     [("set_flags", {"flags": [True, False, None], "extra": {"on": True}})], "", False),
    ("pythonic", """[write_file(path='a.py', content='print("hi")\\nx = \\'y\\'')]""",
     [("write_file", {"path": "a.py", "content": "print(\"hi\")\nx = 'y'"})], "", False),
    ("pythonic", "[get_weather(city='Oslo')]\nI asked for the weather in Oslo.",
     [(W, {"city": "Oslo"})], "I asked for the weather in Oslo.", False),
    ("pythonic", "[list_dir()]", [("list_dir", {})], "", False),
    ("pythonic", "See [1] and [the docs](https://x.org). Use [len(x)] to count [a, b].",
     [], "See [1] and [the docs](https://x.org). Use [len(x)] to count [a, b].", False),
    # Llama 4: the same list, inside <|python_start|> or bare, ended by <|eot|>.
    ("pythonic",
     '<|python_start|>[get_weather(location="Vancouver"), '
     'calculate_route(start="Boston", end="New York")]<|python_end|>',
     [(W, {"location": "Vancouver"}), ("calculate_route", {"start": "Boston", "end": "New York"})],
     "", False),
    ("pythonic", '[get_weather(location="Vancouver")]<|eot|>',
     [(W, {"location": "Vancouver"})], "", False),
    ("pythonic", "<|python_start|>get_weather(location='Lima')<|python_end|><|eom|>",
     [(W, {"location": "Lima"})], "", False),
    # Malformed and cut-off calls: a diagnostic, never a call.
    ("pythonic", "[get_weather(city=San Francisco)]", [], "", True),
    ("pythonic", "[get_weather(city='San Fran", [], "", True),
    ("pythonic", "[run(cmd=__import__('os').system('touch /tmp/pwned'))]", [], "", True),
    # Olmo 3: one call per line inside <function_calls>, JSON's true/false/null.
    ("olmo3", "<function_calls>\nget_weather(city='New York', units='celsius')\n</function_calls>",
     [(W, {"city": "New York", "units": "celsius"})], "", False),
    ("olmo3",
     "Let me look at the sources first.\n<function_calls>\nread_file(path='src/main.py')\n"
     "list_dir(path='src', recursive=false, depth=null)\n</function_calls><|im_end|>",
     [("read_file", {"path": "src/main.py"}),
      ("list_dir", {"path": "src", "recursive": False, "depth": None})],
     "Let me look at the sources first.", False),
    ("olmo3", '<function_calls>\nedit(path="a.txt", opts={"dry_run": true, "n": [1, 2]})\n'
              "</function_calls>",
     [("edit", {"path": "a.txt", "opts": {"dry_run": True, "n": [1, 2]}})], "", False),
    ("olmo3", "<think>The user wants the file.</think>\n<function_calls>\nread_file(path='a')\n"
              "</function_calls>",
     [("read_file", {"path": "a"})], "", False),
    ("olmo3", "<function_calls>\nread_file('README.md')\n</function_calls>", [], "", True),
    ("olmo3", "<function_calls>\nread_file(path='READ", [], "", True),
    # InternLM 2.5: the plugin action, JSON with "parameters" (or "arguments").
    ("internlm2", '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": '
                  '{"city": "Shanghai"}}<|action_end|>',
     [(W, {"city": "Shanghai"})], "", False),
    ("internlm2", 'I need the weather first.<|action_start|><|plugin|>\n{"name": "get_weather", '
                  '"arguments": {"city": "Beijing", "days": 2}}<|action_end|><|im_end|>',
     [(W, {"city": "Beijing", "days": 2})], "I need the weather first.", False),
    ("internlm2", '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"ci',
     [], "", True),
    # Granite 3.x: <|tool_call|> and a JSON list, spaced any way.
    ("granite", '<|tool_call|>[{"arguments": {"city": "Boston"}, "name": "get_weather"}]',
     [(W, {"city": "Boston"})], "", False),
    ("granite", '<|tool_call|>\n[\n  {"name": "list_dir", "arguments": {}},\n'
                '  {"name": "read_file", "arguments": {"path": "x.md"}}\n]',
     [("list_dir", {}), ("read_file", {"path": "x.md"})], "", False),
    ("granite", '<|tool_call|> [{"name": "get_weather", "arguments": {"city": "Rome"}}] ',
     [(W, {"city": "Rome"})], "", False),
    # Llama 3.x JSON: bare, with prose before or after, after <|python_tag|>.
    ("llama3_json", '{"name": "get_weather", "parameters": {"city": "Tokyo"}}',
     [(W, {"city": "Tokyo"})], "", False),
    ("llama3_json", 'To answer I need the weather.\n\n{"name": "get_weather", "parameters": '
                    '{"city": "Tokyo"}}',
     [(W, {"city": "Tokyo"})], "To answer I need the weather.", False),
    ("llama3_json", '{"name": "get_weather", "parameters": {"city": "Tokyo"}}\n\nThis fetches '
                    "the weather.<|eot_id|>",
     [(W, {"city": "Tokyo"})], "This fetches the weather.", False),
    ("llama3_json", '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Oslo"}}'
                    "<|eom_id|>",
     [(W, {"city": "Oslo"})], "", False),
    ("llama3_json", '{"type": "function", "name": "get_weather", "parameters": {"city": "Oslo"}}; '
                    '{"name": "get_time", "parameters": {}}',
     [(W, {"city": "Oslo"}), ("get_time", {})], "", False),
    ("llama3_json", 'The config is {"debug": true} and {"name": "Ada", "age": 36} is a record.',
     [], 'The config is {"debug": true} and {"name": "Ada", "age": 36} is a record.', False),
    ("llama3_json", 'Sure: {"name": "get_weather", "parameters": {"city": "Tok', [], "Sure:", True),
    # Phi-4-mini: functools[…] (vLLM's template), <|tool_call|>…<|/tool_call|>, bare JSON.
    ("phi4_mini", 'functools[{"name": "get_weather", "arguments": {"city": "Lima"}}]',
     [(W, {"city": "Lima"})], "", False),
    ("phi4_mini", 'I will call the tool.\nfunctools[{"name": "get_weather", "arguments": '
                  '{"city": "Lima"}}, {"name": "get_time", "arguments": {}}]<|end|>',
     [(W, {"city": "Lima"}), ("get_time", {})], "I will call the tool.", False),
    ("phi4_mini", '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Quito"}}]'
                  "<|/tool_call|>",
     [(W, {"city": "Quito"})], "", False),
    ("phi4_mini", '{"name": "get_weather", "arguments": {"city": "Lima"}}',
     [(W, {"city": "Lima"})], "", False),
]  # fmt: skip


def _run(fmt: str, chunks: list[str]) -> tuple[list[Any], str, list[str]]:
    parser = parser_for(fmt, None, reasoning=FORMAT_REASONING.get(fmt, THINK_PAIR))
    events = coalesce([e for c in chunks for e in parser.feed(c)] + parser.finish())
    calls = [(e.call.name, e.call.arguments) for e in events if e.call is not None]
    text = "".join(e.text for e in events if e.kind == "text")
    return calls, text, [e.text for e in events if e.kind == "diagnostic"]


def _chunkings(text: str, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    out = [[text], list(text)]
    for _ in range(3):
        cuts = sorted(rng.sample(range(len(text) + 1), min(5, len(text) + 1)))
        out.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)])
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}:{c[1][:40]}")
def test_each_family_reads_its_replies_in_any_chunking(case: Case) -> None:
    fmt, text, calls, prose, diagnosed = case
    first = _run(fmt, [text])
    assert first[0] == calls
    assert first[1].strip() == prose
    assert bool(first[2]) == diagnosed, first[2]
    for chunks in _chunkings(text, seed=len(text)):
        assert _run(fmt, chunks) == first
    result = parse_tool_calls(text, format=fmt)
    assert [(c.name, c.arguments) for c in result.calls] == calls


def test_python_values_are_never_evaluated(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("eval was called")

    monkeypatch.setattr(builtins, "eval", refuse)
    monkeypatch.setattr(builtins, "exec", refuse)
    text = "[f(a=(lambda: 1)(), b=open('/etc/passwd').read(), c='ok')]"
    result = parse_tool_calls(text, format="pythonic")
    assert result.calls == [] and result.diagnostics
    assert parse_tool_calls("[f(c='ok')]", format="pythonic").calls[0].arguments == {"c": "ok"}


HOSTILE = [
    "[" * 50_000,
    "[f(" * 20_000,
    "[f(a=" + "[" * 5_000 + "]" * 5_000 + ")]",
    "[f(a='" + "x" * 400_000 + "')]",
    "see [x(y) " * 10_000,
    "[f(a=1) " * 10_000,
    '{"name": ' * 20_000,
    '{"name": "f", "parameters": ' + "[" * 5_000,
    "<function_calls>\n" + "f(a=1)\n" * 5_000,
    "<function_calls>\n" + "f(" * 20_000,
    "<|python_start|>" + "[" * 30_000,
    "functools[" + "{" * 20_000,
    "<|tool_call|>" + '[{"name": "f", "arguments": {}}, ' * 5_000,
]
FAMILIES = ("pythonic", "olmo3", "internlm2", "granite", "llama3_json", "phi4_mini")


@pytest.mark.parametrize("fmt", FAMILIES)
def test_hostile_replies_end_in_words_not_exceptions(fmt: str) -> None:
    for text in HOSTILE:
        started = time.perf_counter()
        calls, _, _ = _run(fmt, [text[k : k + 4096] for k in range(0, len(text), 4096)])
        assert time.perf_counter() - started < 10, (fmt, text[:30])
        assert all(isinstance(args, dict) for _, args in calls)


def _cost(fmt: str, text: str) -> float:
    started = time.perf_counter()
    _run(fmt, [text[k : k + 1024] for k in range(0, len(text), 1024)])
    return time.perf_counter() - started


@pytest.mark.parametrize(
    ("fmt", "unit"),
    [
        ("pythonic", "Look at [x(y)] and [len(z)] here. "),
        ("pythonic", "[get_weather(city='Oslo'), "),
        ("llama3_json", 'See {"name": "x"} and {"a": [1, {"b": 2}]}. '),
        ("olmo3", "<function_calls>\nread_file(path='a')\n</function_calls>\n"),
    ],
)
def test_scanning_stays_linear(fmt: str, unit: str) -> None:
    """Twice the text costs about twice the time, not four times (best of three, so a
    busy machine does not decide it)."""
    small = min(_cost(fmt, unit * 2_000) for _ in range(3))
    large = min(_cost(fmt, unit * 8_000) for _ in range(3))
    assert large < 10 * max(small, 1e-3), (small, large)


_PROSE = st.text(alphabet="abc xyz.,!?\n:'", max_size=30)


@pytest.mark.parametrize("fmt", ["pythonic", "llama3_json", "olmo3", "phi4_mini"])
def test_prose_around_a_written_call_keeps_the_call(fmt: str) -> None:
    @settings(max_examples=60, deadline=None)
    @given(before=_PROSE, after=_PROSE, cuts=st.lists(st.integers(0, 300), max_size=5))
    def check(before: str, after: str, cuts: list[int]) -> None:
        call = write_call(fmt, "read_file", {"path": "a b.txt", "n": 3}) or ""
        # A bare call opens a reply or follows prose; phi4_mini's bare JSON only opens it.
        lead = "" if fmt == "phi4_mini" and "functools" not in call else before
        text = f"{lead}\n{call}\n{after}" if lead else f"{call}\n{after}"
        points = sorted({min(c, len(text)) for c in cuts})
        chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
        whole = _run(fmt, [text])
        assert whole[0] == [("read_file", {"path": "a b.txt", "n": 3})], text
        assert _run(fmt, chunks) == whole

    check()


# The markup of all these families, cut into pieces and mixed with prose.
_PIECES = [
    "[", "]", "(", ")", "{", "}", "'", '"', "\\", "=", ",", " ", "\n", "get_weather",
    "city='x'", "a=1", "true", "null", "<|python_start|>", "<|python_end|>", "<|eot|>",
    "<|eot_id|>", "<function_calls>", "</function_calls>", "functools[", "<|tool_call|>",
    "<|/tool_call|>", '{"name": "f", "parameters": {}}', '{"name"', ": ", '"parameters"',
    "<|action_start|><|plugin|>", "<|action_end|>", "<think>", "</think>",
    "<|python_tag|>", "Some prose. ",
]  # fmt: skip


@pytest.mark.parametrize("fmt", [*FAMILIES, "lfm2"])
def test_any_chunking_of_family_markup_gives_the_one_shot_events(fmt: str) -> None:
    @settings(max_examples=150, deadline=None)
    @given(
        parts=st.lists(st.sampled_from(_PIECES), max_size=25),
        cuts=st.lists(st.integers(0, 300), max_size=6),
    )
    def check(parts: list[str], cuts: list[int]) -> None:
        text = "".join(parts)
        points = sorted({min(c, len(text)) for c in cuts})
        chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
        whole = _run(fmt, [text])
        assert _run(fmt, chunks) == whole
        assert _run(fmt, list(text)) == whole

    check()
