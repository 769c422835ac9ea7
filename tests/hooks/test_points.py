"""The hook points in a scripted run: PreToolUse blocks before the tool (and before any
approval), PostToolUse sees the result and adds to it, UserPromptSubmit blocks a request
or adds context, Stop sends the model back once, and every hook is a `hook` event."""

from __future__ import annotations

import json
from pathlib import Path

from agent.events import Status
from agent.tools.hooks import HookSpec
from tests.helpers import tool_call
from tests.hooks.helpers import hooked, ran, said, script


def test_a_pre_tool_use_hook_blocks_bash_and_the_model_reads_why(
    workspace: Path, tmp_path: Path
) -> None:
    block = script(tmp_path, "block", 'sys.stderr.write("no shell today"); sys.exit(2)')
    agent, driver, events = hooked(
        [tool_call("bash", command="touch marker"), "ok"],
        workspace,
        HookSpec("PreToolUse", block, matcher="bash"),
    )
    agent.gate.approve = "ask"  # nobody to ask: the hook comes first all the same
    result = agent.run("make a marker")
    assert not (workspace / "marker").exists()
    assert result.status == Status.DONE
    content = agent.history[-2].content  # the tool's result, then the model's "ok"
    assert content == "Error: not run; a PreToolUse hook blocked this call: no shell today"
    assert "no shell today" in driver.prompts[1]
    assert ran(events) == [("PreToolUse", "block")]


def test_a_json_deny_blocks_and_a_matcher_for_another_tool_does_not_run(
    workspace: Path, tmp_path: Path
) -> None:
    deny = script(
        tmp_path,
        "deny",
        'print(json.dumps({"hookSpecificOutput": {"permissionDecision": "deny",'
        ' "permissionDecisionReason": "read it elsewhere"}}))',
    )
    other = script(tmp_path, "other", "open(os.environ['MARK'], 'w').close()")
    agent, driver, _events = hooked(
        [tool_call("read_file", path="notes.txt"), "ok"],
        workspace,
        HookSpec("PreToolUse", "MARK=" + str(tmp_path / "other-ran") + " " + other, "Bash"),
        HookSpec("PreToolUse", deny, matcher="Read"),  # Claude Code's name for read_file
    )
    agent.run("read notes")
    assert "read it elsewhere" in agent.history[-2].content
    assert "hello from bosun" not in driver.prompts[1]
    assert not (tmp_path / "other-ran").exists()


def test_a_post_tool_use_hook_sees_the_result_and_adds_context(
    workspace: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.json"
    post = script(
        tmp_path,
        "post",
        f"open({str(seen)!r}, 'w').write(sys.stdin.read())\n"
        'print(json.dumps({"hookSpecificOutput": {"additionalContext": "lint: clean"}}))',
    )
    agent, driver, events = hooked(
        [tool_call("read_file", path="notes.txt"), "ok"],
        workspace,
        HookSpec("PostToolUse", post, matcher="read_file"),
    )
    agent.run("read notes")
    payload = json.loads(seen.read_text())
    assert payload["hook_event_name"] == "PostToolUse"
    assert payload["session_id"] == "session-1"
    assert payload["workspace"] == str(workspace)
    assert payload["tool_name"] == "read_file"
    assert payload["tool_input"] == {"path": "notes.txt"}
    assert "hello from bosun" in payload["tool_response"]["content"]
    assert payload["tool_response"]["is_error"] is False
    result = agent.history[-2]
    assert "hello from bosun" in result.content and result.content.endswith("lint: clean")
    assert "lint: clean" in driver.prompts[1]
    assert ran(events) == [("PostToolUse", "context")]


def test_a_post_tool_use_block_marks_the_result_an_error(workspace: Path, tmp_path: Path) -> None:
    post = script(
        tmp_path, "post", 'print(json.dumps({"decision": "block", "reason": "tests fail now"}))'
    )
    agent, _driver, _ = hooked(
        [tool_call("write_file", path="a.py", content="x = (\n"), "ok"],
        workspace,
        HookSpec("PostToolUse", post, matcher="Edit|Write"),
    )
    agent.run("write a.py")
    result = agent.history[-2]
    assert (workspace / "a.py").exists()  # it ran: PostToolUse comes after
    assert result.is_error and "tests fail now" in result.content


def test_a_user_prompt_submit_hook_blocks_the_request(workspace: Path, tmp_path: Path) -> None:
    block = script(tmp_path, "block", 'sys.stderr.write("no secrets in prompts"); sys.exit(2)')
    agent, driver, _events = hooked(["never asked"], workspace, HookSpec("UserPromptSubmit", block))
    result = agent.run("my password is hunter2")
    assert result.status == Status.REFUSED and result.exit_code == 4
    assert "no secrets in prompts" in (result.error or "")
    assert driver.prompts == []
    assert all("hunter2" not in getattr(m, "content", "") for m in agent.history)


def test_user_prompt_submit_and_session_start_add_context(workspace: Path, tmp_path: Path) -> None:
    start = script(tmp_path, "start", "print('branch: main')")  # plain stdout is context
    prompt = script(
        tmp_path,
        "prompt",
        "data = json.load(sys.stdin)\n"
        'print(json.dumps({"additionalContext": "you asked: " + data["prompt"]}))',
    )
    agent, driver, events = hooked(
        ["ok"], workspace, HookSpec("SessionStart", start), HookSpec("UserPromptSubmit", prompt)
    )
    assert agent.gate.hooks is not None
    agent.gate.hooks.start("session-1", "startup")
    agent.run("hello")
    assert "branch: main" in driver.prompts[0]
    assert "you asked: hello" in driver.prompts[0]
    assert ran(events) == [("SessionStart", "context"), ("UserPromptSubmit", "context")]


def test_a_stop_hook_sends_the_model_back_once(workspace: Path, tmp_path: Path) -> None:
    stop = script(
        tmp_path,
        "stop",
        "data = json.load(sys.stdin)\n"
        "if not data['stop_hook_active']:\n"
        '    print(json.dumps({"decision": "block", "reason": "run the tests too"}))',
    )
    agent, driver, events = hooked(["done?", "tests pass"], workspace, HookSpec("Stop", stop))
    result = agent.run("fix it")
    assert result.status == Status.DONE and result.final_text == "tests pass"
    assert "run the tests too" in driver.prompts[1]
    assert ran(events) == [("Stop", "block"), ("Stop", "allow")]


def test_a_stop_hook_that_always_blocks_is_bounded(workspace: Path, tmp_path: Path) -> None:
    stop = script(tmp_path, "stop", 'sys.stderr.write("again"); sys.exit(2)')
    agent, driver, _ = hooked([f"reply {i}" for i in range(4)], workspace, HookSpec("Stop", stop))
    result = agent.run("go")
    assert result.status == Status.DONE and len(driver.prompts) == 4  # 1 + MAX_STOP_BLOCKS


def test_an_odd_hook_is_said_and_the_call_runs(workspace: Path, tmp_path: Path) -> None:
    odd = script(tmp_path, "odd", 'sys.stderr.write("oops\\n"); sys.exit(3)')
    agent, _driver, events = hooked(
        [tool_call("bash", command="touch marker"), "ok"],
        workspace,
        HookSpec("PreToolUse", odd),
    )
    agent.run("make a marker")
    assert (workspace / "marker").exists()
    assert any("exited with code 3: oops" in line for line in said(events))
    assert ran(events) == [("PreToolUse", "error")]


def test_pre_compact_runs_once_a_compaction_is_due_with_its_trigger(
    workspace: Path, tmp_path: Path
) -> None:
    from agent.loop.compact import Compactor
    from agent.loop.context import Counter, Limits

    seen = tmp_path / "triggers"
    hook = script(
        tmp_path, "pre", f"open({str(seen)!r}, 'a').write(json.load(sys.stdin)['trigger'] + ' ')"
    )
    (workspace / "big.txt").write_text("word " * 3000)
    agent, driver, events = hooked(
        [tool_call("read_file", path="big.txt"), "ok"], workspace, HookSpec("PreCompact", hook)
    )
    agent.seat.compactor = Compactor(Limits(20000, source="test"), Counter(driver.info.tokenize))
    agent.run("read big.txt")
    assert not seen.exists()  # it fit: nothing was due
    agent.compact(force=True)
    assert seen.read_text() == "manual "
    agent.seat.compactor = Compactor(Limits(2000, source="test"), Counter(driver.info.tokenize))
    agent.compact()
    assert seen.read_text() == "manual auto "
    assert ran(events) == [("PreCompact", "allow")] * 2
