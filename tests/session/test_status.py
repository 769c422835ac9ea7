"""One owner for how a request ends: `Status`, its exit code, and the `result` event."""

from __future__ import annotations

import json

from agent import events as ev
from agent.events import Status
from agent.loop.budget import Budget
from drivers.base import Usage


def test_every_status_has_its_exit_code() -> None:
    codes = {status: status.exit_code for status in Status}
    assert codes == {
        Status.DONE: 0,
        Status.ERROR: 1,
        Status.MAX_TURNS: 3,
        Status.STUCK: 3,
        Status.DECLINED: 4,
        Status.REFUSED: 4,
        Status.INTERRUPTED: 130,
    }


def test_a_result_is_written_with_a_plain_status() -> None:
    result = ev.RunFinished.of(Status.STUCK, error="again and again")
    line = json.dumps(result.to_dict())
    assert json.loads(line)["status"] == "stuck" and '"Status.' not in line
    assert result.exit_code == 3


def test_a_result_counts_what_the_request_did() -> None:
    class Counts:
        turns, tool_calls, usage = 2, 1, Usage(10, 4, 3)

    result = ev.RunFinished.of(Status.DONE, Counts(), 5, "ok")
    assert (result.turns, result.tool_calls, result.prompt_tokens) == (2, 1, 10)
    assert (result.cached_tokens, result.completion_tokens, result.final_text) == (4, 3, "ok")


def test_budgets_answer_with_statuses() -> None:
    budget = Budget(max_turns=1)
    stopped = budget.exceeded(1, 0, [], 0)
    assert stopped is not None and stopped[0] is Status.MAX_TURNS
    stuck = Budget().exceeded(0, 0, ["a"] * 3, 0)
    assert stuck is not None and stuck[0] is Status.STUCK
