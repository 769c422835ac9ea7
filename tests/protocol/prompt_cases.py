"""Shared conversations and tools for the prompt tests (imported, not collected)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    Reasoning,
    System,
    ToolCall,
    ToolResult,
    User,
)

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "templates"
SHIPPED_CHAT_TEMPLATES = ("chatml", "llama3", "gemma", "harmony")
# Public data the tests read, shipped with them: sources and licences in tests/data/README.md.
DATA = REPO / "tests" / "data"
# Real chat templates of public models, as llama.cpp collects them.
CORPUS = DATA / "chat-templates"


def corpus_templates() -> list[Path]:
    return sorted(CORPUS.glob("*.jinja"))


def tool(name: str, description: str, **params: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    key: {"type": "string", "description": text} for key, text in params.items()
                },
                "required": list(params),
            },
        },
    }


TOOLS = [
    tool("read_file", "Read a UTF-8 text file.", path="File path inside the workspace."),
    tool("grep_files", "Search files for a regular expression.", pattern="Regex to look for."),
]
SYSTEM = System("You are bosun, a coding agent.")
RESULT = "alpha beta gamma"

# The canonical conversation: system, user, assistant tool call, tool result, answer.
CANONICAL: list[Message] = [
    SYSTEM,
    User("What is in notes.txt?"),
    AssistantToolUse(ToolCall("call_1", "read_file", {"path": "notes.txt"})),
    ToolResult("call_1", RESULT),
    Assistant("notes.txt lists three Greek letters."),
]

# Turn by turn: each history is the previous one plus the assistant's reply and then
# tool results or a new user message, as the runtime builds it.
_T1: list[Message] = [SYSTEM, User("What is in notes.txt?")]
_T2 = [
    *_T1,
    Reasoning("The user asks about notes.txt, so I read it."),
    AssistantToolUse(ToolCall("call_1", "read_file", {"path": "notes.txt"})),
    ToolResult("call_1", RESULT),
]
_T3 = [
    *_T2,
    Reasoning("Greek letters. TODOs may matter too."),
    Assistant("Let me also search for TODOs."),
    AssistantToolUse(ToolCall("call_2", "grep_files", {"pattern": "TODO"})),
    AssistantToolUse(ToolCall("call_3", "read_file", {"path": "todo.md"})),
    ToolResult("call_2", "src/a.py:3: # TODO"),
    ToolResult("call_3", "- ship it", is_error=False),
]
_T4 = [
    *_T3,
    Reasoning("Enough to answer."),
    Assistant("Three letters and one TODO."),
    User("Thanks. Anything else?"),
]
_T5 = [
    *_T4,
    Reasoning("Check the other file."),
    AssistantToolUse(ToolCall("call_4", "read_file", {"path": "ünïcode.txt"})),
    ToolResult("call_4", "Error: no such file", is_error=True),
]
# An agent run: one user message, then only tool turns.
AGENT_TURNS: list[list[Message]] = [_T1, _T2, _T3]
# A chat: the user speaks again between tool turns.
CHAT_TURNS: list[list[Message]] = [_T1, _T2, _T3, _T4, _T5]
