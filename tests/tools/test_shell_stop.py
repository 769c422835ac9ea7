"""A stop asked from another thread kills a running command at once.

ACP and `bosun mcp serve` run a turn in a worker thread and cancel it from their event
loop, where no Ctrl-C reaches the command's wait: the wait watches the run's Cancel.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from agent.history import ToolCall
from agent.loop.cancel import Cancel
from agent.tools import default_registry
from agent.tools.orchestrator import STOPPED_CALL, Gate, run_call
from agent.tools.shell import run_command

TOOLS = default_registry()


def _in_thread(work, stop: threading.Event, after: float):
    """Run `work` in a worker thread, set `stop` after `after` s; (result, seconds)."""
    out: dict[str, object] = {}

    def target() -> None:
        began = time.monotonic()
        out["result"] = work()
        out["s"] = time.monotonic() - began

    worker = threading.Thread(target=target)
    worker.start()
    time.sleep(after)
    stop.set()
    worker.join(20)
    assert not worker.is_alive(), "the command outlived the stop"
    return out["result"], out["s"]


def test_a_cancel_from_another_thread_stops_a_running_bash_call(tmp_path: Path) -> None:
    cancel = Cancel()
    call = ToolCall("c1", "bash", {"command": "sleep 8; touch late", "timeout": 60})
    outcome, seconds = _in_thread(
        lambda: run_call(call, TOOLS, tmp_path, Gate("auto"), stop=cancel), cancel, 0.5
    )
    assert outcome.interrupted and outcome.ran
    assert outcome.result.is_error and outcome.result.content == STOPPED_CALL
    assert seconds < 5
    time.sleep(0.2)
    assert not (tmp_path / "late").exists()  # the whole group died, not just the shell


def test_a_command_that_ends_before_the_stop_keeps_its_output(tmp_path: Path) -> None:
    stop = threading.Event()
    output, status = run_command("echo done", tmp_path, 10, None, stop)
    assert (output.strip(), status) == ("done", 0)


def test_without_a_stop_the_timeout_still_kills(tmp_path: Path) -> None:
    began = time.monotonic()
    _output, status = run_command("sleep 30", tmp_path, 1, None, threading.Event())
    assert status is None and time.monotonic() - began < 5


def test_the_agent_hands_its_cancel_to_a_running_command(tmp_path: Path) -> None:
    """The whole path: an Agent run in a worker thread (as ACP and mcp serve run one),
    its Cancel set from outside while bash sleeps: the run ends interrupted at once."""
    from tests.helpers import make_agent, tool_call

    agent, _, events = make_agent(
        [tool_call("bash", command="sleep 8; touch late", timeout=60), "never asked"], tmp_path
    )
    result, seconds = _in_thread(lambda: agent.run("sleep"), agent.cancel, 1.0)
    assert result.status == "interrupted" and seconds < 5
    stopped = [e for e in events if e.type == "tool_result"]
    assert stopped and stopped[0].content == STOPPED_CALL
