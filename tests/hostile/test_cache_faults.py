"""A prompt cache that fails is a slower start, never a failed run (issue #45, class 6).

The prefix cache (drivers/prefix_cache.py) is an optimisation: a full disk, writers
racing on one head, a damaged file each cost a cold start and one warning for the
person (a `diagnostic`), and the usage the in-process driver reports stays the count
of what it was handed. The served-model guard ("the server counted N prompt tokens of
about M sent: it dropped part of the prompt") is for a server's count only
(`DriverInfo.server_counts`): a driver that counts the tokens it was handed cannot have
lost any between the two counts, so a short count from it never ends a run.

The model tests run the bundled SmolLM2 on the CPU with a short head where they can
(a few hundred tokens: a state is written and read in well under a second).
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent import events as ev
from agent.history import Message, System, User
from agent.loop.budget import Budget
from agent.loop.compact import Compactor
from agent.loop.context import Counter, Limits
from agent.loop.turn import Query, Reply, call_model
from agent.protocol.profile import profile_for
from drivers import prefix_cache
from drivers.base import Chunk
from drivers.prefix_cache import cache_dir, entries, read_state
from drivers.scripted import ScriptedDriver, ScriptStep
from tests.helpers import make_agent, tool_call

if TYPE_CHECKING:
    from drivers.llama_cpp import LlamaDriver

MODEL = "smollm2-135m"
# A head of ~200 tokens: past MIN_HEAD_TOKENS, so it is saved, and quick to evaluate.
HEAD = "You are a careful assistant. " + " ".join(f"rule{i}: be brief." for i in range(40))


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


# -- the guard: a server's count only ------------------------------------------------


class CountsOnlyNew(ScriptedDriver):
    """Reports as prompt_tokens only the tokens it had to evaluate (what the issue saw:
    69 counted where ~1,000 were sent, on the second turn of an in-process run)."""

    def _replay(self, step: ScriptStep, prompt: str, previous: str) -> Iterator[Chunk]:
        for chunk in super()._replay(step, prompt, previous):
            if chunk.usage is not None:
                chunk.usage.prompt_tokens -= chunk.usage.cached_tokens
            yield chunk


def _run_short_counts(
    workspace: Path, *, server_counts: bool
) -> tuple[ev.RunFinished, list[ev.AgentEvent]]:
    (workspace / "notes.txt").write_text("hello from bosun\n")
    steps: list[str | dict[str, object]] = [
        tool_call("read_file", path="notes.txt"),
        "It says hello from bosun.",
    ]
    agent, _, events = make_agent(steps, workspace)
    driver = CountsOnlyNew([{"completion": s} for s in steps])
    driver.info = replace(driver.info, server_counts=server_counts)
    agent.seat.driver = driver
    agent.seat.compactor = Compactor(Limits(8192, source="test"), Counter(driver.info.tokenize))
    return agent.run("What does notes.txt say?"), events


def test_a_short_count_from_a_driver_that_counts_itself_never_fails_the_run(
    workspace: Path,
) -> None:
    result, _ = _run_short_counts(workspace, server_counts=False)
    assert result.status == "done", result.error
    assert result.final_text == "It says hello from bosun."


def test_the_same_short_count_from_a_server_is_still_a_lost_prompt(workspace: Path) -> None:
    """The guard stands where a server counts (Ollama's window drops the front)."""
    result, _ = _run_short_counts(workspace, server_counts=True)
    assert result.status == "error" and "dropped part of the prompt" in (result.error or "")


# -- faults of the cache on the real model -------------------------------------------

Open = Callable[..., "LlamaDriver"]
WriteParts = Callable[[int, Sequence[bytes | bytearray | memoryview]], None]


@pytest.fixture
def llama() -> Iterator[Open]:
    """Opens in-process drivers (sessions) on the bundled model, closed at the end."""
    pytest.importorskip("llama_cpp")
    from drivers.llama_cpp import open_llama

    opened: list[LlamaDriver] = []

    def open_one(n_ctx: int = 1024) -> LlamaDriver:
        opened.append(open_llama(MODEL, n_ctx=n_ctx, n_threads=1))
        return opened[-1]

    yield open_one
    for driver in opened:
        driver.close()


def _full_disk(real: WriteParts = prefix_cache._write_parts) -> WriteParts:
    """The disk fills up part way through the state: the header goes out, then ENOSPC
    (what a write on a full file system raises, there or at the fsync)."""

    def write(fd: int, parts: Sequence[bytes | bytearray | memoryview]) -> None:
        real(fd, list(parts)[:2])
        raise OSError(errno.ENOSPC, "No space left on device")

    return write


def _ask(driver: LlamaDriver, history: list[Message]) -> tuple[Reply, list[str]]:
    """One model call the way the agent makes it, and the diagnostics it emitted."""
    events: list[ev.AgentEvent] = []
    reply = call_model(driver, profile_for(MODEL), Query(history, [], events.append, 4))
    return reply, [e.message for e in events if type(e) is ev.Diagnostic]


def _sent(driver: LlamaDriver, history: list[Message]) -> int:
    """The prompt's tokens, counted apart from any cache."""
    return len(driver.tokenize(profile_for(MODEL).render(history, [])))


@pytest.mark.model
def test_a_full_disk_is_one_warning_and_the_counts_stay_honest(
    llama: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prefix_cache, "_write_parts", _full_disk())
    driver = llama()
    history: list[Message] = [System(HEAD), User("Say hello.")]
    reply, said = _ask(driver, history)
    assert reply.usage.prompt_tokens == _sent(driver, history)
    assert reply.usage.cached_tokens == 0
    assert len(said) == 1 and "disk is full" in said[0] and "could not be saved" in said[0], said
    assert _names(cache_dir()) == []  # no state, and no half-written .part left behind
    # the session's next call: the head is in memory, and nothing is said again
    history.append(User("And again."))
    again, said = _ask(driver, history)
    assert said == []
    assert again.usage.cached_tokens > 100
    assert again.usage.prompt_tokens == _sent(driver, history)


@pytest.mark.model
def test_a_run_on_a_full_disk_ends_as_it_would_with_one_warning(
    llama: Open, monkeypatch: pytest.MonkeyPatch, workspace: Path
) -> None:
    """The whole loop on the real system prompt and tools (the issue's run): no status
    error, one diagnostic, and the usage of an uncached call."""
    monkeypatch.setattr(prefix_cache, "_write_parts", _full_disk())
    driver = llama(4096)
    budget = Budget(max_turns=1, max_tokens=8)
    agent, _, events = make_agent([], workspace, budget=budget, profile=profile_for(MODEL))
    agent.seat.driver = driver
    agent.seat.compactor = Compactor(Limits(4096, source="test"), Counter(driver.tokenize))
    result = agent.run("Say hello.")
    assert result.status != "error", result.error
    said = [e.message for e in events if type(e) is ev.Diagnostic]
    assert sum("disk is full" in m for m in said) == 1, said
    [turn] = [e for e in events if isinstance(e, ev.TurnFinished)]
    assert turn.cached_tokens == 0 and turn.prompt_tokens > 500
    assert _names(cache_dir()) == []


@pytest.mark.model
def test_three_sessions_saving_one_head_at_once_agree_on_one_whole_state(
    llama: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three sessions save the same head into an empty cache at the same moment: each
    writes its whole `.part`, all three wait there, then each renames its own over the
    one name. Nothing was lost, so nothing is said; the counts are honest, one valid
    state stands, and a fourth session loads it and answers as the three did."""
    writing = threading.Barrier(3, timeout=60)
    real = prefix_cache._write_parts

    def write_together(fd: int, parts: Sequence[bytes | bytearray | memoryview]) -> None:
        real(fd, parts)
        writing.wait()  # every writer is past its write, and none has renamed yet

    monkeypatch.setattr(prefix_cache, "_write_parts", write_together)
    drivers = [llama() for _ in range(3)]
    history: list[Message] = [System(HEAD), User("Say hello.")]
    results: dict[int, tuple[Reply, list[str]]] = {}
    failures: list[BaseException] = []

    def session(i: int) -> None:
        try:
            results[i] = _ask(drivers[i], history)
        except BaseException as exc:  # reported below, not lost in a thread
            failures.append(exc)

    threads = [threading.Thread(target=session, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not failures, failures
    replies = [results[i][0] for i in range(3)]
    assert [r.usage.prompt_tokens for r in replies] == [_sent(drivers[0], history)] * 3
    assert [r.usage.cached_tokens for r in replies] == [0, 0, 0]
    assert [results[i][1] for i in range(3)] == [[], [], []]
    [state] = list(cache_dir().iterdir())  # one name, no .part left
    [entry] = entries()
    assert entry.header is not None
    tokens, _ = read_state(state, entry.header.key)
    monkeypatch.setattr(prefix_cache, "_write_parts", real)
    fourth, said = _ask(llama(), history)
    assert said == [] and fourth.usage.cached_tokens == len(tokens)
    assert fourth.prose == replies[0].prose


@pytest.mark.model
def test_a_half_written_state_is_one_warning_and_is_written_whole_again(llama: Open) -> None:
    """A file cut short (a crash on a file system that does not rename atomically, a
    disk that filled under an older bosun) is deleted, said once, and saved again."""
    history: list[Message] = [System(HEAD), User("Say hello.")]
    cold, _ = _ask(llama(), history)
    [state] = list(cache_dir().glob("*.kv"))
    data = state.read_bytes()
    state.write_bytes(data[: len(data) // 2])
    reply, said = _ask(llama(), history)
    assert len(said) == 1 and "could not be used" in said[0], said
    assert reply.usage.cached_tokens == 0
    assert reply.usage.prompt_tokens == cold.usage.prompt_tokens
    assert reply.prose == cold.prose
    [entry] = entries()  # whole again: every check passes
    assert entry.path == state and entry.header is not None
    assert read_state(state, entry.header.key)[0] == entry.header.tokens
