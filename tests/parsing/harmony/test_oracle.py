"""bosun's gpt-oss prompts and parses, checked against OpenAI's own Harmony library.

`openai_harmony` (PyPI `openai-harmony`) is OpenAI's renderer and parser for Harmony.
Each conversation below is rendered by bosun (templates/harmony.jinja, through
`agent.protocol.render`) and by the library (`Conversation.from_messages`,
`render_conversation_for_completion`, decoded with `encoding.decode`), and the two must
be the same text, and the same tokens where no deviation applies. Completions go the
other way: bosun's parser must find what `parse_messages_from_completion_tokens` finds
(role, channel, recipient, content).

bosun differs from the library on purpose in these ways, and the comparison undoes each
one (tests/parsing/harmony/oracle.py) and nothing else; every other byte must match:

1. A call's recipient stands after the channel
   (`<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json`); the
   library writes it in the role header (`<|start|>assistant to=functions.NAME
   <|channel|>commentary <|constrain|>json`). gpt-oss writes it after the channel
   itself (OpenAI's cookbook shows that form), and bosun re-renders the model's own
   call byte for byte so the next prompt extends the cached one
   (test_render.py::test_a_canonical_model_call_rerenders_byte_for_byte). Both are
   valid Harmony; the parser reads both.
2. The analysis channel is never shown. The library keeps the analysis of the turn in
   progress (the tool-call chain after the last final answer) and drops older analysis;
   bosun drops all of it, so a prompt is always a prefix of the next one (dropping it
   later, when the turn ends, would rewrite text the KV cache already holds). The
   library's drop rule itself is checked too (test_the_library_drops_older_analysis).
3. No "Current date:" line. bosun never sets a conversation start date: a date would
   change the system message, the very first tokens, from one day to the next. The
   knowledge cutoff (2024-06) and reasoning effort (medium, the library's default too)
   are written as the library writes them; bosun has no setting for another effort.

Found by this oracle and fixed (not deviations): tool results were JSON-quoted
(`"hello world"`, as gpt-oss's Hugging Face template does) where the library writes them
verbatim; and the `functions` namespace differed from the library's TypeScript for
nested objects, defaults, `oneOf` unions, type lists, `nullable`, titles, examples,
`Array<any>`, non-string enums, tools with empty properties and multi-line tool
descriptions.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.history import Message, System, User
from agent.parsing import coalesce
from agent.protocol.render import data_spans, render
from agent.run.system_prompt import system_prompt
from agent.tools import default_registry
from tests.parsing.harmony import oracle
from tests.parsing.harmony.oracle_cases import CASES, COMPLETIONS, TOOLS, Case
from tests.parsing.harmony.support import at_most, stream


def ours(case: Case) -> str:
    return render(case.messages, case.tools, model=oracle.GPT_OSS)


def normalised(case: Case) -> str:
    """The library's prompt with bosun's three deliberate deviations applied."""
    text = oracle.reference(case.messages, case.tools, date=case.date)
    return oracle.without_analysis(oracle.recipient_after_channel(oracle.without_date(text)))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bosun_renders_what_the_library_renders(case: Case) -> None:
    assert ours(case) == normalised(case)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_tokens_are_the_same(case: Case) -> None:
    """bosun's prompt, tokenised whole as a server does, gives the library's tokens:
    for the whole prompt where no deviation applies, else message by message for every
    message the deviations leave alone (a text match alone would miss a boundary the
    library tokenises apart)."""
    enc = oracle.encoding()
    convo = oracle.conversation(case.messages, case.tools, date=case.date)
    theirs = list(enc.render_conversation_for_completion(convo, oracle.harmony().Role.ASSISTANT))
    text = ours(case)
    sent = oracle.tokens(text, data_spans(case.messages, case.tools, text, model=oracle.GPT_OSS))
    if normalised(case) == enc.decode(theirs):
        assert sent == theirs
        return
    mine = oracle.messages_of(sent)
    untouched = [m for m in oracle.messages_of(theirs) if enc.decode(m) in text]
    assert len(untouched) >= len(mine) // 2, "most messages are untouched by the deviations"
    assert [m for m in untouched if m not in mine] == []


def test_the_deviations_are_exercised() -> None:
    """Each normaliser changes at least one case (else it could hide anything)."""
    raw = {c.name: oracle.reference(c.messages, c.tools, date=c.date) for c in CASES}
    assert any(oracle.recipient_after_channel(t) != t for t in raw.values())
    assert any(oracle.without_analysis(t) != t for t in raw.values())
    assert any(oracle.without_date(t) != t for t in raw.values())
    assert len(CASES) >= 20


def test_the_library_drops_older_analysis() -> None:
    """gpt-oss's rule, as the library applies it: analysis before the last final answer
    is dropped; the analysis of the tool-call chain in progress is kept."""
    by_name = {c.name: c for c in CASES}
    done = by_name["finished-turn-then-user"]
    chain = by_name["reasoning-kept-in-the-chain"]
    assert oracle.analysis_messages(oracle.reference(done.messages, done.tools)) == []
    kept = oracle.analysis_messages(oracle.reference(chain.messages, chain.tools))
    assert [k.split("<|message|>")[1] for k in kept] == [
        "I should read a.txt.<|end|>",
        "Now b.txt.<|end|>",
    ]
    assert "<|channel|>analysis" not in ours(chain)


def test_bosun_system_prompt_and_registry_tools() -> None:
    """The prompt bosun really sends: its system prompt and every built-in tool."""
    tools = default_registry().specs()
    messages: list[Message] = [System(system_prompt("/work/proj")), User("List the files.")]
    case = Case("bosun", messages, tools)
    assert ours(case) == normalised(case)


# -- any schema: bosun's TypeScript is the library's ------------------------------------

_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
_NAME = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), _TEXT)


def _schema(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    kind = st.sampled_from(["string", "integer", "number", "boolean", "array", "object", "null"])
    keys = st.fixed_dictionaries(
        {},
        optional={
            "type": st.one_of(kind, st.lists(kind, max_size=2)),
            "description": _TEXT,
            "title": _TEXT,
            "default": st.one_of(_SCALAR, st.lists(_SCALAR, max_size=2)),
            "enum": st.lists(st.one_of(_TEXT, st.integers(0, 3)), max_size=3),
            "nullable": st.booleans(),
            "examples": st.lists(st.one_of(_TEXT, st.integers(0, 3)), max_size=2),
            "items": children,
            "properties": st.dictionaries(_NAME, children, max_size=3),
            "required": st.lists(_NAME, max_size=2),
            "oneOf": st.lists(children, max_size=3),
        },
    )
    return keys


SCHEMAS = st.recursive(st.just({}) | st.just({"type": "string"}), _schema, max_leaves=8)


# No deadline: the first example loads the vocabulary (a second, once per process).
@settings(at_most(150), deadline=None)
@given(
    parameters=st.one_of(
        st.none(), SCHEMAS, _schema(SCHEMAS).map(lambda s: {**s, "type": "object"})
    ),
    description=st.one_of(_TEXT, st.sampled_from(["a\nb", "a\r\nb\n", "x\n\ny", ""])),
)
def test_any_schema_renders_as_the_library_renders_it(
    parameters: dict[str, Any] | None, description: str
) -> None:
    fn: dict[str, Any] = {"name": "f", "description": description}
    if parameters is not None:
        fn["parameters"] = parameters
    case = Case("schema", [User("hi")], [{"type": "function", "function": fn}])
    assert ours(case) == normalised(case)


def test_a_wrong_namespace_would_be_caught() -> None:
    """The comparison can fail: a property bosun drops shows up as a difference."""
    case = Case("one", [User("hi")], TOOLS[:1])
    broken = ours(case).replace("offset?: number", "offset?: string")
    assert broken != ours(case) and broken != normalised(case)


# -- the parse direction ----------------------------------------------------------------


def library_meaning(parts: list[str]) -> list[tuple[str, Any]]:
    """What the library parses from the completion: analysis -> reasoning, a message to
    functions.NAME -> a call, any other assistant message -> text; adjacent kinds joined
    as bosun joins them."""
    h = oracle.harmony()
    enc = oracle.encoding()
    messages = enc.parse_messages_from_completion_tokens(completion_tokens(parts), h.Role.ASSISTANT)
    out: list[tuple[str, Any]] = []
    for m in messages:
        assert m.author.role == h.Role.ASSISTANT
        text = "".join(c.text for c in m.content)
        if m.recipient and m.recipient.startswith("functions."):
            assert m.channel == "commentary"
            out.append(("call", (m.recipient.removeprefix("functions."), json.loads(text))))
            continue
        kind, sep = ("reasoning", "\n") if m.channel == "analysis" else ("text", "\n\n")
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + sep + text.strip())
        else:
            out.append((kind, text.strip()))
    return out


def bosun_meaning(text: str) -> list[tuple[str, Any]]:
    fed, finished = stream([text])
    out: list[tuple[str, Any]] = []
    for e in coalesce(fed + finished):
        assert e.kind != "diagnostic", e.text
        if e.call is not None:
            out.append(("call", (e.call.name, e.call.arguments)))
        else:
            out.append((e.kind, e.text))
    return out


SPECIALS = ("<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|call|>")
SPECIALS += ("<|return|>",)


def completion_tokens(parts: list[str]) -> list[int]:
    """Markers as special tokens, everything else as ordinary text (so "<|call|>" inside
    a JSON string is text, as the model writes it)."""
    enc = oracle.encoding()
    out: list[int] = []
    for part in parts:
        special = part in SPECIALS
        out += enc.encode(part, allowed_special="all" if special else (), disallowed_special=())
    return out


@pytest.mark.parametrize("parts", COMPLETIONS.values(), ids=list(COMPLETIONS))
def test_bosun_parses_what_the_library_parses(parts: list[str]) -> None:
    expected = library_meaning(parts)
    assert expected, "the library found no message"
    assert bosun_meaning("".join(parts)) == expected


def test_a_wrong_parse_would_be_caught() -> None:
    parts = COMPLETIONS["analysis-call"]
    assert bosun_meaning("".join(parts).replace("analysis", "final", 1)) != library_meaning(parts)


def test_without_the_library_ci_fails_and_elsewhere_it_skips(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "openai_harmony", None)  # import fails
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the Harmony oracle"):
        oracle.harmony()
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception):
        oracle.harmony()
