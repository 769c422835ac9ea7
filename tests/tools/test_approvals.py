"""Approval modes through the real loop: refusals are results, and nothing waits forever."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent.history import ToolCall, ToolResult
from agent.loop.runtime import AFTER_REDIRECT
from agent.tools import Tool, ToolContext
from agent.tools.permissions import Approval, Decline
from tests.helpers import make_agent, tool_call

WRITE = tool_call("write_file", path="new.txt", content="hi\n")
EDIT = tool_call("edit_file", path="notes.txt", old="hello", new="bye")
SHELL = tool_call("bash", command="touch ran.txt")
READ = tool_call("read_file", path="notes.txt")


def results(agent) -> list[ToolResult]:
    return [m for m in agent.history if isinstance(m, ToolResult)]


def untouched(workspace: Path) -> bool:
    return (
        not (workspace / "new.txt").exists()
        and not (workspace / "ran.txt").exists()
        and (workspace / "notes.txt").read_text() == "hello from bosun\n"
    )


def test_read_only_refuses_write_edit_and_shell(workspace: Path) -> None:
    agent, driver, _ = make_agent(
        [WRITE, EDIT, SHELL, READ, "done"], workspace, approve="read-only"
    )
    assert agent.run("try everything").status == "done"
    driver.assert_complete()
    write, edit, shell, read = results(agent)
    for refused, name in [(write, "write_file"), (edit, "edit_file"), (shell, "bash")]:
        assert refused.is_error
        assert refused.content == f"Error: {name} is not allowed in read-only mode"
    assert not read.is_error
    assert untouched(workspace)


def test_ask_without_anyone_to_ask_refuses_instead_of_hanging(workspace: Path) -> None:
    agent, driver, _ = make_agent([WRITE, SHELL, READ, "done"], workspace, approve="ask")
    assert agent.approver is None
    assert agent.run("write").status == "done"
    driver.assert_complete()
    write, shell, read = results(agent)
    for refused in (write, shell):
        assert refused.is_error and "needs approval and nobody can approve here" in refused.content
        assert "--approve auto" in refused.content
    assert not read.is_error and untouched(workspace)


def test_ask_with_no_declines_and_shows_a_diff_first(workspace: Path) -> None:
    agent, _, _ = make_agent([EDIT, "ok"], workspace, approve="ask")
    seen: list[tuple[str, str | None]] = []

    def approver(call: ToolCall, tool: Tool) -> Approval:
        seen.append((call.name, agent.tools.preview(call, ToolContext(workspace))))
        return "no"

    agent.approver = approver
    assert agent.run("edit").status == "declined"  # a "no" ends the turn: "ok" is unused
    [(name, diff)] = seen
    assert name == "edit_file" and diff is not None and "+bye from bosun" in diff
    [declined] = results(agent)
    assert declined.is_error and declined.content == "Error: the user declined this call"
    assert agent.state.turns == 1
    assert untouched(workspace)


def test_a_decline_with_a_reason_carries_on_with_the_reason(workspace: Path) -> None:
    both = WRITE + "\n" + READ  # one reply, two calls
    agent, driver, _ = make_agent([both, "then I will read instead"], workspace, approve="ask")
    agent.approver = lambda call, tool: Decline("  read  notes.txt\nfirst ")
    result = agent.run("write")  # at once: no second message needed
    assert result.status == "done" and result.final_text == "then I will read instead"
    declined, skipped = results(agent)
    assert declined.content == (
        "Error: the user declined this call; instead, they said: read notes.txt first"
    )
    assert skipped.content == AFTER_REDIRECT and untouched(workspace)
    driver.assert_complete()
    assert "read notes.txt first" in driver.prompts[-1]


def test_ask_with_always_asks_once_per_tool(workspace: Path) -> None:
    second = tool_call("write_file", path="two.txt", content="2\n")
    agent, _, _ = make_agent([WRITE, second, SHELL, "done"], workspace, approve="ask")
    asked: list[str] = []

    def approver(call: ToolCall, tool: Tool) -> Approval:
        asked.append(call.name)
        return "always" if tool.kind == "write" else "no"

    agent.approver = approver
    agent.run("write twice")
    assert asked == ["write_file", "bash"]
    assert (workspace / "new.txt").exists() and (workspace / "two.txt").exists()
    assert not (workspace / "ran.txt").exists()


def test_auto_edit_writes_without_asking_but_shell_still_asks(workspace: Path) -> None:
    agent, _, _ = make_agent([WRITE, SHELL, "done"], workspace, approve="auto-edit")
    agent.run("go")
    write, shell = results(agent)
    assert not write.is_error and (workspace / "new.txt").read_text() == "hi\n"
    assert shell.is_error and "needs approval" in shell.content
    assert not (workspace / "ran.txt").exists()


def test_auto_runs_everything(workspace: Path) -> None:
    agent, _, _ = make_agent([WRITE, SHELL, "done"], workspace, approve="auto")
    agent.run("go")
    assert not any(r.is_error for r in results(agent))
    assert (workspace / "ran.txt").exists()


def test_bosun_run_without_a_tty_refuses_instead_of_asking(
    workspace: Path, script_file, tmp_path: Path
) -> None:
    script = script_file(WRITE, "gave up")
    env = {k: v for k, v in os.environ.items() if k != "BOSUN_DEBUG"}
    cmd = [sys.executable, "-m", "agent", "run", "write a file", "--output", "jsonl"]
    cmd += ["--model", f"scripted:{script}", "--workspace", str(workspace), "--approve", "ask"]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env, timeout=60
    )
    assert proc.returncode == 4, proc.stderr  # nothing was allowed: a script can tell
    assert "needs approval and nobody can approve here" in proc.stdout
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["status"] == "refused" and "approval" in result["error"]
    assert untouched(workspace)


def test_a_run_where_some_calls_ran_is_done_not_refused(workspace: Path) -> None:
    agent, _, _ = make_agent([WRITE, READ, "done"], workspace, approve="read-only")
    assert agent.run("go").status == "done"
    agent, _, _ = make_agent([WRITE, SHELL, "gave up"], workspace, approve="read-only")
    assert agent.run("go").status == "refused"


def test_a_call_known_to_fail_or_change_nothing_is_not_asked_about(workspace: Path) -> None:
    (workspace / "three.txt").write_text("x\nx\nx\n")
    ambiguous = tool_call("edit_file", path="three.txt", old="x", new="y")
    same = tool_call("write_file", path="notes.txt", content="hello from bosun\n")
    agent, driver, _ = make_agent([ambiguous, same, "gave up"], workspace, approve="ask")
    asked: list[str] = []

    def approver(call: ToolCall, tool: Tool) -> Approval:
        asked.append(call.name)
        return "yes"

    agent.approver = approver
    assert agent.run("edit").status == "done"
    driver.assert_complete()
    assert asked == []  # no question whose answer could not matter
    failed, unchanged = results(agent)
    assert failed.is_error and "3 times" in failed.content
    assert unchanged.is_error and "would leave the file exactly as it is" in unchanged.content
    assert (workspace / "three.txt").read_text() == "x\nx\nx\n" and untouched(workspace)


def test_refusals_name_only_the_modes_that_would_let_the_call_run(workspace: Path) -> None:
    from agent.tools.permissions import how_to_allow

    sandboxed = how_to_allow("ask", "shell", sandboxed=True)
    assert sandboxed.count("--approve auto-edit") == 1 and sandboxed.count("--approve auto") == 2
    bare = how_to_allow("ask", "shell", sandboxed=False)
    assert "sandbox" in bare and "--sandbox on" in bare
    # read-only: a run whose every call was refused talks of the mode, not of approvals
    agent, _, _ = make_agent([SHELL, WRITE, "I can only read."], workspace, approve="read-only")
    result = agent.run("summarise this")
    assert result.status == "refused" and result.exit_code == 4
    assert result.error is not None and "read-only mode" in result.error
    assert "approval" not in result.error
    agent, _, _ = make_agent([SHELL, "ok"], workspace, approve="ask")
    result = agent.run("run it")
    assert result.error == "every tool call needed an approval nobody could give"
