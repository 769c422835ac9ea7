"""The conversations and completions tests/parsing/harmony/test_oracle.py checks bosun
against OpenAI's Harmony library with: tools of every parameter shape bosun meets, calls
alone and in parallel, reasoning of finished and unfinished turns, results, system and
developer messages, a date. Kept apart from the tests so each file reads in one go."""

from __future__ import annotations

from dataclasses import dataclass, field
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


def tool(name: str, description: str, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": name, "description": description}
    if parameters is not None:
        fn["parameters"] = parameters
    return {"type": "function", "function": fn}


def obj(required: list[str] | None = None, **properties: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return schema


TOOLS = [
    tool(
        "read_file",
        "Read a file.",
        obj(
            ["path"],
            path={"type": "string", "description": "Relative to the workspace."},
            offset={"type": "integer", "default": 0},
            limit={"type": "number", "description": "Lines at most.", "default": 200},
        ),
    ),
    tool(
        "write_file",
        "Write a file.\nCreates folders as needed.",
        obj(
            ["path", "content"],
            path={"type": "string"},
            content={"type": "string"},
            mode={"type": "string", "enum": ["overwrite", "append"], "default": "overwrite"},
        ),
    ),
    tool(
        "grep",
        "Search file contents.",
        obj(
            ["pattern"],
            pattern={"type": "string", "title": "Pattern", "examples": ["TODO", "def main"]},
            paths={"type": "array", "items": {"type": "string"}},
            ignore_case={"type": "boolean", "nullable": True},
            context={"type": ["integer", "null"]},
        ),
    ),
    tool(
        "run",
        "Run a command.",
        obj(
            ["argv"],
            argv={"type": "array", "items": {"type": "string"}, "description": "The command."},
            env={
                "type": "object",
                "description": "Extra variables.",
                "properties": {"PATH": {"type": "string", "description": "Search path."}},
            },
            limits={
                "type": "array",
                "items": obj(["name"], name={"type": "string"}, value={"type": "integer"}),
            },
            timeout={
                "oneOf": [{"type": "number", "description": "Seconds."}, {"type": "string"}],
                "description": "How long to wait.",
            },
        ),
    ),
    tool("list_dir", "List a folder.", obj()),
    tool("now", "The time."),
    tool("anything", "", {"type": "object", "properties": {"x": {}, "y": {"type": "array"}}}),
]
READ = TOOLS[:1]


@dataclass(frozen=True)
class Case:
    name: str
    messages: list[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)
    date: str | None = None


SYS = System("You are bosun, a coding agent.")


def call(n: int, name: str, **arguments: Any) -> AssistantToolUse:
    return AssistantToolUse(ToolCall(f"call_{n}", name, arguments))


def result(n: int, content: str, is_error: bool = False) -> ToolResult:
    return ToolResult(f"call_{n}", content, is_error)


READ_A = [User("Read a.txt"), call(1, "read_file", path="a.txt"), result(1, "alpha")]

CASES = [
    Case("user-only", [User("Hello")]),
    Case("system-user", [SYS, User("Hello")]),
    Case("tools-without-system", [User("Hello")], TOOLS),
    Case("system-tools-user", [SYS, User("Hello")], TOOLS),
    Case("one-tool", [SYS, User("Hello")], READ),
    Case("pending-result", [SYS, *READ_A], READ),
    Case("answered", [SYS, *READ_A, Assistant("It says alpha.")], READ),
    Case(
        "finished-turn-then-user",
        [
            SYS,
            User("Read a.txt"),
            Reasoning("I should read it."),
            call(1, "read_file", path="a.txt"),
            result(1, "alpha"),
            Reasoning("Done."),
            Assistant("It says alpha."),
            User("Thanks"),
        ],
        READ,
    ),
    Case(
        "reasoning-kept-in-the-chain",
        [
            SYS,
            User("Read a.txt and b.txt"),
            Reasoning("I should read a.txt."),
            call(1, "read_file", path="a.txt"),
            result(1, "alpha"),
            Reasoning("Now b.txt."),
            call(2, "read_file", path="b.txt"),
            result(2, "beta"),
        ],
        READ,
    ),
    Case(
        "preamble-before-call",
        [
            SYS,
            User("Read a.txt"),
            Assistant("Let me look."),
            call(1, "read_file", path="a.txt"),
            result(1, "alpha"),
        ],
        READ,
    ),
    Case(
        "parallel-calls",
        [
            SYS,
            User("Read both"),
            call(1, "read_file", path="a.txt"),
            call(2, "read_file", path="b.txt", offset=3),
            result(1, "alpha"),
            result(2, "beta"),
        ],
        TOOLS,
    ),
    Case(
        "several-turns",
        [
            SYS,
            *READ_A,
            Assistant("It says alpha."),
            User("Now write b.txt"),
            call(2, "write_file", path="b.txt", content="beta\n", mode="append"),
            result(2, "wrote b.txt"),
            Assistant("Done."),
            User("And grep"),
            call(3, "grep", pattern="alp", paths=["."], ignore_case=None),
        ],
        TOOLS,
    ),
    Case(
        "reasoning-then-final",
        [
            SYS,
            User("2+2?"),
            Reasoning("Simple."),
            Assistant("4"),
            User("3+3?"),
        ],
    ),
    Case("reasoning-only-turn", [SYS, User("Think"), Reasoning("Hmm.")]),
    Case(
        "later-system-message",
        [
            SYS,
            User("Hello"),
            Assistant("Hi."),
            System("The user prefers short answers."),
            User("Read a.txt"),
            call(1, "read_file", path="a.txt"),
            result(1, "alpha"),
        ],
        READ,
    ),
    Case(
        "json-result",
        [
            SYS,
            User("Run it"),
            call(1, "run", argv=["ls", "-l"]),
            result(1, '{"exit": 0, "stdout": "a.txt\\n"}'),
        ],
        TOOLS,
    ),
    Case(
        "error-result",
        [
            SYS,
            User("Read x"),
            call(1, "read_file", path="x"),
            result(1, "Error: no such file: x", is_error=True),
        ],
        READ,
    ),
    Case(
        "unicode-and-newlines",
        [
            SYS,
            User("Écris «ünï» \n\t ok 🙂"),
            call(1, "write_file", path="ü.txt", content="línea\n🙂"),
            result(1, "wrote ü.txt\nok"),
            Assistant("Fait ✓"),
        ],
        TOOLS,
    ),
    Case(
        "markers-inside-arguments",
        [
            SYS,
            User("Write it"),
            call(
                1, "write_file", path="t.txt", content='<|call|> <|end|> "quoted" \\ </tool_call>'
            ),
            result(1, "wrote <|end|> t.txt"),
        ],
        TOOLS,
    ),
    Case(
        "empty-and-nested-arguments",
        [
            SYS,
            User("Go"),
            call(1, "list_dir"),
            result(1, "a.txt"),
            call(
                2, "run", argv=["env"], env={"PATH": "/bin"}, limits=[{"name": "cpu", "value": 2}]
            ),
            result(2, "PATH=/bin"),
        ],
        TOOLS,
    ),
    Case(
        "no-parameters-tool", [User("What time is it?"), call(1, "now"), result(1, "noon")], TOOLS
    ),
    Case("dated", [SYS, User("Hello")], TOOLS, date="2025-06-28"),
    Case(
        "dated-with-reasoning",
        [
            SYS,
            User("Read a.txt"),
            Reasoning("Read it."),
            call(1, "read_file", path="a.txt"),
            result(1, "alpha"),
        ],
        READ,
        date="2026-01-02",
    ),
    Case("multi-line-system", [System("Line one.\n\n# Rules\n- be brief\n"), User("Hi")], TOOLS),
]

# Completions as gpt-oss writes them after the prompt's "<|start|>assistant": markers
# (special tokens) and text (ordinary tokens) as separate parts.
S, E, M, C, K = "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>"
CALL, RET = "<|call|>", "<|return|>"
A = "assistant"
COMPLETIONS: dict[str, list[str]] = {
    "final-only": [C, "final", M, "The answer is 4.", RET],
    "analysis-final": [C, "analysis", M, "Two plus two.", E, S, A, C, "final", M, "4", RET],
    "analysis-call": [
        C, "analysis", M, "Read it.", E, S, A, C, "commentary to=functions.read_file ", K, "json",
        M, '{"path": "a.txt"}', CALL,
    ],
    "recipient-in-role-header": [
        C, "analysis", M, "Read it.", E, S, A, " to=functions.read_file", C, "commentary ", K,
        "json", M, '{"path": "a.txt"}', CALL,
    ],
    "recipient-first-no-prior-message": [
        " to=functions.grep", C, "commentary ", K, "json", M, '{"pattern": "x"}', CALL,
    ],
    "preamble-then-call": [
        C, "commentary", M, "Let me look.", E, S, A, C, "commentary to=functions.read_file ", K,
        "json", M, '{"path": "a.txt"}', CALL,
    ],
    "several-calls": [
        C, "analysis", M, "Both files.", E, S, A, C, "commentary to=functions.read_file ", K,
        "json", M, '{"path": "a.txt"}', CALL, S, A, C, "commentary to=functions.read_file ", K,
        "json", M, '{"path": "b.txt", "offset": 2}', CALL,
    ],
    "bare-json-content-type": [
        C, "commentary to=functions.read_file json", M, '{"path": "a.txt"}', CALL,
    ],
    "no-content-type": [C, "commentary to=functions.now", M, "{}", CALL],
    "markers-inside-json-strings": [
        C, "commentary to=functions.write_file ", K, "json", M,
        '{"path": "t", "content": "<|call|> <|end|> \\"q\\" \\\\"}', CALL,
    ],
    "nested-arguments-unicode": [
        C, "analysis", M, "Ünïcode 🙂\nsecond line", E, S, A, C,
        "commentary to=functions.run ", K, "json", M,
        '{"argv": ["echo", "é"], "env": {"PATH": "/bin"}, "n": [1, 2.5, null, true]}', CALL,
    ],
    "two-analyses-then-final": [
        C, "analysis", M, "First.", E, S, A, C, "analysis", M, "Second.", E, S, A, C, "final", M,
        "Done.", RET,
    ],
    "final-closed-by-end": [C, "final", M, "Short.", E],
}  # fmt: skip
