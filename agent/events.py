"""What the agent loop reports while it runs.

The terminal UI, the JSONL printer and the session file all consume these same objects,
so what a script sees on stdout is exactly what the REPL showed and what was saved.
Field names are the public JSONL schema (docs/usage/run-and-batches.md): flat, one object per line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from drivers.base import Usage


class Status(StrEnum):
    """How a request ended: the `status` of its `result` event, and the exit code of a
    headless run that ended so. A str, so it is written and compared as one."""

    DONE = "done"
    ERROR = "error"  # a backend failed, or malformed calls in a row
    MAX_TURNS = "max_turns"  # a budget ran out (turns, tool calls, tokens)
    STUCK = "stuck"  # the same tool call again and again
    DECLINED = "declined"  # the user said no to a call; the run stopped there
    REFUSED = "refused"  # every call needed an approval nobody could give
    INTERRUPTED = "interrupted"

    @property
    def exit_code(self) -> int:
        return _EXIT_CODES[self]


_EXIT_CODES = {
    Status.DONE: 0,
    Status.ERROR: 1,
    Status.MAX_TURNS: 3,
    Status.STUCK: 3,
    Status.DECLINED: 4,
    Status.REFUSED: 4,
    Status.INTERRUPTED: 130,
}


@dataclass(frozen=True)
class AgentEvent:
    type: ClassVar[str] = ""
    # For a screen alone: not part of the JSONL schema (docs/) nor of a session file,
    # since it says nothing a script or a resumed session could use.
    transient: ClassVar[bool] = False

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}


@dataclass(frozen=True)
class SessionStarted(AgentEvent):
    type: ClassVar[str] = "session"
    id: str
    model: str
    workspace: str
    context: int | None = None  # tokens of context, where known
    context_source: str = ""  # where that came from: --context-size, the model, a server

    def to_dict(self) -> dict[str, Any]:
        """The documented four fields, and the context's two only where it is known."""
        record = super().to_dict()
        if self.context is None:
            del record["context"], record["context_source"]
        return record


@dataclass(frozen=True)
class TextDelta(AgentEvent):
    type: ClassVar[str] = "text"
    text: str


@dataclass(frozen=True)
class ReasoningDelta(AgentEvent):
    type: ClassVar[str] = "reasoning"
    text: str


@dataclass(frozen=True)
class PromptProgress(AgentEvent):
    """How far the server has read the prompt before its first token (llama-server's
    prefill reports): a long prompt can take minutes, which a person should see moving.
    Transient: JSONL printers and the session file skip it."""

    type: ClassVar[str] = "prompt_progress"
    transient: ClassVar[bool] = True
    processed: int
    total: int


@dataclass(frozen=True)
class ToolCallEvent(AgentEvent):
    type: ClassVar[str] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any]
    salvaged: bool = False


@dataclass(frozen=True)
class ToolResultEvent(AgentEvent):
    type: ClassVar[str] = "tool_result"
    id: str
    is_error: bool
    content: str
    name: str = ""  # the tool's (the call event said it too; a trace wants it here)
    ms: int = 0  # how long it ran, approval and hooks included
    # allowed | refused (the approve mode) | declined (the user) | blocked (a hook) |
    # not_run (budget, cancel, after a "no"); "" where it was never through the gate
    decision: str = ""


@dataclass(frozen=True)
class Diagnostic(AgentEvent):
    type: ClassVar[str] = "diagnostic"
    message: str


@dataclass(frozen=True)
class ReplyProblem(Diagnostic):
    """A problem with the model's reply, in the words bosun sends back to the model
    ("your tool call was cut off …"). The same `diagnostic` line in JSONL; a person is
    shown it as what the model was told, not as if it were said to them."""

    def for_person(self) -> str:
        return f"the model's reply had a problem; it was told: {self.message}"


@dataclass(frozen=True)
class TurnFinished(AgentEvent):
    type: ClassVar[str] = "turn"
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    ms: int
    model: str = ""  # the model that answered (a chat can switch mid-session)
    finish_reason: str = ""  # stop | length | interrupted
    ttft_ms: int | None = None  # time to the first piece of the reply; None: nothing came


@dataclass(frozen=True)
class Compaction(AgentEvent):
    """The prompt was made smaller (agent.loop.context). `cut`, `summary` and `stubs` let a
    resumed session rebuild the same view; `ms` is what it cost (a summary is a model
    call)."""

    type: ClassVar[str] = "compaction"
    elided_turns: int
    tokens_before: int
    tokens_after: int
    cut: int = 0
    summary: str = ""
    stubs: dict[str, str] = field(default_factory=dict)
    ms: int = 0

    def line(self) -> str:
        """One line for a person (the text output and the chat)."""
        what = f"{len(self.stubs)} old results stubbed"
        if self.summary:
            what += f", {self.elided_turns} turns summarised"
        return f"context compacted: {what}; {self.tokens_before} → {self.tokens_after} tokens"


@dataclass(frozen=True)
class RunFinished(AgentEvent):
    type: ClassVar[str] = "result"
    status: Status
    turns: int
    tool_calls: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    duration_ms: int
    final_text: str
    error: str | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["status"] = str(data["status"])
        if data["error"] is None:
            del data["error"]
        return data

    @classmethod
    def of(
        cls,
        status: Status,
        counts: Any = None,
        duration_ms: int = 0,
        final_text: str = "",
        error: str | None = None,
    ) -> RunFinished:
        """A result from a request's counters (anything with `turns`, `tool_calls` and
        a `usage`; None: nothing ran)."""
        usage: Usage = counts.usage if counts is not None else Usage()
        return cls(
            status,
            counts.turns if counts is not None else 0,
            counts.tool_calls if counts is not None else 0,
            usage.prompt_tokens,
            usage.cached_tokens,
            usage.completion_tokens,
            duration_ms,
            final_text,
            error,
        )

    @property
    def exit_code(self) -> int:
        return Status(self.status).exit_code


@dataclass(frozen=True)
class PlanUpdated(AgentEvent):
    """The model's plan as it now stands (`update_plan`): the whole list each time, so
    the last one in a session file is the plan a resumed session shows."""

    type: ClassVar[str] = "plan"
    explanation: str
    steps: list[dict[str, str]]  # [{"step": "…", "status": "pending|in_progress|completed"}]


Emit = Callable[[AgentEvent], None]


@dataclass(frozen=True)
class LintRun(AgentEvent):
    """The linter ran on the files an edit wrote (`auto_lint`, or `/lint`); its
    problems went back to the model with the edit's result."""

    type: ClassVar[str] = "lint"
    __test__: ClassVar[bool] = False
    files: list[str]
    ok: bool
    ms: int
    output: str = ""  # the problems, bounded

    def line(self) -> str:
        what = "clean" if self.ok else "problems sent to the model"
        return f"lint {', '.join(self.files)}: {what} ({self.ms} ms)"


@dataclass(frozen=True)
class TestRun(AgentEvent):
    """The test command ran at the end of a request that edited files (`auto_test`,
    or `/test`); `round` counts its runs in this request."""

    type: ClassVar[str] = "test"
    __test__: ClassVar[bool] = False
    command: str
    ok: bool
    round: int
    ms: int
    output: str = ""  # bounded

    def line(self) -> str:
        said = "passed" if self.ok else "failed"
        return f"tests ({self.command}) {said}, round {self.round} ({self.ms} ms)"


@dataclass(frozen=True)
class Rewound(AgentEvent):
    """`/rewind`: the conversation went back to before request `request`, whose message
    was the session's message number `keep` (0-based): a session file read later keeps
    the messages before it, and the records of compactions before it are void."""

    type: ClassVar[str] = "rewind"
    request: int
    keep: int


@dataclass(frozen=True)
class HookRan(AgentEvent):
    """A configured hook ran (agent.tools.hooks): which, at which event, what it decided
    (allow, block, context, error, timeout) and how long it took."""

    type: ClassVar[str] = "hook"
    name: str
    event: str
    decision: str
    ms: int
    tool: str = ""  # the tool call it was about, where there is one
