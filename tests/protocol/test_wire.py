"""The wire remap: a pure transform at the driver boundary, safe at any chunking."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agent.protocol.render as prompt
from agent.history import AssistantToolUse, ToolCall, ToolResult, User
from agent.markup import WIRE_CALL_CLOSE, WIRE_CALL_OPEN
from agent.parsing import parse_tool_calls
from agent.protocol.gguf import write_gguf
from agent.protocol.profile import profile_for
from tests.protocol.prompt_cases import CANONICAL, CORPUS, TOOLS

CALL_TEXT = (
    'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>'
)
WIRE_TEXT = 'Let me look.\n[[CALL]]\n{"name": "read_file", "arguments": {"path": "a"}}\n[[/CALL]]'

# Text built from the pieces that matter: markers, their fragments and plain prose.
_pieces = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "[[CALL]]",
        "[[/CALL]]",
        "[[",
        "[",
        "]]",
        "CALL",
        "/",
        "x",
        "\n",
    ]
)
marker_soup = st.lists(_pieces, max_size=30).map("".join)
canonical_soup = marker_soup.map(lambda s: s.replace("[[CALL]]", "").replace("[[/CALL]]", ""))


def test_wire_form_uses_the_markup_constants() -> None:
    assert prompt.canonical_to_wire(CALL_TEXT) == WIRE_TEXT
    assert prompt.wire_to_canonical(WIRE_TEXT) == CALL_TEXT
    assert WIRE_CALL_OPEN in WIRE_TEXT and WIRE_CALL_CLOSE in WIRE_TEXT


def test_round_trip_on_the_canonical_conversation() -> None:
    text = prompt.render(CANONICAL, TOOLS)
    wire = prompt.canonical_to_wire(text)
    assert "<tool_call>" not in wire and "</tool_call>" not in wire
    assert prompt.wire_to_canonical(wire) == text


@given(canonical_soup)
def test_round_trip(text: str) -> None:
    # A prompt that already spells a wire marker literally cannot round-trip; any other can.
    if "[[CALL]]" in text or "[[/CALL]]" in text:
        return
    assert prompt.wire_to_canonical(prompt.canonical_to_wire(text)) == text


@given(marker_soup)
def test_both_directions_are_idempotent(text: str) -> None:
    once = prompt.canonical_to_wire(text)
    assert prompt.canonical_to_wire(once) == once
    back = prompt.wire_to_canonical(text)
    assert prompt.wire_to_canonical(back) == back


def _decode(chunks: list[str]) -> str:
    decoder = prompt.WireDecoder()
    return "".join(decoder.feed(c) for c in chunks) + decoder.finish()


def test_decoder_survives_a_split_at_every_position() -> None:
    for cut in range(len(WIRE_TEXT) + 1):
        assert _decode([WIRE_TEXT[:cut], WIRE_TEXT[cut:]]) == CALL_TEXT, cut


def test_decoder_one_character_at_a_time() -> None:
    assert _decode(list(WIRE_TEXT)) == CALL_TEXT


def test_decoder_holds_back_a_partial_marker() -> None:
    decoder = prompt.WireDecoder()
    assert decoder.feed("Look [[CA") == "Look "
    assert decoder.feed("LL]]{") == "<tool_call>{"
    assert decoder.feed("} [[/") == "} "
    assert decoder.feed("CALL]] done [[") == "</tool_call> done "
    assert decoder.finish() == "[["  # never completed: given back as it was


def test_decoder_passes_canonical_text_through() -> None:
    assert _decode([CALL_TEXT[:7], CALL_TEXT[7:]]) == CALL_TEXT


@given(marker_soup, st.lists(st.integers(min_value=0, max_value=200), max_size=8))
def test_decoder_equals_one_shot_at_any_chunking(text: str, cuts: list[int]) -> None:
    points = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    assert _decode(chunks) == prompt.wire_to_canonical(text)


def test_decoded_wire_completion_parses_as_a_tool_call() -> None:
    decoded = _decode([WIRE_TEXT[:20], WIRE_TEXT[20:31], WIRE_TEXT[31:]])
    result = parse_tool_calls(decoded)
    assert [c.name for c in result.calls] == ["read_file"]


# SmolLM2's embedded template: every role alike, no tools.
GENERIC = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
QWEN25 = CORPUS / "Qwen-Qwen2.5-7B-Instruct.jinja"
USER_DEFINED, CONTROL, NORMAL = 4, 3, 1


def model_file(
    tmp_path: Path, template: str, tool_call_type: int | None, filler: int = 8, name: str = "m"
) -> str:
    """A metadata-only GGUF whose vocabulary may hold <tool_call> as one token."""
    tokens = ["<unk>", "<s>", "</s>", *(f"tok{i}" for i in range(filler))]
    types = [2, 3, 3, *([NORMAL] * filler)]
    if tool_call_type is not None:
        tokens += ["<tool_call>", "</tool_call>"]
        types += [tool_call_type, tool_call_type]
    path = tmp_path / f"{name}.gguf"
    write_gguf(
        path,
        {
            "general.architecture": "mystery",
            "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.token_type": types,
            "tokenizer.ggml.bos_token_id": 1,
            "tokenizer.ggml.eos_token_id": 2,
            "tokenizer.chat_template": template,
        },
    )
    return str(path)


@pytest.mark.parametrize(
    ("kind", "filler", "remapped"),
    [
        (USER_DEFINED, 8, True),
        (CONTROL, 8, True),
        (USER_DEFINED, 300, True),  # a vocabulary too large to decode: found by scanning
        (NORMAL, 8, False),
        (None, 8, False),
    ],
)
def test_remap_where_bosun_writes_the_protocol_for_a_reserved_token(
    tmp_path: Path, kind: int | None, filler: int, remapped: bool
) -> None:
    profile = profile_for(model_file(tmp_path, GENERIC, kind, filler))
    assert profile.wire_remap is remapped
    if remapped:
        assert "reserved" in profile.remap_reason and "<tool_call>" in profile.remap_reason
        assert "[[CALL]]" in profile.render(CANONICAL, TOOLS)
    assert "<tool_call>" in profile.canonical(CANONICAL, TOOLS)


def test_never_remap_a_template_that_prints_its_own_markup(tmp_path: Path) -> None:
    """Qwen2.5's vocabulary holds <tool_call> as a user-defined token, and its own
    template prints <tool_call> itself: the model was trained on exactly that."""
    qwen = profile_for(model_file(tmp_path, QWEN25.read_text(encoding="utf-8"), USER_DEFINED))
    assert qwen.template_origin.startswith("embedded") and qwen.tool_format == "hermes"
    assert not qwen.wire_remap
    text = qwen.render(CANONICAL, TOOLS)
    assert "<tool_call>" in text and "[[CALL]]" not in text


def test_render_for_model_remaps_only_flagged_models(tmp_path: Path) -> None:
    flagged = model_file(tmp_path, GENERIC, USER_DEFINED)
    plain = "smollm2-135m"
    wire = prompt.render_for_model(flagged, CANONICAL, TOOLS)
    assert "[[CALL]]" in wire and "<tool_call>" not in wire
    canonical = prompt.render_for_model(plain, CANONICAL, TOOLS)
    assert "<tool_call>" in canonical and "[[CALL]]" not in canonical
    # render() itself is always canonical: the remap belongs to the driver boundary.
    assert "<tool_call>" in prompt.render(CANONICAL, TOOLS, model=flagged)
    assert prompt.render_for_model(flagged, CANONICAL, TOOLS, wire=False) == prompt.render(
        CANONICAL, TOOLS, model=flagged
    )


def test_session_switching_between_flagged_and_plain_models(tmp_path: Path) -> None:
    """Turn 1 on a flagged model (wire form), turn 2 on SmolLM2 (canonical), turn 3 back."""
    flagged, plain = model_file(tmp_path, GENERIC, CONTROL), "smollm2-135m"
    history = [*CANONICAL[:2]]
    # Turn 1: the flagged model answers in wire form; what reaches history is canonical.
    parser = profile_for(flagged).parser(TOOLS)
    events = parser.feed(WIRE_TEXT[:9]) + parser.feed(WIRE_TEXT[9:]) + parser.finish()
    (call,) = [e.call for e in events if e.call is not None]
    history += [AssistantToolUse(ToolCall("call_1", call.name, call.arguments))]
    history += [ToolResult("call_1", "file a"), User("And b?")]
    # Turn 2 on the plain model: canonical envelope, nothing left of the wire form.
    plain_prompt = prompt.render_for_model(plain, history, TOOLS)
    assert "<tool_call>\n" + '{"name": "read_file", "arguments": {"path": "a"}}' in plain_prompt
    assert "[[CALL]]" not in plain_prompt
    # Turn 3 back on the flagged model: the same turn, remapped; stable prefix both ways.
    flagged_prompt = prompt.render_for_model(flagged, history, TOOLS)
    assert '[[CALL]]\n{"name": "read_file", "arguments": {"path": "a"}}\n[[/CALL]]' in (
        flagged_prompt
    )
    assert prompt.wire_to_canonical(flagged_prompt) == prompt.render(history, TOOLS, model=flagged)
