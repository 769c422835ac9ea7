"""A long session on the real SmolLM2 at a 2,048-token context: it compacts instead of
ending at the limit, and `chat --continue` picks it up where the compactions left it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import events as ev
from agent.assemble import build_agent, open_model, start_session
from agent.budget import Budget
from agent.chat import ChatSession
from agent.config import Config
from agent.session import SessionLog, latest_session

N_CTX = 2048


def module(i: int) -> str:
    return "\n".join(f"def f{i}_{j}(x):\n    return x * {j}\n" for j in range(10))


@pytest.mark.model
def test_thirty_turns_at_2048_tokens_compact_and_resume(tmp_path: Path, bosun_home: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for i in range(8):
        (workspace / f"mod{i}.py").write_text(module(i))
    driver, profile = open_model("smollm2-135m", context_size=N_CTX)
    log = SessionLog("long-real")
    events: list[ev.AgentEvent] = []

    def emit(event: ev.AgentEvent) -> None:
        log.event(event)
        events.append(event)

    agent = build_agent(
        driver,
        profile,
        workspace,
        emit,
        on_message=log.message,
        budget=Budget(max_turns=30, max_identical_calls=30),
        approve="auto",
        constrain="always",  # every turn a well-formed call or an answer
        context_size=N_CTX,
    )
    try:
        start_session(agent, log.id)
        result = agent.run("Read each .py file in this folder with read_file, one per turn.")
    finally:
        log.close()
        driver.close()
    assert result.status in ("done", "max_turns"), result.error
    turns = [e for e in events if isinstance(e, ev.TurnFinished)]
    assert max(t.prompt_tokens for t in turns) < N_CTX
    compactions = [e for e in events if isinstance(e, ev.Compaction)]
    assert compactions, [t.prompt_tokens for t in turns]
    assert agent.compactor is not None
    shown = agent.compactor.view.messages(agent.history)
    # Resumed as `bosun chat --continue` would: the latest session of this workspace.
    path = latest_session(workspace)
    assert path == log.path
    chat = ChatSession(
        Config(model="smollm2-135m", approve="auto", context_size=N_CTX),
        workspace,
        lambda _e: None,
        None,
    )
    try:
        chat.resume(path)
        assert chat.agent.compactor is not None
        assert chat.agent.compactor.view.messages(chat.history) == shown
        chat.agent.budget.max_turns = 2
        again = chat.send("Which files have you read so far?")
        assert again.status in ("done", "max_turns"), again.error
    finally:
        chat.close()
