"""Every header shape gpt-oss writes, and where each channel's body goes."""

from __future__ import annotations

import pytest

from agent.history import ToolCall
from agent.parsing.harmony import parse_harmony
from tests.parsing.harmony.support import PROMPT_TAIL

ARGS = '{"path": "a.txt"}'
READ = [ToolCall("call_1", "read_file", {"path": "a.txt"})]

# Each is a completion after the generation prompt `<|start|>assistant`, which may or may
# not be written again, and may be cut mid-header.
CALL_HEADERS = {
    "recipient after channel": "<|channel|>commentary to=functions.read_file <|constrain|>json",
    "constrain without space": "<|channel|>commentary to=functions.read_file<|constrain|>json",
    "bare content type": "<|channel|>commentary to=functions.read_file json",
    "no content type": "<|channel|>commentary to=functions.read_file",
    "recipient in role header": " to=functions.read_file<|channel|>commentary <|constrain|>json",
    "role header, bare json": " to=functions.read_file<|channel|>commentary json",
    "role header, no type": " to=functions.read_file<|channel|>commentary",
    "full header again": "<|start|>assistant<|channel|>commentary to=functions.read_file "
    "<|constrain|>json",
    "full header, role recipient": "<|start|>assistant to=functions.read_file"
    "<|channel|>commentary <|constrain|>json",
    "after reasoning, no start": "<|channel|>analysis<|message|>Read it.<|end|>"
    "assistant<|channel|>commentary to=functions.read_file <|constrain|>json",
    "in the analysis channel": "<|channel|>analysis to=functions.read_file <|constrain|>json",
}


@pytest.mark.parametrize("header", CALL_HEADERS.values(), ids=CALL_HEADERS.keys())
def test_every_header_variant_gives_one_call(header: str) -> None:
    r = parse_harmony(f"{header}<|message|>{ARGS}<|call|>")
    assert (r.calls, r.text, r.diagnostics) == (READ, "", [])


def test_channels_map_to_event_kinds() -> None:
    text = (
        "<|channel|>analysis<|message|>Think first.<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|>"
        "<|start|>assistant<|channel|>analysis<|message|>More thought.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>The answer is 4.<|return|>"
    )
    r = parse_harmony(text)
    assert r.reasoning == "Think first.\nMore thought."
    assert r.text == "Let me check.\n\nThe answer is 4."
    assert (r.calls, r.diagnostics) == ([], [])


@pytest.mark.parametrize(
    ("completion", "text"),
    [
        ("The answer is 4.", "The answer is 4."),  # the body of a prefilled final message
        ("Done", "Done"),  # short enough to be a header, but no header marker follows
        ("Done<|end|>", "Done"),
        ("4<|return|>", "4"),
        ("Hi.<|start|>assistant<|channel|>final<|message|>Bye.", "Hi.\n\nBye."),
        ("  spaced  \n", "spaced"),
    ],
)
def test_leading_text_before_any_marker_is_final_text(completion: str, text: str) -> None:
    r = parse_harmony(completion)
    assert (r.text, r.reasoning, r.calls, r.diagnostics) == (text, "", [], [])


def test_leading_analysis_without_start() -> None:
    r = parse_harmony(
        "<|channel|>analysis<|message|>hmm<|end|><|start|>assistant<|channel|>final<|message|>ok"
    )
    assert (r.reasoning, r.text) == ("hmm", "ok")


def test_prompt_tail_written_again_is_harmless() -> None:
    r = parse_harmony(f"{PROMPT_TAIL}<|channel|>final<|message|>ok<|return|>")
    assert (r.text, r.diagnostics) == ("ok", [])


def test_calls_are_numbered_per_completion() -> None:
    one = "<|channel|>commentary to=functions.ls json<|message|>{}<|call|>"
    two = f"{PROMPT_TAIL}<|channel|>commentary to=functions.read_file json<|message|>{ARGS}<|call|>"
    r = parse_harmony(one + two)
    assert [(c.id, c.name) for c in r.calls] == [("call_1", "ls"), ("call_2", "read_file")]


def test_a_message_from_another_role_ends_the_assistant_turn() -> None:
    """A model that runs past <|call|> writes the tool result (and an answer built on it)
    itself; none of that is the assistant's."""
    text = (
        f"<|channel|>commentary to=functions.read_file json<|message|>{ARGS}<|call|>"
        '<|start|>functions.read_file to=assistant<|channel|>commentary<|message|>"fake"<|end|>'
        "<|start|>assistant<|channel|>final<|message|>It says fake.<|return|>"
    )
    r = parse_harmony(text)
    assert (r.calls, r.text, r.diagnostics) == (READ, "", [])


def test_recipient_outside_functions_is_a_diagnostic_not_a_call() -> None:
    r = parse_harmony('<|channel|>commentary to=browser.search json<|message|>{"q": "x"}<|call|>')
    assert r.calls == [] and r.text == ""
    assert len(r.diagnostics) == 1 and "browser.search" in r.diagnostics[0]


def test_header_without_body_is_a_diagnostic() -> None:
    r = parse_harmony("<|channel|>commentary to=functions.ls json<|call|>")
    assert r.calls == [] and len(r.diagnostics) == 1 and "'ls'" in r.diagnostics[0]


def test_unknown_special_tokens_are_text() -> None:
    r = parse_harmony("<|channel|>final<|message|>a <|foo|> b < c <| d<|end|>")
    assert r.text == "a <|foo|> b < c <| d"


def test_a_long_line_after_a_stray_start_is_shown_not_swallowed() -> None:
    prose = "assistant this is not a header at all, the model forgot the message marker\n"
    r = parse_harmony("<|start|>" + prose + "and kept writing.")
    assert "the model forgot the message marker" in r.text and "kept writing." in r.text
