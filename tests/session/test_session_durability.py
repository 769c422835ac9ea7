"""kill -9 at random points of real runs: every session file loads, nothing complete is
lost, and resuming gives a consistent history and the prompt the model saw before."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent.history import Message, ToolResult, User
from agent.run.chat import LOST_CALL, ChatSession
from agent.run.config import Config
from agent.run.settings import Settings
from agent.session import load_messages, unanswered_calls
from tests.helpers import tool_call

REPO = Path(__file__).resolve().parents[2]
RUNS = 50
WORKERS = 5
STEP_DELAY_MS = 12


def slow(text: str, pieces: int = 8) -> dict[str, object]:
    size = max(1, len(text) // pieces)
    return {
        "chunks": [text[i : i + size] for i in range(0, len(text), size)],
        "delay_ms": STEP_DELAY_MS,
    }


def command(script: Path, workspace: Path, trace: Path | None = None) -> list[str]:
    args = [sys.executable, "-m", "agent", "run", "read everything", "--output", "jsonl"]
    args += ["--model", f"scripted:{script}", "--workspace", str(workspace)]
    return args + (["--trace", str(trace)] if trace is not None else [])


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "BOSUN_DEBUG"}
    env["BOSUN_HOME"] = str(home)
    return env


def session_file(home: Path) -> Path | None:
    files = list((home / "sessions").glob("*.jsonl"))
    return files[0] if files else None


def kill_at_random(args: list[str], home: Path, seed: int, span_s: float) -> Path | None:
    """Start a run, wait until its session file exists, then SIGKILL it at a random
    moment in the time a whole run takes (some kills land after it finished)."""
    rng = random.Random(seed)
    proc = subprocess.Popen(
        args, env=env_for(home), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while session_file(home) is None and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(rng.uniform(0, span_s))
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    return session_file(home)


@pytest.mark.slow
def test_sigkill_at_random_points(workspace: Path, script_file, tmp_path: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("print('hi')\n")
    script = script_file(
        slow("Let me look around.\n" + tool_call("list_dir", path=".")),
        slow(tool_call("read_file", path="notes.txt")),
        slow("Now the code.\n" + tool_call("list_dir", path="src")),
        slow(tool_call("read_file", path="src/main.py")),
        slow("It prints hi, and the notes say hello from bosun."),
    )
    # The reference: the same run, not killed.
    trace = tmp_path / "trace.jsonl"
    started = time.monotonic()
    done = subprocess.run(
        command(script, workspace, trace),
        env=env_for(tmp_path / "ref"),
        cwd=REPO,
        capture_output=True,
        timeout=60,
    )
    span = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    reference_file = session_file(tmp_path / "ref")
    assert reference_file is not None
    reference = load_messages(reference_file)
    prompts = [json.loads(line)["prompt"] for line in trace.read_text().splitlines()]

    homes = [tmp_path / f"run{i}" for i in range(RUNS)]
    with ThreadPoolExecutor(WORKERS) as pool:
        files = list(
            pool.map(
                lambda i: kill_at_random(command(script, workspace), homes[i], i, span), range(RUNS)
            )
        )

    lengths = []
    for path in files:
        assert path is not None
        history = load_messages(path)  # never raises, torn or not
        assert history == reference[: len(history)]  # nothing complete lost or altered
        lengths.append(len(history))
        check_resume(path, history, prompts, workspace, script_file)
    assert len(set(lengths)) >= 4, lengths  # the kills really landed at different points


def check_resume(
    path: Path, history: list[Message], prompts: list[str], workspace: Path, script_file
) -> None:
    lost = unanswered_calls(history)
    chat = ChatSession(
        Settings.from_config(
            Config(model=f"scripted:{script_file('Resumed.')}"), workspace=workspace
        ),
        lambda e: None,
        None,
    )
    chat.resume(path)
    repaired = [*history, *(ToolResult(c.id, LOST_CALL, is_error=True) for c in lost)]
    assert chat.history == repaired
    if not lost and history and isinstance(history[-1], User | ToolResult):
        # A model call was due: after the restart it gets exactly the same prompt.
        calls_done = sum(1 for m in history if isinstance(m, ToolResult))
        assert chat.next_prompt() == prompts[calls_done]
    chat.send("go on")
    assert load_messages(path) == chat.history  # the resumed file is whole again
    chat.close()
