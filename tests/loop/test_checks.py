"""The lint/test loop on the scripted driver: lint after edits, tests at the end of a
request, failures fed back to the model a bounded number of times."""

from __future__ import annotations

import time
from pathlib import Path

from agent import events as ev
from agent.history import ToolResult, User
from agent.loop.checks import LINT_SAID, Checks
from agent.tools.checks import FEEDBACK_BYTES, CheckCmd
from agent.tools.orchestrator import Gate
from tests.helpers import make_agent, tool_call

BROKEN = "def add(a, b):\n    return (a + b\n"
GOOD = "def add(a, b):\n    return a + b\n"


def results(agent_history: list) -> list[ToolResult]:
    return [m for m in agent_history if isinstance(m, ToolResult)]


def of_type(events: list[ev.AgentEvent], kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


def test_broken_syntax_gets_the_compile_error_in_its_result(workspace: Path) -> None:
    agent, driver, events = make_agent(
        [
            tool_call("write_file", path="calc.py", content=BROKEN),
            tool_call("write_file", path="calc.py", content=GOOD),
            "Fixed.",
        ],
        workspace,
    )
    agent.checks = Checks(auto_lint=True)
    result = agent.run("write calc.py")
    driver.assert_complete()
    assert result.status == "done"
    broken, good = results(agent.history)
    assert not broken.is_error
    assert LINT_SAID in broken.content
    assert "calc.py:2:" in broken.content and "SyntaxError" in broken.content
    assert "was never closed" in broken.content
    # a good edit: its result exactly as without the linter, no noise
    assert LINT_SAID not in good.content and "SyntaxError" not in good.content
    lints = of_type(events, ev.LintRun)
    assert [(e.files, e.ok) for e in lints] == [(["calc.py"], False), (["calc.py"], True)]


def test_without_auto_lint_nothing_is_appended(workspace: Path) -> None:
    agent, _driver, events = make_agent(
        [tool_call("write_file", path="calc.py", content=BROKEN), "Done."], workspace
    )
    agent.checks = Checks(auto_lint=False)
    agent.run("write calc.py")
    assert LINT_SAID not in results(agent.history)[0].content
    assert not of_type(events, ev.LintRun)


def test_lint_cmd_by_extension_gets_the_files(workspace: Path) -> None:
    (workspace / "lint.sh").write_text('echo "E999 bad style in $*"; exit 1\n')
    agent, _driver, events = make_agent(
        [
            tool_call("write_file", path="a.py", content=GOOD),
            tool_call("write_file", path="b.txt", content="text\n"),
            "Done.",
        ],
        workspace,
    )
    agent.checks = Checks(lint_cmd=(CheckCmd("sh lint.sh {files}", ext="py"),), auto_lint=True)
    agent.run("write files")
    first, second = results(agent.history)
    assert "E999 bad style in a.py" in first.content
    assert LINT_SAID not in second.content  # no linter for .txt: not linted, no event
    assert [e.files for e in of_type(events, ev.LintRun)] == [["a.py"]]


def test_missing_lint_cmd_is_said_to_the_user_and_the_run_goes_on(workspace: Path) -> None:
    agent, driver, events = make_agent(
        [
            tool_call("write_file", path="a.py", content=BROKEN),
            tool_call("write_file", path="a.py", content=GOOD),
            "Done.",
        ],
        workspace,
    )
    agent.checks = Checks(lint_cmd=(CheckCmd("no-such-linter-xyz"),), auto_lint=True)
    result = agent.run("write a.py")
    driver.assert_complete()
    assert result.status == "done"
    notices = [e.message for e in of_type(events, ev.Diagnostic)]
    assert len(notices) == 1  # said once, not after every edit
    assert "no-such-linter-xyz" in notices[0] and "not found" in notices[0]
    broken, good = results(agent.history)
    assert "no-such-linter-xyz" not in broken.content  # the model cannot fix a config
    assert "SyntaxError" in broken.content  # Python's own check stood in for it
    assert LINT_SAID not in good.content


FIX_TEST = "grep -q 'a + b' calc.py || { echo 'FAIL: add(1, 2) returned -1'; exit 1; }"


def test_failure_fed_back_once_then_passing(workspace: Path) -> None:
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    agent, driver, events = make_agent(
        [
            tool_call("edit_file", path="calc.py", old="return", new="return  "),
            "Done.",
            tool_call("edit_file", path="calc.py", old="a - b", new="a + b"),
            "Fixed the sign.",
        ],
        workspace,
    )
    agent.checks = Checks(test_cmd=CheckCmd(FIX_TEST), auto_test=True)
    result = agent.run("tidy calc.py")
    driver.assert_complete()
    assert result.status == "done" and result.final_text == "Fixed the sign."
    tests = of_type(events, ev.TestRun)
    assert [(t.ok, t.round) for t in tests] == [(False, 1), (True, 2)]
    fed = [m for m in agent.history if isinstance(m, User)][-1]
    assert fed.content.startswith("The tests (`grep")
    assert "FAIL: add(1, 2) returned -1" in fed.content
    assert tests[0].output == "FAIL: add(1, 2) returned -1"


def test_no_edit_no_test(workspace: Path) -> None:
    marker = workspace / "ran"
    agent, _driver, events = make_agent(["Nothing to change."], workspace)
    agent.checks = Checks(test_cmd=CheckCmd(f"touch {marker}"), auto_test=True)
    agent.run("look around")
    assert not marker.exists() and not of_type(events, ev.TestRun)


def test_rounds_are_bounded(workspace: Path) -> None:
    agent, driver, events = make_agent(
        [
            tool_call("write_file", path="x.txt", content="1"),
            "Done.",
            tool_call("write_file", path="x.txt", content="2"),
            "Done again.",
        ],
        workspace,
    )
    agent.checks = Checks(test_cmd=CheckCmd("echo never; exit 1"), auto_test=True, test_rounds=1)
    result = agent.run("go")
    driver.assert_complete()  # no third model call: one feedback, then over to the user
    assert result.status == "done"
    assert [t.round for t in of_type(events, ev.TestRun)] == [1, 2]
    fed = [m for m in agent.history if isinstance(m, User) and m.content.startswith("The tests")]
    assert len(fed) == 1
    assert any("still fail after 1 rounds" in e.message for e in of_type(events, ev.Diagnostic))


def test_a_hanging_test_is_killed_at_its_time_limit(workspace: Path) -> None:
    agent, _driver, events = make_agent(
        [tool_call("write_file", path="x.txt", content="1"), "Done."], workspace
    )
    agent.checks = Checks(
        test_cmd=CheckCmd("echo started; sleep 60"), auto_test=True, test_rounds=0, test_timeout=1
    )
    start = time.monotonic()
    result = agent.run("go")
    assert time.monotonic() - start < 15
    assert result.status == "done"
    (test,) = of_type(events, ev.TestRun)
    assert not test.ok and "started" in test.output


def test_flooding_output_is_bounded_for_the_model(workspace: Path) -> None:
    agent, _driver, _events = make_agent(
        [tool_call("write_file", path="x.txt", content="1"), "Done.", "Gave up."], workspace
    )
    flood = "yes 'spam spam spam' | head -c 3000000; echo THE-END; exit 1"
    agent.checks = Checks(test_cmd=CheckCmd(flood), auto_test=True, test_rounds=1)
    agent.run("go")
    fed = [m for m in agent.history if isinstance(m, User) and m.content.startswith("The tests")]
    assert len(fed) == 1
    assert len(fed[0].content.encode()) < FEEDBACK_BYTES + 400
    assert "THE-END" in fed[0].content and "bytes cut" in fed[0].content


def test_a_workspace_command_runs_only_where_bash_would_run_unasked(workspace: Path) -> None:
    marker = workspace / "ran"
    steps = [tool_call("write_file", path="x.txt", content="1"), "Done."]
    cmd = CheckCmd(f"touch {marker}", origin="workspace")
    agent, _, events = make_agent(steps, workspace, approve="auto-edit")  # no sandbox here
    agent.checks = Checks(test_cmd=cmd, auto_test=True)
    agent.run("go")
    assert not marker.exists()
    notes = [e.message for e in of_type(events, ev.Diagnostic)]
    assert any("comes from the workspace's .bosun.toml" in n for n in notes)
    agent, _, events = make_agent(steps, workspace, approve="auto")
    agent.checks = Checks(test_cmd=cmd, auto_test=True)
    agent.run("go")
    assert marker.exists()


def test_the_user_s_command_runs_in_the_sandbox_policy_given(workspace: Path) -> None:
    """No sandbox policy (None) means as the user; the gate's policy is what is used."""
    agent, _, events = make_agent(
        [tool_call("write_file", path="x.txt", content="1"), "Done."], workspace
    )
    agent.gate = Gate("auto", None, None)
    agent.checks = Checks(test_cmd=CheckCmd("pwd"), auto_test=True)
    agent.run("go")
    (test,) = of_type(events, ev.TestRun)
    assert test.ok and test.output == str(workspace)


def test_the_builtin_check_survives_hostile_files(workspace: Path) -> None:
    import os

    from agent.tools.lint import MAX_COMPILE_BYTES, python_check

    (workspace / "deep.py").write_text("x = " + "(" * 5000 + ")" * 5000 + "\n")
    assert "deep.py" in (python_check(workspace, "deep.py") or "")
    (workspace / "sum.py").write_text("x = " + "+".join(["1"] * 200_000) + "\n")
    python_check(workspace, "sum.py")  # a verdict or None; never a RecursionError
    (workspace / "nul.py").write_bytes(b"x = 1\x00\n")
    assert "nul.py" in (python_check(workspace, "nul.py") or "")
    os.mkfifo(workspace / "fifo.py")
    assert python_check(workspace, "fifo.py") is None  # not waited on
    (workspace / "big.py").write_text("(" + " " * MAX_COMPILE_BYTES)
    assert python_check(workspace, "big.py") is None  # too big to check: skipped
    (workspace / "warn.py").write_text('import re\nre.compile("\\d")\n')
    assert python_check(workspace, "warn.py") is None  # a SyntaxWarning is not an error
    os.symlink("/etc/passwd", workspace / "out.py")
    assert python_check(workspace, "out.py") is None  # a link out is not read
