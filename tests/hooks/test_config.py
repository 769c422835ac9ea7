"""Hooks from config files: bosun's [[hooks.EVENT]] tables (strict), Claude Code's
nested shape in them and in a workspace's .claude/settings.json (its events and hook
types bosun lacks are skipped with a warning), and matchers with Claude Code's
semantics, its tool names included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.errors import UsageError
from agent.run.config import load_config
from agent.tools.hooks import HookSpec, parse_hooks


def _user(bosun_home: Path, text: str) -> None:
    (bosun_home / "config.toml").write_text(text, encoding="utf-8")


def test_user_workspace_and_claude_hooks_all_load_in_order(
    bosun_home: Path, workspace: Path
) -> None:
    _user(bosun_home, '[[hooks.PreToolUse]]\nmatcher = "bash"\ncommand = "mine"\ntimeout = 5\n')
    (workspace / ".bosun.toml").write_text(
        '[[hooks.PostToolUse]]\ncommand = "theirs"\n'
        '[[hooks.Stop]]\nhooks = [{type = "command", command = "nested"}]\n'
    )
    (workspace / ".claude").mkdir()
    settings = {
        "permissions": {"allow": ["Bash(ls)"]},  # Claude Code's own: not bosun's business
        "hooks": {
            "PreToolUse": [
                {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "fmt"}]}
            ]
        },
    }
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))
    hooks = load_config(workspace).hooks
    assert [(h.event, h.command, h.origin) for h in hooks] == [
        ("PreToolUse", "mine", "user"),
        ("PostToolUse", "theirs", "workspace"),
        ("Stop", "nested", "workspace"),
        ("PreToolUse", "fmt", "workspace"),
    ]
    assert hooks[0].timeout == 5.0 and hooks[1].timeout == 60.0
    assert hooks[3].source.endswith(".claude/settings.json")


def test_claude_events_and_types_bosun_lacks_are_skipped_with_a_warning(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / ".claude").mkdir()
    hooks = {
        "Notification": [{"hooks": [{"type": "command", "command": "notify"}]}],
        "Stop": [{"hooks": [{"type": "prompt", "prompt": "check"}, {"command": "kept"}]}],
    }
    (workspace / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    assert [h.command for h in load_config(workspace).hooks] == ["kept"]
    err = capsys.readouterr().err
    assert "hooks.Notification: bosun has no such event; skipped" in err
    assert "hook type 'prompt' is not one bosun runs" in err


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[[hooks.OnSave]]\ncommand = "x"\n', "unknown event"),
        ('[[hooks.PreToolUse]]\ncommand = "x"\nmatcher = "("\n', "not a valid pattern"),
        ('[[hooks.PreToolUse]]\ncommand = "x"\ntimeout = 0\n', "timeout must be"),
        ('[[hooks.PreToolUse]]\ncommand = "x"\ntimeout = true\n', "timeout must be"),
        ('[[hooks.PreToolUse]]\ncommand = ""\n', "command must be a non-empty string"),
        ('[[hooks.PreToolUse]]\nmatcher = "bash"\n', "exactly one of command"),
        ('[[hooks.PreToolUse]]\ncommand = "x"\nwhen = "always"\n', "unknown setting 'when'"),
        ('hooks = "x"\n', "hooks must be a table"),
        ("[hooks]\nPreToolUse = 3\n", "must be a list of tables"),
    ],
)
def test_a_bad_hook_table_is_a_usage_error_naming_the_file(
    bosun_home: Path, text: str, said: str
) -> None:
    _user(bosun_home, text)
    with pytest.raises(UsageError, match=said) as err:
        load_config(None)
    assert "config.toml" in str(err.value)


@pytest.mark.parametrize(
    "content", ["{not json", "[1]", "[" * 10000, '{"hooks": {"Stop": [{"command": 1}]}}']
)
def test_a_broken_claude_settings_file_is_one_usage_error(workspace: Path, content: str) -> None:
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(content)
    with pytest.raises(UsageError, match=r"settings\.json"):
        load_config(workspace)


def test_a_claude_settings_fifo_is_refused_not_waited_on(workspace: Path) -> None:
    import os

    (workspace / ".claude").mkdir()
    os.mkfifo(workspace / ".claude" / "settings.json")
    with pytest.raises(UsageError, match="not a regular file"):
        load_config(workspace)


@pytest.mark.parametrize(
    ("matcher", "tool", "hit"),
    [
        ("", "bash", True),
        ("*", "anything", True),
        ("bash", "bash", True),
        ("bash", "bash_extra", False),  # exact, not a prefix
        ("Bash", "bash", True),  # Claude Code's name
        ("Edit|Write", "edit_file", True),
        ("Edit|Write", "write_file", True),
        ("Edit|Write", "apply_patch", True),
        ("Edit|Write", "read_file", False),
        ("Read", "read_file", True),
        ("mcp__.*", "mcp__git__status", True),
        ("git__.*", "git__git_status", True),
    ],
)
def test_matchers_follow_claude_code(matcher: str, tool: str, hit: bool) -> None:
    assert HookSpec("PreToolUse", "x", matcher).matches(tool) is hit


def test_parse_hooks_without_skip_refuses_an_unknown_type() -> None:
    with pytest.raises(UsageError, match="hook type 'agent'"):
        parse_hooks({"Stop": [{"hooks": [{"type": "agent"}]}]}, "f.toml", "user")
