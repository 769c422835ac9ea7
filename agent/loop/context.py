"""The context budget: every prompt fits, and a long session compacts instead of dying.

History stays whole (the session file keeps every message); what the model is shown is
a `View` of it. When the prompt passes `compact_at` of the context, the oldest tool
results become one-line stubs naming their call (cheap, and as good as a summary for
results the model has already used); if that is not enough, the oldest rounds are
summarised by the model itself into one note added to the task. The system prompt, the
task, the latest rounds and every call/result pair stay as they were, so the prompt is
still valid for the model's template. A compaction changes the prompt once, at its cut;
the turns after it reuse the KV cache again.

Sizes come from the driver's tokenizer (or ~3 characters a token without one), counted
once per message, and are corrected by what the backend reported for the last prompt,
so a template's own markup is accounted for without rendering anything twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
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

PER_MESSAGE = 8  # role markers and separators a template adds around a message
STUB_OVER = 48  # results this small are not worth a stub
SUMMARY_NOTE = "Earlier in this session (summarised to fit the context):"


@dataclass(frozen=True)
class Limits:
    """How the context is shared out. `compact_at` and `target` are fractions of it:
    past the first a compaction starts, and it goes down to the second, so it happens
    once every few turns instead of at every turn."""

    n_ctx: int
    compact_at: float = 0.8
    target: float = 0.6
    result_share: float = 0.25  # a tool result larger than this is cut on the way in
    min_reply: int = 128  # tokens the model must still have to answer
    source: str = ""  # where n_ctx came from: --context-size, the model, a server's word

    @property
    def ceiling(self) -> int:
        return int(self.n_ctx * self.compact_at)

    @property
    def hard(self) -> int:
        """The largest prompt that still leaves the model room to answer."""
        return self.n_ctx - self.min_reply

    @property
    def goal(self) -> int:
        """Where a compaction stops: below the ceiling by a margin, whatever it is."""
        return int(self.n_ctx * min(self.target, self.compact_at * 0.75))


class Counter:
    """Token counts per message, cached: a turn costs the new text, not the history."""

    def __init__(self, tokenize: Callable[[str], Sequence[object]] | None) -> None:
        self._tokenize = tokenize
        self._seen: dict[int, tuple[Message, int]] = {}
        self._specs: tuple[str, int] = ("", 0)

    def text(self, text: str) -> int:
        if self._tokenize is None:
            return -(-len(text) // 3)  # code and JSON run near 3 characters a token
        return len(self._tokenize(text))

    def message(self, message: Message) -> int:
        seen = self._seen.get(id(message))
        if seen is not None and seen[0] is message:
            return seen[1]
        if isinstance(message, AssistantToolUse):
            call = message.call
            n = self.text(call.name + json.dumps(call.arguments, ensure_ascii=False))
        else:
            n = self.text(message.content)
        n += PER_MESSAGE
        self._seen[id(message)] = (message, n)
        return n

    def specs(self, specs: Sequence[dict[str, Any]]) -> int:
        key = json.dumps(list(specs), sort_keys=True)
        if key != self._specs[0]:
            self._specs = (key, self.text(key) if specs else 0)
        return self._specs[1]

    def total(self, messages: Sequence[Message], specs: Sequence[dict[str, Any]]) -> int:
        return self.specs(specs) + sum(self.message(m) for m in messages) + PER_MESSAGE


def cap_result(result: ToolResult, limit: int, counter: Counter) -> ToolResult:
    """A result larger than `limit` tokens, cut to its head and tail (the end of a log
    is where the error usually is), with what was left out and how to get it."""
    n = counter.text(result.content)
    if n <= limit:
        return result
    text = result.content
    keep = max(200, int(len(text) * limit / n) - 200)
    head, tail = text[: keep // 3], text[len(text) - (keep - keep // 3) :]
    note = (
        f"\n[… {len(text) - len(head) - len(tail)} characters (about {n - limit} tokens)"
        " left out to fit the context; read a narrower range (read_file with offset and"
        " limit) or search with a narrower grep …]\n"
    )
    return ToolResult(result.call_id, head + note + tail, result.is_error)


def _assistant_side(m: Message) -> bool:
    return isinstance(m, Assistant | AssistantToolUse | Reasoning)


def task_index(history: Sequence[Message]) -> int:
    """The first user message: the task, which every view keeps."""
    return next((i for i, m in enumerate(history) if isinstance(m, User)), len(history))


def round_starts(history: Sequence[Message]) -> list[int]:
    """Where each model reply begins after the task: the only places a view may cut
    (every call before such a place already has its result)."""
    task = task_index(history)
    return [
        i
        for i in range(task + 1, len(history))
        if _assistant_side(history[i]) and not _assistant_side(history[i - 1])
    ]


def user_messages(history: Sequence[Message], after: int) -> list[int]:
    """The user's messages after `after`: places a view may cut as a last resort (a
    user message never stands between a call and its result)."""
    return [i for i in range(after + 1, len(history)) if isinstance(history[i], User)]


@dataclass
class View:
    """What the model is shown of the history: results replaced by stubs, and rounds
    before `cut` replaced by a summary attached to the task. Rebuilt from the session
    file's compaction records, so a resumed session shows the model the same thing."""

    stubs: dict[str, str] = field(default_factory=dict)  # call id -> what stands there
    summary: str = ""
    cut: int = 0  # history[task + 1 : cut] is summarised (when there is a summary)
    _made: dict[tuple[str, int], Message] = field(default_factory=dict, repr=False)

    def messages(self, history: Sequence[Message]) -> list[Message]:
        if not self.stubs and not self.summary:
            return list(history)
        task = task_index(history)
        out: list[Message] = []
        for i, m in enumerate(history):
            if self.summary and task < i < self.cut:
                continue
            if i == task and self.summary and isinstance(m, User):
                m = self._made_once(("task", i), lambda m=m: self._with_summary(m))
            elif isinstance(m, ToolResult) and m.call_id in self.stubs:
                m = self._made_once(
                    (m.call_id, i),
                    lambda m=m: ToolResult(m.call_id, self.stubs[m.call_id], m.is_error),
                )
            out.append(m)
        return out

    def _with_summary(self, task: User) -> User:
        return User(f"{task.content}\n\n{SUMMARY_NOTE}\n{self.summary}")

    def _made_once(self, key: tuple[str, int], make: Callable[[], Message]) -> Message:
        """The same object for the same stand-in, so its token count stays cached."""
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = make()
        return made

    def apply(self, record: dict[str, Any]) -> None:
        """Replay one compaction record (from a session file: untrusted, checked)."""
        stubs = record.get("stubs")
        if isinstance(stubs, dict):
            self.stubs.update({str(k): str(v) for k, v in stubs.items()})
        summary, cut = record.get("summary"), record.get("cut")
        if isinstance(summary, str) and summary and isinstance(cut, int) and cut > self.cut:
            self.summary, self.cut = summary, cut
            self._made = {k: v for k, v in self._made.items() if k[0] != "task"}


def stub_for(call: ToolCall | None, tokens: int) -> str:
    what = "this call"
    if call is not None:
        args = json.dumps(call.arguments, ensure_ascii=False)
        what = f"{call.name}({args if len(args) <= 120 else args[:117] + '…'})"
    return (
        f"[result of {what} elided to fit the context ({tokens} tokens); call it again if needed]"
    )


def transcript(messages: Sequence[Message], previous: str, limit_chars: int) -> str:
    """The rounds to summarise, as plain text a model can read (results shortened)."""
    lines = [f"Summary so far: {previous}"] if previous else []
    for m in messages:
        if isinstance(m, AssistantToolUse):
            lines.append(f"Assistant called {m.call.name} {json.dumps(m.call.arguments)}")
        elif isinstance(m, ToolResult):
            lines.append("Result: " + m.content[:400].replace("\n", " "))
        elif isinstance(m, User | Assistant) and not isinstance(m, System):
            role = "User" if isinstance(m, User) else "Assistant"
            lines.append(f"{role}: {m.content[:800]}")
    text = "\n".join(lines)
    if len(text) > limit_chars:  # keep the start (the plan) and the end (where it got to)
        text = text[: limit_chars // 2] + "\n…\n" + text[-(limit_chars // 2) :]
    return text
