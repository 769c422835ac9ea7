"""Falsifiers for contracts/toolcall-retention-v1.yaml.

The claim: a tool-using turn is remembered as structure and shown back to the model in
its canonical envelope, never as prose and never as raw residue.
"""

from __future__ import annotations

from pathlib import Path

from agent.history import Assistant, AssistantToolUse, ToolResult, retain_assistant_text
from tests.helpers import make_agent, tool_call

# The model's first reply: prose, a call, and a hallucinated result it should not have
# written. Only the prose may survive as an Assistant message.
TURN_ONE = (
    "I will read the notes.\n"
    + tool_call("read_file", path="notes.txt")
    + "\n<tool_result>\nmade-up content\n</tool_result>"
)


def _run(workspace: Path):
    agent, driver, _ = make_agent([TURN_ONE, "The notes say hello."], workspace)
    agent.run("What do the notes say?")
    driver.assert_complete()
    return agent, driver


def test_next_turn_render_keeps_envelope(workspace: Path) -> None:
    """FALSIFY-TOOLCALL-RETENTION-001"""
    _, driver = _run(workspace)
    turn_two = driver.prompts[1]
    assert (
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n</tool_call>'
        in (turn_two)
    )
    assert "<tool_result>\n1\thello from bosun\n</tool_result>" in turn_two
    assert "made-up content" not in turn_two
    assert "### Continue:" not in turn_two


def test_history_is_structured(workspace: Path) -> None:
    """FALSIFY-TOOLCALL-RETENTION-002"""
    agent, _ = _run(workspace)
    kinds = [type(m) for m in agent.history[2:]]
    assert kinds == [Assistant, AssistantToolUse, ToolResult, Assistant]
    for m in agent.history:
        if isinstance(m, Assistant):
            for tag in ("<tool_call>", "</tool_call>", "<tool_result>", "</tool_result>"):
                assert tag not in m.content
    assert agent.history[2] == Assistant("I will read the notes.")


def test_retain_strips_residue_and_keeps_prose() -> None:
    """FALSIFY-TOOLCALL-RETENTION-003"""
    assert retain_assistant_text("Checking.\n" + tool_call("list_dir")) == "Checking."
    assert retain_assistant_text(tool_call("list_dir")) == ""
    assert retain_assistant_text('ok <tool_call>\n{"name": "x", ') == "ok"
    prose = "Use `<tool_call>` tags:\n```\n<tool_call>{}</tool_call>\n```\n"
    assert retain_assistant_text(prose) == prose
