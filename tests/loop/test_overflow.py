"""A context that overflowed is compacted and asked again, once: a reply cut off by a full
window (not by its own max_tokens) and a prompt the server refused as too long. Where
nothing can be compacted, the cut reply stands and the refusal ends the run.

The backend is the scripted driver with one change (a real server's count): a step
marked "length" reports the window as full, as llama-server does when it stops there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from agent import events as ev
from agent.loop.compact import Compactor
from agent.loop.context import Counter, Limits
from agent.loop.runtime import Agent
from drivers.base import Chunk, ContextOverflow, Request
from drivers.scripted import ScriptedDriver
from tests.helpers import make_agent, tool_call

N_CTX = 6000
BIG = "".join(f"row {i}: " + "lorem ipsum dolor sit amet " * 6 + "\n" for i in range(60))


class FullWindow(ScriptedDriver):
    """Steps marked "length" end at a full window: prompt and reply fill `N_CTX`."""

    filled = 0  # the completion tokens the cut reply was said to have

    def _replay(self, step, prompt: str, previous: str) -> Iterator[Chunk]:  # type: ignore[no-untyped-def]
        for chunk in super()._replay(step, prompt, previous):
            if chunk.usage is not None and step.finish_reason == "length":
                chunk.usage.completion_tokens = N_CTX - chunk.usage.prompt_tokens
                self.filled = chunk.usage.completion_tokens
            yield chunk


class RefusesFirst(ScriptedDriver):
    """Refuses the `refuse`-th call as too long for the context, as llama-server does."""

    refuse = 3

    def stream(self, request: Request, **kw):  # type: ignore[no-untyped-def]
        if len(self.calls) + 1 == self.refuse and not getattr(self, "refused", False):
            self.refused = True
            raise ContextOverflow("refused the prompt as too long for its context: exceeds")
        return super().stream(request, **kw)


def agent_on(driver_type: type[ScriptedDriver], steps: list, workspace: Path) -> tuple[Agent, list]:
    for name in ("a.txt", "b.txt"):
        (workspace / name).write_text(BIG)
    agent, _, events = make_agent(steps, workspace)
    driver = driver_type([{"completion": s} if isinstance(s, str) else s for s in steps])
    agent.seat.driver = driver
    counter = Counter(driver.info.tokenize)
    agent.seat.compactor = Compactor(Limits(N_CTX, source="test"), counter)
    agent.budget.max_tokens = 2048  # more than the window leaves: the window ends the reply
    return agent, events


READS = [tool_call("read_file", path="a.txt"), tool_call("read_file", path="b.txt")]


def test_a_reply_cut_by_a_full_window_is_compacted_and_asked_again(workspace: Path) -> None:
    cut = {"completion": "Here is the start of a very long answer that", "finish_reason": "length"}
    agent, events = agent_on(FullWindow, [*READS, cut, "Both files list rows."], workspace)
    result = agent.run("Read a.txt and b.txt, then say what they hold.")
    assert result.status == "done" and result.final_text == "Both files list rows."
    said = [e.message for e in events if isinstance(e, ev.Diagnostic)]
    assert any("filled the context" in m and "asked again" in m for m in said), said
    assert any(isinstance(e, ev.Compaction) for e in events)
    texts = [getattr(m, "content", "") for m in agent.history]
    assert not any("very long answer" in str(t) for t in texts)  # the cut reply is dropped
    assert agent.driver.remaining == 0  # type: ignore[attr-defined]
    # the cut call's tokens still count in the run's usage
    assert result.completion_tokens > agent.driver.filled  # type: ignore[attr-defined]


def test_a_reply_cut_by_its_own_limit_is_not_an_overflow(workspace: Path) -> None:
    """max_tokens, not the window, ended it: compacting would not help."""
    limits = Limits(N_CTX)
    compactor = Compactor(limits, Counter(None))
    from drivers.base import Usage

    assert compactor.overflowed("length", Usage(prompt_tokens=5000, completion_tokens=995), 1024)
    assert not compactor.overflowed(
        "length", Usage(prompt_tokens=100, completion_tokens=1024), 1024
    )
    assert not compactor.overflowed("stop", Usage(prompt_tokens=5000, completion_tokens=995), 1024)
    assert not compactor.overflowed("length", Usage(prompt_tokens=0, completion_tokens=0), 1024)


def test_with_nothing_to_compact_the_cut_reply_stands(workspace: Path) -> None:
    cut = {"completion": "An answer cut off", "finish_reason": "length"}
    agent, events = agent_on(FullWindow, [cut], workspace)
    result = agent.run("Say something long.")
    assert result.final_text == "An answer cut off"
    assert not any(isinstance(e, ev.Compaction) for e in events)


def test_a_prompt_refused_as_too_long_is_compacted_and_asked_again(workspace: Path) -> None:
    agent, events = agent_on(RefusesFirst, [*READS, "Rows, in both."], workspace)
    result = agent.run("Read a.txt and b.txt, then say what they hold.")
    assert result.status == "done" and result.final_text == "Rows, in both.", result.error
    said = [e.message for e in events if isinstance(e, ev.Diagnostic)]
    assert any("refused the prompt" in m for m in said), said


def test_a_refusal_with_nothing_to_compact_ends_the_run(workspace: Path) -> None:
    class RefusesAll(RefusesFirst):
        refuse = 1

    agent, _ = agent_on(RefusesAll, ["never sent"], workspace)
    result = agent.run("Hello.")
    assert result.status == "error" and "too long for its context" in (result.error or "")
