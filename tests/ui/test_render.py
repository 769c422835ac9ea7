"""Event rendering in 80 columns, without a terminal (rich records to a string)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from agent import events as ev
from agent.tools import default_registry
from agent.ui.diff import diff_text, preview_diff
from agent.ui.render import Renderer, Tail, stable_cut


def console(width: int = 80, color: bool = False) -> Console:
    return Console(
        file=io.StringIO(),
        width=width,
        height=30,
        force_terminal=color,
        color_system="standard" if color else None,
        highlight=False,
    )


def output(c: Console) -> str:
    assert isinstance(c.file, io.StringIO)
    return c.file.getvalue()


def fits(text: str, width: int = 80) -> bool:
    return all(len(line) <= width for line in text.splitlines())


@pytest.mark.parametrize(
    ("text", "cut"),
    [
        ("one paragraph", 0),
        ("para one\n\npara two", len("para one\n\n")),
        ("```\ncode\n\nmore code\n", 0),  # a blank line inside a fence is no boundary
        ("```\ncode\n```\n\nafter", len("```\ncode\n```\n\n")),
        ("~~~\nx\n~~~\n\n", len("~~~\nx\n~~~\n\n")),
        ("a\n\nb\n\n", len("a\n\nb\n\n")),
        ("a\n\n```py\nx\n\n", len("a\n\n")),
    ],
)
def test_stable_cut(text: str, cut: int) -> None:
    assert stable_cut(text) == cut


def test_streamed_markdown_is_printed_once_and_fits() -> None:
    c = console()
    r = Renderer(c, lambda name, args: None)
    answer = (
        "# Title\n\nSome **bold** text that is long enough to need wrapping in an"
        " eighty column terminal, which it should do gracefully.\n\n```python\n"
        "def f():\n\n    return 1  # " + "long comment " * 10 + "\n```\n\n- a\n- b\n"
    )
    for i in range(0, len(answer), 3):
        r(ev.TextDelta(answer[i : i + 3]))
    r(ev.TurnFinished(1, 0, 1, 1))
    text = output(c)
    assert text.count("Title") == 1 and text.count("return 1") == 1
    assert "**bold**" not in text and "bold" in text
    assert "```" not in text
    assert fits(text)


def test_tool_call_panel_is_compact_and_fits(workspace: Path) -> None:
    c = console()
    r = Renderer(c, lambda name, args: None)
    r(ev.ToolCallEvent("call_1", "grep", {"pattern": "x" * 300, "path": "src"}))
    r(ev.ToolResultEvent("call_1", False, "\n".join(f"line {i}" for i in range(10))))
    r(ev.ToolResultEvent("call_2", True, "Error: no such file"))
    r(ev.RunFinished("done", 1, 1, 1, 1, 1, 1, ""))
    text = output(c)
    assert "grep" in text and "pattern: xxx" in text and "…" in text
    assert "✓ 10 lines" in text and "line 2" in text and "line 3" not in text
    assert "… 7 more" in text
    assert "✗ 1 line" in text and "Error: no such file" in text
    assert fits(text)


def test_write_preview_is_a_diff_against_the_file(workspace: Path) -> None:
    tools = default_registry()
    diff = preview_diff(
        "write_file", {"path": "notes.txt", "content": "hello from bosun\nnew\n"}, tools, workspace
    )
    assert diff is not None and "+new" in diff and "-hello" not in diff
    c = console()
    r = Renderer(c, lambda name, args: preview_diff(name, args, tools, workspace))
    r(ev.ToolCallEvent("call_1", "write_file", {"path": "notes.txt", "content": "x\n" * 200}))
    text = output(c)
    assert "content: (200 lines" in text and "+x" in text and "-hello from bosun" in text
    assert "more diff lines" in text and fits(text)


def test_edit_preview(workspace: Path) -> None:
    tools = default_registry()
    args = {"path": "notes.txt", "old": "hello", "new": "goodbye"}
    diff = preview_diff("edit_file", args, tools, workspace)
    assert diff is not None and "-hello from bosun" in diff and "+goodbye from bosun" in diff
    assert preview_diff("read_file", {"path": "notes.txt"}, tools, workspace) is None


def test_diff_colours_and_no_colour() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n"
    colour = console(color=True)
    colour.print(diff_text(diff))
    assert "\x1b[" in output(colour)
    plain = console()
    plain.print(diff_text(diff))
    assert "\x1b[" not in output(plain) and "+new" in output(plain)


def test_reasoning_is_collapsed_unless_asked_for() -> None:
    c = console()
    r = Renderer(c, lambda name, args: None)
    r(ev.ReasoningDelta("first I think about it carefully"))
    r(ev.TextDelta("Answer."))
    r(ev.TurnFinished(1, 0, 1, 1))
    text = output(c)
    assert "carefully" not in text and "reasoning, 6 words" in text and "Answer." in text
    assert r.last_reasoning == "first I think about it carefully"

    c = console()
    r = Renderer(c, lambda name, args: None, show_reasoning=True)
    r(ev.ReasoningDelta("thinking out loud"))
    r(ev.TextDelta("Answer."))
    r(ev.TurnFinished(1, 0, 1, 1))
    assert "thinking out loud" in output(c)


def test_tail_keeps_the_live_region_shorter_than_the_screen() -> None:
    c = console()
    c.print(Tail("\n".join(f"row {i}" for i in range(100)), 5))
    lines = output(c).splitlines()
    assert lines == [f"row {i}" for i in range(95, 100)]


def spinner_line(r: Renderer) -> str:
    """The footer's first line as the live region draws it."""
    c = console()
    c.print(r.footer)
    return output(c).splitlines()[0]


def test_the_spinner_says_how_far_the_prompt_is_read_until_the_first_token() -> None:
    c = console()
    r = Renderer(c, lambda name, args: None)
    r.footer.begin()
    assert "working…" in spinner_line(r)
    r(ev.PromptProgress(180, 400))
    assert "reading prompt 45%" in spinner_line(r)
    assert output(c) == ""  # said by the spinner alone, never printed
    r(ev.PromptProgress(400, 400))
    assert "reading prompt 100%" in spinner_line(r)
    r(ev.TextDelta("Hi"))
    line = spinner_line(r)
    assert "reading prompt" not in line and "working…" in line and "1 tokens" in line
    r.finish_stream()


def test_a_stop_outranks_the_prefill_and_a_new_turn_forgets_it() -> None:
    r = Renderer(console(), lambda name, args: None)
    r(ev.PromptProgress(1, 4))
    r.stop_requested = lambda: True
    assert "stopping…" in spinner_line(r) and "reading" not in spinner_line(r)
    r.stop_requested = lambda: False
    r(ev.TurnFinished(10, 0, 0, 5))  # a reply that wrote nothing: the report is stale
    assert "reading" not in spinner_line(r)
