"""Markup that is content: in code, in prose that talks about the tags."""

from __future__ import annotations

import pytest

from agent.parsing import parse_tool_calls
from tests.parsing.support import GOOD_CALL, call

CONTENT = [
    # fenced code that shows a call
    f"The format is:\n```\n<tool_call>\n{GOOD_CALL}\n</tool_call>\n```\nThat is all.",
    # a fence with a language tag and a think tag in it
    "```xml\n<think>not reasoning</think>\n<tool_call>x</tool_call>\n```",
    # tilde fences, and a longer fence holding a shorter one
    "~~~\n<tool_call>{}</tool_call>\n~~~",
    "````markdown\n```\n<tool_call>{}</tool_call>\n```\n````",
    # inline code, single and double backticks
    "Wrap calls in `<tool_call>` and `</tool_call>`.",
    "Use ``<tool_call>{...}</tool_call>`` around JSON, not `<think>`.",
    # a fence that is indented by up to three spaces is still a fence
    f"   ```\n   <tool_call>{GOOD_CALL}</tool_call>\n   ```",
]


@pytest.mark.parametrize("text", CONTENT)
def test_tags_in_code_are_content(text: str) -> None:
    r = parse_tool_calls(text)
    assert r.calls == [] and r.diagnostics == [] and r.reasoning == ""
    assert r.text == text, "code is kept byte for byte"


def test_a_real_call_after_code_that_shows_one() -> None:
    text = f"Example: `<tool_call>{GOOD_CALL}</tool_call>`.\n" + call("ls", path=".")
    r = parse_tool_calls(text)
    assert [c.name for c in r.calls] == ["ls"]
    assert r.text == f"Example: `<tool_call>{GOOD_CALL}</tool_call>`."


def test_an_unmatched_backtick_does_not_hide_a_call() -> None:
    """A code span must close on its line; a lone backtick is a literal."""
    text = "It's the `main branch.\n" + call("ls")
    r = parse_tool_calls(text)
    assert [c.name for c in r.calls] == ["ls"] and r.text == "It's the `main branch."


def test_an_unclosed_fence_keeps_everything_after_it_as_code() -> None:
    text = f"```python\nprint(1)\n<tool_call>{GOOD_CALL}</tool_call>\n"
    r = parse_tool_calls(text)
    assert r.calls == [] and r.text == text


def test_a_tag_mentioned_in_prose_is_not_a_call() -> None:
    text = "I will use the <tool_call> tag once I know the path."
    r = parse_tool_calls(text)
    assert r.calls == [] and r.diagnostics == [] and r.text == text


def test_a_mention_followed_by_a_real_call() -> None:
    text = "The <tool_call> tag goes first:\n" + call("ls")
    r = parse_tool_calls(text)
    assert [c.name for c in r.calls] == ["ls"] and r.diagnostics == []
    assert r.text == "The <tool_call> tag goes first:"


def test_angle_brackets_and_lookalike_tags_are_prose() -> None:
    text = "if a < b and c > d: <tool_calls> <thinking> </tool> <br>"
    assert parse_tool_calls(text).text == text
