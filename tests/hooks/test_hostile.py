"""Hooks that misbehave: one that hangs is killed at its time limit with what it
started, one that floods is cut at 64 kB, odd exits and invalid JSON are one diagnostic
each, and none of it stops the request or leaves a process behind."""

from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path

from agent.tools.hooks import HookSpec
from agent.tools.hooks.runner import MAX_OUTPUT, run_hook
from tests.helpers import tool_call
from tests.hooks.helpers import hooked, ran, said, script


def _alive(tag: str) -> list[int]:
    """Processes whose command line carries `tag`."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                    if tag.encode() in fh.read():
                        found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_hanging_hook_is_killed_at_its_timeout_with_what_it_started(
    workspace: Path, tmp_path: Path
) -> None:
    tag = secrets.token_hex(6)
    # a child in the background holding the pipes, and one that left the group
    hang = f"bash -c 'exec -a x{tag} sleep 300' & setsid bash -c 'exec -a y{tag} sleep 300' & " + (
        "sleep 300"
    )
    agent, _driver, events = hooked(
        [tool_call("bash", command="touch marker"), "ok"],
        workspace,
        HookSpec("PreToolUse", hang, timeout=0.5),
    )
    started = time.monotonic()
    result = agent.run("make a marker")
    assert time.monotonic() - started < 10
    assert (workspace / "marker").exists()  # the request went on
    assert result.status == "done"
    assert any("timed out after 0.5 s and was killed" in line for line in said(events))
    assert ran(events) == [("PreToolUse", "timeout")]
    deadline = time.monotonic() + 3
    while _alive(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive(tag) == []


def test_a_flood_is_cut_at_64_kb(workspace: Path, tmp_path: Path) -> None:
    flood = script(
        tmp_path,
        "flood",
        "for _ in range(200):\n    sys.stdout.write('x' * 65536); sys.stderr.write('y' * 65536)\n",
    )
    ran_ = run_hook(flood, b"{}", workspace, 30, {})
    assert ran_.status == 0 and ran_.cut
    assert len(ran_.stdout) == MAX_OUTPUT and len(ran_.stderr) == MAX_OUTPUT
    agent, _driver, events = hooked(
        [tool_call("read_file", path="notes.txt"), "ok"],
        workspace,
        HookSpec("PostToolUse", flood),
    )
    agent.run("read")
    assert any("wrote more than 64 kB" in line for line in said(events))
    assert "hello from bosun" in agent.history[-2].content


def test_an_exit_2_flood_reaches_the_model_clipped(workspace: Path, tmp_path: Path) -> None:
    flood = script(tmp_path, "flood", "sys.stderr.write('why ' * 100000); sys.exit(2)")
    agent, _driver, _ = hooked(
        [tool_call("bash", command="true"), "ok"], workspace, HookSpec("PreToolUse", flood)
    )
    agent.run("go")
    content = agent.history[-2].content
    assert len(content) < 9000 and "more characters]" in content


def test_a_signal_an_odd_code_invalid_json_and_a_missing_command(
    workspace: Path, tmp_path: Path
) -> None:
    killed = script(tmp_path, "killed", "import signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    specs = [
        HookSpec("PreToolUse", killed),
        HookSpec("PreToolUse", "exit 7"),
        HookSpec("PreToolUse", 'echo \'{"decision": "block", \''),  # invalid JSON
        HookSpec("PreToolUse", "echo '\"a string\"' '{'"),  # not JSON: plain text
        HookSpec("PreToolUse", "echo '{}' '[1, 2]'"),  # JSON, not one object
        HookSpec("PreToolUse", "no-such-hook-command-here"),
        HookSpec("PreToolUse", "echo '" + "[" * 5000 + "'"),  # plain text, however deep
    ]
    agent, _driver, events = hooked(
        [tool_call("bash", command="touch marker"), "ok"], workspace, *specs
    )
    agent.run("make a marker")
    assert (workspace / "marker").exists()
    lines = said(events)
    assert any(f"killed by signal {int(signal.SIGSEGV)}" in line for line in lines)
    assert any("exited with code 7" in line for line in lines)
    assert any("wrote invalid JSON" in line for line in lines)
    assert any("exited with code 127" in line for line in lines)
    decisions = [d for _, d in ran(events)]
    assert decisions == ["error", "error", "error", "allow", "error", "error", "allow"]


def test_deep_json_is_refused_not_recursed(workspace: Path, tmp_path: Path) -> None:
    deep = HookSpec(
        "PreToolUse",
        "printf '{\"a\": %s1%s}' $(printf '[%.0s' {1..5000}) $(printf ']%.0s' {1..5000})",
    )
    agent, _driver, events = hooked([tool_call("bash", command="true"), "ok"], workspace, deep)
    agent.run("go")
    assert any("wrote invalid JSON" in line for line in said(events))


def test_a_hook_that_never_reads_a_big_payload_does_not_block(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "big.txt").write_text("z" * 3_000_000)
    agent, _driver, events = hooked(
        [tool_call("read_file", path="big.txt"), "ok"],
        workspace,
        HookSpec("PostToolUse", "sleep 0.2", timeout=20),
    )
    started = time.monotonic()
    agent.run("read")
    assert time.monotonic() - started < 15
    assert ran(events) == [("PostToolUse", "allow")]


def test_a_hook_runs_in_the_workspace_with_its_variables(workspace: Path, tmp_path: Path) -> None:
    out = tmp_path / "env.txt"
    hook = f'echo "$PWD|$BOSUN_WORKSPACE|$CLAUDE_PROJECT_DIR|$BOSUN_HOOK_EVENT" > {out}'
    agent, _, _ = hooked(["ok"], workspace, HookSpec("UserPromptSubmit", hook))
    agent.run("hi")
    ws = str(workspace)
    assert out.read_text().strip() == f"{ws}|{ws}|{ws}|UserPromptSubmit"
