"""`bosun run` with hooks: the user's run unasked; the workspace's (.bosun.toml,
.claude/settings.json) run headless only with --allow-workspace-hooks or an approval
given before, which a rewritten hook script voids; `hook` events in JSONL; `bosun
config` lists them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent.mcp.session import approvals
from agent.run.config import load_config
from agent.run.hooks import WorkspaceHooks
from tests.helpers import tool_call


def bosun(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BOSUN_DEBUG"}
    cmd = [sys.executable, "-m", "agent", *args, "--workspace", str(workspace)]
    return subprocess.run(
        cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env, timeout=120
    )


def run(workspace: Path, script: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return bosun(
        workspace,
        "run",
        "go",
        "--output",
        "jsonl",
        "--model",
        f"scripted:{script}",
        "--approve",
        "auto",
        *flags,
    )


def events(stdout: str, kind: str) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return [e for e in lines if e["type"] == kind]


HOOK_SCRIPT = 'echo ran >> "$1"\n'  # sh: a workspace hook runs in the sandbox, without ~


def _workspace_hook(workspace: Path) -> Path:
    """A PreToolUse hook the workspace names, by a script inside it; it leaves a mark."""
    (workspace / "hooks").mkdir()
    (workspace / "hooks" / "mark.sh").write_text(HOOK_SCRIPT)
    mark = workspace / "hook-ran"  # inside: a workspace hook runs in the sandbox
    (workspace / ".bosun.toml").write_text(
        f"[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = 'sh hooks/mark.sh {mark}'\n"
    )
    return mark


def test_an_untrusted_workspace_hook_does_not_run_headless(workspace: Path, script_file) -> None:
    mark = _workspace_hook(workspace)
    script = script_file(tool_call("bash", command="echo hi"), "done")
    refused = run(workspace, script)
    assert refused.returncode == 0, refused.stderr
    assert not mark.exists()
    assert "1 hook named by the workspace" in refused.stderr
    assert "--allow-workspace-hooks" in refused.stderr
    assert events(refused.stdout, "hook") == []
    allowed = run(workspace, script, "--allow-workspace-hooks")
    assert mark.read_text() == "ran\n"
    hook = events(allowed.stdout, "hook")
    assert [(h["event"], h["decision"], h["tool"]) for h in hook] == [
        ("PreToolUse", "allow", "bash")
    ]
    assert set(hook[0]) == {"type", "name", "event", "decision", "ms", "tool"}


def test_an_approval_is_remembered_until_the_hook_script_changes(
    workspace: Path, script_file
) -> None:
    mark = _workspace_hook(workspace)
    script = script_file(tool_call("bash", command="echo hi"), "done")
    theirs = tuple(h for h in load_config(workspace).hooks if h.origin == "workspace")
    approvals().allow(workspace.resolve(), WorkspaceHooks(theirs, workspace.resolve()))
    run(workspace, script)
    assert mark.read_text() == "ran\n"  # approved (as in chat): no flag needed
    (workspace / "hooks" / "mark.sh").write_text(HOOK_SCRIPT + "# rewritten by the model\n")
    changed = run(workspace, script)
    assert mark.read_text() == "ran\n"  # not again
    assert "hooks/mark.sh" in changed.stderr and "changed since you approved" in changed.stderr


def test_a_claude_settings_hook_blocks_bash_in_a_run(workspace: Path, script_file) -> None:
    (workspace / ".claude").mkdir()
    block = {"type": "command", "command": "echo 'use the tests instead' >&2; exit 2"}
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [block]}]}}
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))
    script = script_file(tool_call("bash", command="touch marker"), "done")
    proc = run(workspace, script, "--allow-workspace-hooks")
    assert proc.returncode == 0, proc.stderr
    assert not (workspace / "marker").exists()
    result = events(proc.stdout, "tool_result")[0]
    assert result["is_error"] and "use the tests instead" in str(result["content"])
    assert [h["decision"] for h in events(proc.stdout, "hook")] == ["block"]


def test_the_users_own_hooks_run_unasked_and_a_blocked_prompt_exits_4(
    bosun_home: Path, workspace: Path, script_file
) -> None:
    (bosun_home / "config.toml").write_text(
        "[[hooks.UserPromptSubmit]]\ncommand = \"echo 'not today' >&2; exit 2\"\n"
    )
    proc = run(workspace, script_file("never sent"))
    assert proc.returncode == 4
    result = events(proc.stdout, "result")[0]
    assert result["status"] == "refused" and "not today" in str(result["error"])
    assert "Traceback" not in proc.stderr


def test_bosun_config_lists_hooks_with_their_trust(bosun_home: Path, workspace: Path) -> None:
    (bosun_home / "config.toml").write_text('[[hooks.Stop]]\ncommand = "notify-send done"\n')
    _workspace_hook(workspace)
    proc = bosun(workspace, "config")
    assert proc.returncode == 0, proc.stderr
    assert "hooks:" in proc.stdout and "notify-send done" in proc.stdout
    assert "PreToolUse [bash]" in proc.stdout
    assert "not approved: runs with --allow-workspace-hooks" in proc.stdout
    data = json.loads(bosun(workspace, "config", "--json").stdout)
    assert [(h["event"], h["origin"], h["approved"]) for h in data["hooks"]] == [
        ("Stop", "user", True),
        ("PreToolUse", "workspace", False),
    ]
    assert all(s["name"] != "hooks" for s in data["settings"])
