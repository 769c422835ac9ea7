"""Deciding and doing a compaction (what a compaction is: agent.loop.context).

Stubs first, oldest first, because they cost nothing; a summary only when stubs are
not enough, because it costs a model call. Each compaction goes down to the target, so
the next one is several turns away and the KV cache is rebuilt once, not every turn.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent import events as ev
from agent.history import AssistantToolUse, Message, ToolResult, User
from agent.loop.context import (
    PER_MESSAGE,
    STUB_OVER,
    Counter,
    Limits,
    View,
    cap_result,
    round_starts,
    stub_for,
    task_index,
    transcript,
    user_messages,
)
from agent.loop.turn import Query, call_model
from agent.protocol.profile import ModelProfile
from drivers.base import Driver, DriverError, Halt, Usage

TRUNCATION_SLACK = 256  # tokens: below this a short count is noise, not a lost prompt
OVERFLOW_SLACK = 8  # tokens short of the context that still count as a full one

SUMMARY_TOKENS = 320  # the most a summary may cost (less in a small context)
CAP_NOTE_TOKENS = 64  # what a cut result's note on what was left out costs
MIN_RESULT_TOKENS = 64  # a result is never cut to less (an error says so, then)
# (the conversation as the model sees it now, the rounds being elided) -> a summary
Summarise = Callable[[list[Message], list[Message]], str]
SUMMARY_ASK = (
    "Pause the task. Do not call any tool now. Summarise this session so far in a few"
    " short lines, for yourself to continue from: the goal, the files read or changed and"
    " what was found, decisions, errors, and what remains to do."
)


def model_summariser(
    driver: Driver,
    profile: ModelProfile,
    specs: list[dict[str, Any]],
    usage: Usage,
    halt: Halt,
    trace: Any = None,
    max_tokens: int = SUMMARY_TOKENS,
) -> Summarise:
    """The model summarises as the next turn of the very conversation it is in, so the
    backend's KV cache of that conversation serves the request (only the question is
    evaluated) and the system prompt and tools stay cached for the turn after. Its tokens
    count in `usage`; an answer with no prose (a tool call after all) falls back to a
    plain transcript of the elided rounds, never to nothing."""

    def summarise(shown: list[Message], elided: list[Message]) -> str:
        request = Query(
            [*shown, User(SUMMARY_ASK)],
            specs,
            lambda _e: None,
            max_tokens,
            halt=halt,
            trace=trace,
        )
        reply = call_model(driver, profile, request)
        usage.add(reply.usage)
        summary = reply.prose.strip()[: max_tokens * 6]
        return summary or transcript(elided, "", max_tokens * 3)

    return summarise


@dataclass
class Compactor:
    limits: Limits
    counter: Counter
    view: View = field(default_factory=View)
    correction: int = 0  # the backend's real prompt size minus our estimate, last call

    @property
    def summary_tokens(self) -> int:
        return max(64, min(SUMMARY_TOKENS, self.limits.n_ctx // 16))

    def size(self, history: Sequence[Message], specs: Sequence[dict[str, Any]]) -> int:
        """The prompt the view makes, in tokens (estimated, then corrected)."""
        return self.counter.total(self.view.messages(history), specs) + self.correction

    def observe(
        self,
        shown: Sequence[Message],
        specs: Sequence[dict[str, Any]],
        real: int,
        *,
        chat: bool = False,
        served: bool = False,
    ) -> str | None:
        """Learn the template's own overhead from what the backend counted for the
        prompt it was sent (`shown`); nothing to learn from a call that reported none.

        `served` (the driver's `info.server_counts`): a server counted the prompt it
        received. One that counted far fewer tokens than were sent dropped part of the
        prompt (Ollama's window does, silently, behind HTTP 200): its answer was made
        without the system prompt or the tools, so the run stops with that said, never
        a silent turn. The estimate runs at most a third high (3 characters a token
        against prose's 4), so half of it is a safe line. A driver that counts what it
        was handed itself (the in-process one) cannot have dropped anything between the
        two counts, so a short count there is never taken for a lost prompt (nor learnt
        from: it can only be a miscount).

        `chat`: the server rendered the prompt, so a count that holds the conversation
        but not the tools means it left the tools out (llama-server without --jinja, a
        chat template without tools). The conversation is whole, so that is a warning
        to say (returned), not an error: the model can answer, it cannot call a tool."""
        if real <= 0:
            return None
        raw = self.counter.total(shown, specs)
        if real < raw // 2 and raw - real > TRUNCATION_SLACK:
            if not served:  # not a server's word: nothing to learn from, nothing lost
                return None
            bare = self.counter.total(shown, ())
            if chat and specs and real >= bare // 2:
                return (
                    f"the server counted {real:,} prompt tokens, about the conversation"
                    f" without its tools ({bare:,}): it left the tools out of the prompt"
                    " (its chat template has no place for them, or llama-server runs"
                    " without --jinja), so the model cannot call them; use --api"
                    " completions, where bosun renders the tools itself"
                )
            raise DriverError(
                f"the server counted {real:,} prompt tokens of about {raw:,} sent: it"
                " dropped part of the prompt (its context window is smaller than the"
                f" {self.limits.n_ctx:,} tokens bosun plans for, from"
                f" {self.limits.source or 'its settings'}); give --context-size N with"
                " the server's real window, or raise the server's"
            )
        self.correction = max(-raw // 2, real - raw)
        return None

    def overflowed(self, finish: str, usage: Usage, max_tokens: int) -> bool:
        """A reply cut by the context filling up, not by its own `max_tokens`: the
        server stopped where the window ended (llama-server does, with finish "length"),
        so the model never got to finish its call or its answer."""
        if finish != "length" or usage.prompt_tokens <= 0:
            return False
        used = usage.prompt_tokens + usage.completion_tokens
        return usage.completion_tokens < max_tokens and used >= self.limits.n_ctx - OVERFLOW_SLACK

    def restart(self, compactions: Sequence[dict[str, Any]] = ()) -> None:
        """A new or resumed conversation: its view, from its compaction records."""
        self.view = View()
        for record in compactions:
            self.view.apply(record)

    def cap(
        self,
        result: ToolResult,
        history: Sequence[Message] = (),
        specs: Sequence[dict[str, Any]] = (),
    ) -> ToolResult:
        """A result cut to a share of the context and, given the history it joins, to
        the room compaction can make for it: whatever the system prompt, tools, task
        and the current round (never compacted) leave after a reply's minimum. Without
        that, a small context holds the result but no next prompt (a wedged session)."""
        limit = int(self.limits.n_ctx * self.limits.result_share)
        if history:
            task = task_index(history)
            starts = round_starts(history)
            current = history[starts[-1] :] if starts else history[task + 1 :]
            kept = (
                self.size(history[: task + 1], specs)
                + self.summary_tokens
                + sum(self.counter.message(m) for m in current)
            )
            room = self.limits.n_ctx - kept - self.limits.min_reply - CAP_NOTE_TOKENS
            limit = max(min(limit, room), MIN_RESULT_TOKENS)
        return cap_result(result, limit, self.counter)

    def fit(
        self,
        history: Sequence[Message],
        specs: Sequence[dict[str, Any]],
        summarise: Summarise,
        *,
        force: bool = False,
        due: Callable[[str], None] | None = None,
    ) -> ev.Compaction | None:
        """Compact when the prompt is past the ceiling (or `force`, for /compact);
        None when it fits or nothing more can go. `due` is told first, with the
        trigger ("auto" or "manual"), once a compaction is due (PreCompact hooks)."""
        before = self.size(history, specs)
        if not force and before <= self.limits.ceiling:
            return None
        if due is not None:
            due("manual" if force else "auto")
        started = time.perf_counter()
        # Down to the goal, or, where the fixed part (system prompt, tools, task) leaves
        # less room than that, to half of the room there is.
        fixed = self.size(history[: task_index(history) + 1], specs) + self.summary_tokens
        target = max(self.limits.goal, (fixed + self.limits.ceiling) // 2)
        starts = round_starts(history)
        # The latest round is never touched; the one before it only when the rest is
        # not enough (a small context with large results).
        last = starts[-1] if starts else len(history)
        stubs = self._stub(history, starts[-2] if len(starts) > 1 else last, before - target, force)
        excess = self.size(history, specs) - target
        if excess > 0:
            stubs.update(self._stub(history, last, excess, force))
        cut, summary, elided = self._summarise(history, specs, starts, last, target, summarise)
        points = user_messages(history, last)
        if points and self.size(history, specs) > self.limits.hard:
            # Last resort: the latest round itself leaves no room to answer (a long reply
            # in a small context). Cut at the user's latest words rather than send a
            # prompt the model cannot answer, which would fail every message after it.
            more = self._summarise(history, specs, points, points[-1], self.limits.hard, summarise)
            if more[1]:
                cut, summary, elided = more[0], more[1], elided + more[2]
        if not stubs and not summary:
            return None
        after = self.size(history, specs)
        ms = round((time.perf_counter() - started) * 1000)
        return ev.Compaction(elided, before, after, cut, summary, stubs, ms)

    def _stub(
        self, history: Sequence[Message], protect: int, excess: int, force: bool
    ) -> dict[str, str]:
        calls = {m.call.id: m.call for m in history if isinstance(m, AssistantToolUse)}
        first = self.view.cut if self.view.summary else task_index(history) + 1
        made: dict[str, str] = {}
        for m in history[first:protect]:
            if excess <= 0 and not force:
                break
            if not isinstance(m, ToolResult) or m.call_id in self.view.stubs:
                continue
            n = self.counter.message(m)
            if n > STUB_OVER:
                stub = stub_for(calls.get(m.call_id), n - PER_MESSAGE)
                made[m.call_id] = self.view.stubs[m.call_id] = stub
                excess -= n - self.counter.text(stub) - PER_MESSAGE
        return made

    def _summarise(
        self,
        history: Sequence[Message],
        specs: Sequence[dict[str, Any]],
        points: list[int],
        protect: int,
        target: int,
        summarise: Summarise,
    ) -> tuple[int, str, int]:
        """(cut, summary, rounds elided), or (cut, "", 0) when stubs were enough; the
        cut is the earliest of `points` up to `protect` that gets under `target`."""
        if self.size(history, specs) <= target:
            return self.view.cut, "", 0
        candidates = [s for s in points if s > self.view.cut and s <= protect]
        if not candidates:
            return self.view.cut, "", 0
        shown = self.view.messages(history)
        offset = len(history) - len(shown)  # the view drops history[task + 1 : cut]
        fixed = self.counter.specs(specs) + self.correction + self.summary_tokens + PER_MESSAGE
        task = task_index(history)
        head = sum(self.counter.message(m) for m in shown[: task + 1])
        cut = candidates[-1]
        for start in candidates:  # the earliest cut whose tail fits under the target
            tail = sum(self.counter.message(m) for m in shown[start - offset :])
            if fixed + head + tail <= target:
                cut = start
                break
        first = self.view.cut if self.view.summary else task + 1
        elided_part = shown[first - offset : cut - offset]
        # A summary costs up to its budget: replacing less than that (one small round
        # where the fixed part leaves little room) would grow the prompt, every turn.
        freed = sum(self.counter.message(m) for m in elided_part)
        if freed + self.counter.text(self.view.summary) <= self.summary_tokens + PER_MESSAGE:
            return self.view.cut, "", 0
        room = self.limits.n_ctx - self.summary_tokens - 2 * PER_MESSAGE - 64
        summary = ""
        if self.size(history, specs) <= room:  # the question fits after the conversation
            with contextlib.suppress(DriverError):  # a failed summary is not a failed run
                summary = summarise(shown, elided_part)
        summary = summary or transcript(elided_part, self.view.summary, self.summary_tokens * 3)
        elided = sum(1 for s in round_starts(history) if first <= s < cut)
        self.view.apply({"summary": summary, "cut": cut})
        return cut, summary, elided
