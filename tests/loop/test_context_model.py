"""A long session on the real SmolLM2 at a 2,048-token context: it compacts instead of
ending at the limit, and `chat --continue` picks it up where the compactions left it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import events as ev
from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.settings import Settings
from agent.session import latest_session

N_CTX = 2048
READS = 30


def module(i: int) -> str:
    return "\n".join(f"def f{i}_{j}(x):\n    return x * {j} + {i}\n" for j in range(4))


@pytest.mark.model
def test_thirty_reads_at_2048_tokens_compact_and_resume(tmp_path: Path, bosun_home: Path) -> None:
    """Thirty requests, each answered with a call (`--constrain always` makes the first
    reply to a request a call), so the session really grows past its context."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for i in range(8):
        (workspace / f"mod{i}.py").write_text(module(i))
    config = Config(model="smollm2-135m", approve="auto", constrain="always", context_size=N_CTX)
    events: list[ev.AgentEvent] = []
    chat = ChatSession(Settings.from_config(config, workspace=workspace), events.append, None)
    try:
        chat.start_new()
        chat.agent.budget.max_turns = 1  # the call (and its result); no answer turn
        for i in range(READS):
            result = chat.send(f"Read mod{i % 8}.py with read_file.")
            assert result.status in ("done", "max_turns"), result.error
        assert chat.agent.compactor is not None
        shown = chat.agent.compactor.view.messages(chat.history)
    finally:
        chat.close()
    calls = [e for e in events if isinstance(e, ev.ToolCallEvent)]
    assert len(calls) >= READS
    turns = [e for e in events if isinstance(e, ev.TurnFinished)]
    assert max(t.prompt_tokens for t in turns) < N_CTX
    assert any(isinstance(e, ev.Compaction) for e in events)
    # `bosun chat --continue`: the latest session of this workspace, the same view.
    path = latest_session(workspace)
    assert path is not None
    again = ChatSession(Settings.from_config(config, workspace=workspace), lambda _e: None, None)
    try:
        again.resume(path)
        assert again.agent.compactor is not None
        assert again.agent.compactor.view.messages(again.history) == shown
        again.agent.budget.max_turns = 2
        assert again.send("Read mod0.py with read_file.").status in ("done", "max_turns")
    finally:
        again.close()
