"""The sandbox's shape beyond the escapes: where the workspace sits relative to the home
folder, folders shown read-only, a worktree's `.git` pointer, the process limit for a
normal user, and what happens where bubblewrap cannot run."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from agent.errors import UsageError
from agent.history import ToolCall, ToolResult
from agent.tools import ToolContext, default_registry
from agent.tools.sandbox import SandboxPolicy, bwrap_argv, probe, resolve_sandbox
from tests.tools.sandbox.conftest import FORKS, NOTE, under_ci

SECRET = "bosun-layout-secret"


def bash(workspace: Path, policy: SandboxPolicy, command: str) -> ToolResult:
    call = ToolCall("t1", "bash", {"command": command})
    return default_registry().execute(call, ToolContext(workspace, policy))


def test_under_ci_bubblewrap_runs() -> None:
    found = probe()
    if under_ci():
        assert not isinstance(found, str), f"CI must be able to run bubblewrap: {found}"


def test_a_workspace_in_the_home_folder_is_all_that_shows_of_it(
    policy: SandboxPolicy, fake_home: Path
) -> None:
    home = fake_home
    project = home / "src" / "proj"
    project.mkdir(parents=True)
    (home / ".netrc").write_text(SECRET)
    (project / "code.py").write_text("print('hi')\n")
    result = bash(project, policy, "cat code.py; echo ok > out.txt; ls -A ~; cat ~/.netrc")
    shown, listing, missing = result.content.splitlines()[:3]
    assert shown == "print('hi')" and listing == "src"  # the way to the workspace, no more
    assert missing.endswith(".netrc: No such file or directory") and SECRET not in result.content
    assert (project / "out.txt").read_text() == "ok\n"
    assert "the home folder is hidden" in result.content


def test_a_home_folder_inside_the_workspace_is_hidden_too(
    policy: SandboxPolicy, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = workspace / "home"
    home.mkdir()
    (home / ".netrc").write_text(SECRET)
    monkeypatch.setenv("HOME", str(home))
    result = bash(workspace, policy, "cat notes.txt; cat home/.netrc")
    assert result.content.startswith("hello from bosun") and SECRET not in result.content


def test_sandbox_read_shows_a_hidden_folder_read_only(
    policy: SandboxPolicy, workspace: Path, fake_home: Path
) -> None:
    home = fake_home
    tools = home / ".toolchain" / "bin"
    tools.mkdir(parents=True)
    (tools / "tool").write_text("#!/bin/sh\necho tool ran\n")
    (tools / "tool").chmod(0o755)
    (home / ".netrc").write_text(SECRET)
    shown = replace(policy, read_only=(home / ".toolchain",))
    result = bash(workspace, shown, f"{tools}/tool; cat ~/.netrc; touch {tools}/x")
    assert result.content.startswith("tool ran") and SECRET not in result.content
    assert "Read-only file system" in result.content and not (tools / "x").exists()


def test_a_worktree_pointer_cannot_be_redirected(policy: SandboxPolicy, workspace: Path) -> None:
    pointer = workspace / ".git"
    pointer.write_text("gitdir: /somewhere/else/.git/worktrees/ws\n")
    result = bash(workspace, policy, "echo 'gitdir: /tmp/evil' > .git; rm -f .git")
    assert pointer.read_text() == "gitdir: /somewhere/else/.git/worktrees/ws\n"
    assert "Read-only file system" in result.content and NOTE in result.content


def test_a_git_folder_behind_a_link_is_protected_where_it_leads(
    policy: SandboxPolicy, workspace: Path
) -> None:
    (workspace / "gitdata" / "hooks").mkdir(parents=True)
    (workspace / ".git").symlink_to("gitdata")
    result = bash(workspace, policy, "echo evil > .git/hooks/pre-commit")
    assert not (workspace / "gitdata" / "hooks" / "pre-commit").exists()
    assert "Read-only file system" in result.content


def test_for_a_normal_user_rlimit_bounds_processes(policy: SandboxPolicy) -> None:
    """The limit for a user who is not root (RLIMIT_NPROC, counted per sandbox since each
    call has its own user namespace), tried as `nobody` when the tests run as root."""
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot become a normal user")
    limited = replace(policy, process_limit="rlimit", cgroup_base=None, max_processes=20)
    workspace = Path(tempfile.mkdtemp(prefix="bosun-nproc-"))
    workspace.chmod(0o777)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    argv = bwrap_argv(limited, workspace, f"/usr/bin/python3 -c '{FORKS}'", env)
    if os.geteuid() == 0:
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert 0 < int(done.stdout) < limited.max_processes, done.stdout


# --- where bubblewrap cannot run -------------------------------------------------------------


def test_no_bubblewrap_on_is_a_usage_error_auto_warns_off_is_silent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BOSUN_BWRAP", "/nonexistent/bwrap")
    assert probe() == "bubblewrap (bwrap) is not installed"
    with pytest.raises(UsageError, match="--sandbox on, but bubblewrap") as info:
        resolve_sandbox("on")
    assert "\n" not in str(info.value)
    said: list[str] = []
    assert resolve_sandbox("auto", warn=said.append) is None
    assert said == [
        "bash is not sandboxed: bubblewrap (bwrap) is not installed; it asks before each"
        " command (--sandbox off: quiet)"
    ]
    assert resolve_sandbox("off", warn=said.append) is None and len(said) == 1


def test_a_bwrap_that_cannot_run_is_reported_with_its_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("BOSUN_BWRAP", str(fake))
    found = probe()
    assert found == "bubblewrap cannot run here: bwrap: No permissions to create new namespace"


@pytest.mark.parametrize(
    "make",
    [
        lambda dot: dot.symlink_to(dot.name),  # a loop
        lambda dot: dot.symlink_to("/nonexistent/gitdir"),  # dangling
        lambda dot: os.mkfifo(dot),
    ],
    ids=["link-loop", "dangling-link", "fifo"],
)
def test_an_odd_git_entry_never_hangs_or_breaks_a_call(
    policy: SandboxPolicy, workspace: Path, make: object
) -> None:
    make(workspace / ".git")  # type: ignore[operator]
    result = bash(workspace, policy, "echo ran > out.txt; cat out.txt")
    assert result.content == "ran" and not result.is_error
