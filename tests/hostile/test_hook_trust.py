"""A workspace hook runs only while the user's trust in it holds, checked each time it is
about to run: a script the model rewrote after the approval is not run (however the
command line reaches it: `bash -c`, `$PWD`, a glob, a sibling file), hooks approved for
one workspace never run in another (a tasks-file line, `bosun mcp serve`'s run_task),
and a workspace hook runs in the sandbox, where it can do no more than the model's bash.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import anyio
import pytest

from agent import events as ev
from agent.mcp.session import approvals
from agent.run.chat import ChatSession
from agent.run.config import load_config
from agent.run.hooks import WorkspaceHooks
from agent.run.settings import Settings
from agent.tools.hooks import HookSpec
from agent.tools.sandbox import SandboxPolicy, probe
from tests.helpers import tool_call
from tests.hooks.test_hostile import _alive
from tests.hostile.conftest import RunBosun, World

MARK = "echo ran >> hook-ran\n"  # what the approved script does: a line in the workspace
EVIL = "echo pwned > pwned\n"  # what the model makes of it


def sandbox_here() -> None:
    """These runs use the real sandbox; under CI it must be there."""
    if not isinstance(probe(), SandboxPolicy):
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"the sandbox cannot run here: {probe()}")
        pytest.skip(f"the sandbox cannot run here: {probe()}")


def hook_file(workspace: Path, command: str, event: str = "PreToolUse") -> None:
    (workspace / ".bosun.toml").write_text(
        f'[[hooks.{event}]]\nmatcher = "bash"\ncommand = {json.dumps(command)}\n'
    )


def approve(workspace: Path) -> None:
    """What answering yes in `bosun chat` stores."""
    theirs = tuple(h for h in load_config(workspace).hooks if h.origin == "workspace")
    approvals().allow(workspace.resolve(), WorkspaceHooks(theirs, workspace.resolve()))


def write(path: str, content: str) -> str:
    return tool_call("write_file", path=path, content=content)


def decisions(events: list[dict[str, object]]) -> list[object]:
    return [e["decision"] for e in events if e["type"] == "hook"]


# How a hook command may reach the script the model rewrites (command, files, the one
# the model writes): named plainly, through bash -c, $PWD, the project variable, a
# glob, a folder changed into, a sibling the script sources.
REACH = {
    "plain": ("sh hooks/mark.sh", {"hooks/mark.sh": MARK}, "hooks/mark.sh"),
    "bash-c": ("bash -c 'sh hooks/mark.sh'", {"hooks/mark.sh": MARK}, "hooks/mark.sh"),
    "$PWD": ('sh "$PWD/hooks/mark.sh"', {"hooks/mark.sh": MARK}, "hooks/mark.sh"),
    "project-dir": (
        "sh ${CLAUDE_PROJECT_DIR}/hooks/mark.sh",
        {"hooks/mark.sh": MARK},
        "hooks/mark.sh",
    ),
    "glob": ("for f in hooks/*.sh; do sh $f; done", {"hooks/mark.sh": MARK}, "hooks/mark.sh"),
    "glob-new-file": (
        "for f in hooks/*.sh; do sh $f; done",
        {"hooks/mark.sh": MARK},
        "hooks/z.sh",
    ),
    "cd": (
        "cd hooks && sh mark.sh",
        {"hooks/mark.sh": "echo ran >> ../hook-ran\n"},
        "hooks/mark.sh",
    ),
    "sourced-sibling": (
        "sh hooks/mark.sh",
        {"hooks/mark.sh": ". hooks/lib.sh\n", "hooks/lib.sh": MARK},
        "hooks/lib.sh",
    ),
}


@pytest.mark.parametrize("how", ["approved", "--allow-workspace-hooks"])
@pytest.mark.parametrize("reach", list(REACH))
def test_a_hook_script_the_model_rewrites_is_not_run_again(
    bosun: RunBosun, workspace: Path, reach: str, how: str
) -> None:
    sandbox_here()
    command, files, target = REACH[reach]
    for name, content in files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(content)
    hook_file(workspace, command)
    flags = ["--allow-workspace-hooks"] if how != "approved" else []
    if how == "approved":
        approve(workspace)
    steps = [
        tool_call("bash", command="echo one"),
        write(target, EVIL),
        tool_call("bash", command="echo two"),
        "done",
    ]
    run = bosun(steps, "--approve", "auto-edit", "--sandbox", "on", *flags)
    run.assert_no_bug()
    assert (workspace / "hook-ran").read_text() == "ran\n"  # the first time, as approved
    assert not (workspace / "pwned").exists()  # the rewritten script never ran
    assert decisions(run.events) == ["allow", "untrusted"]
    said = [e["message"] for e in run.events if e["type"] == "diagnostic"]
    assert any("changed since they were approved" in m and "not run" in m for m in said), said


def test_what_a_hook_writes_itself_does_not_void_its_approval(
    bosun: RunBosun, workspace: Path
) -> None:
    """A hook whose command line names the file it writes (a report) keeps running."""
    sandbox_here()
    (workspace / "hooks").mkdir()
    (workspace / "hooks" / "report.sh").write_text('echo ran >> "$1"\n')
    hook_file(workspace, "sh hooks/report.sh hooks/report.txt")
    approve(workspace)
    steps = [tool_call("bash", command="echo one"), tool_call("bash", command="echo two"), "ok"]
    run = bosun(steps, "--approve", "auto-edit", "--sandbox", "on")
    run.assert_no_bug()
    assert decisions(run.events) == ["allow", "allow"]
    assert (workspace / "hooks" / "report.txt").read_text() == "ran\nran\n"


def test_a_workspace_hook_runs_in_the_sandbox(
    bosun: RunBosun, workspace: Path, world: World
) -> None:
    sandbox_here()
    target = world.outside / "written-by-a-hook"
    hook_file(workspace, f"echo pwned > {target}; cat {world.secret} > leaked")
    world.seal()
    run = bosun(
        [tool_call("bash", command="echo one"), "ok"],
        "--approve",
        "auto-edit",
        "--sandbox",
        "on",
        "--allow-workspace-hooks",
    )
    run.assert_no_bug()
    assert decisions(run.events) == ["error"]  # it ran, and the sandbox refused both
    assert not target.exists()
    leaked = workspace / "leaked"
    assert not leaked.exists() or "TOP SECRET" not in leaked.read_text()


def test_outside_the_sandbox_auto_edit_does_not_run_workspace_hooks_unasked(
    bosun: RunBosun, workspace: Path
) -> None:
    """Without the sandbox a workspace hook runs as the user: in auto-edit the model has
    written files unasked that the hook may run (a Makefile, a conftest.py), so it does
    not run; in auto mode the user let everything run."""
    (workspace / "hooks").mkdir()
    (workspace / "hooks" / "mark.sh").write_text(MARK)
    hook_file(workspace, "sh hooks/mark.sh")
    approve(workspace)
    steps = [tool_call("bash", command="echo one"), "ok"]
    run = bosun(steps, "--approve", "auto-edit", "--sandbox", "off")
    run.assert_no_bug()
    assert not (workspace / "hook-ran").exists()
    assert decisions(run.events) == ["untrusted"]
    said = " ".join(e["message"] for e in run.events if e["type"] == "diagnostic")
    assert "outside the sandbox" in said and "--sandbox on" in said
    run = bosun(steps, "--approve", "auto", "--sandbox", "off")
    assert decisions(run.events) == ["allow"]
    assert (workspace / "hook-ran").read_text() == "ran\n"


def two_workspaces(tmp_path: Path) -> tuple[Path, Path]:
    """A, whose hooks are approved, and B, with a script of the same name doing harm."""
    a, b = tmp_path / "a", tmp_path / "b"
    for ws, script in ((a, MARK), (b, EVIL)):
        (ws / "hooks").mkdir(parents=True)
        (ws / "hooks" / "mark.sh").write_text(script)
        hook_file(ws, "sh hooks/mark.sh")
    approve(a)
    return a, b


def test_a_tasks_line_in_another_workspace_does_not_run_the_approved_hooks(
    tmp_path: Path, script_file: Callable[..., Path]
) -> None:
    from agent.cli.main import app

    sandbox_here()
    a, b = two_workspaces(tmp_path)
    tasks = tmp_path / "tasks.jsonl"
    lines = [{"id": "here", "prompt": "go"}, {"id": "there", "prompt": "go", "workspace": str(b)}]
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    script = script_file(*[tool_call("bash", command="echo one"), "ok"] * 2)
    argv = ["run", "--tasks", str(tasks), "-m", f"scripted:{script}", "-w", str(a)]
    argv += ["--output", "jsonl", "--approve", "auto-edit", "--sandbox", "on"]
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        app(argv)
    events = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
    assert (a / "hook-ran").read_text() == "ran\n"
    assert not (b / "pwned").exists()
    by_task = {t: decisions([e for e in events if e.get("task") == t]) for t in ("here", "there")}
    assert by_task == {"here": ["allow"], "there": ["untrusted"]}


def test_mcp_serve_run_task_in_another_workspace_does_not_run_the_approved_hooks(
    tmp_path: Path, script_file: Callable[..., Path]
) -> None:
    sandbox_here()
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    a, b = two_workspaces(tmp_path)
    script = script_file(tool_call("bash", command="echo one"), "ok")
    root = Path(__file__).resolve().parents[2]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent", "mcp", "serve", "--model", f"scripted:{script}"],
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=a,  # the server's own workspace, whose hooks are approved
    )

    async def go() -> None:
        async with Client(stdio_client(params, errlog=sys.__stderr__)) as client:
            await client.call_tool("run_task", {"prompt": "go", "workspace": str(b)})

    anyio.run(go)
    assert not (b / "pwned").exists()


def test_chat_asks_again_when_the_model_rewrote_an_approved_hook(
    workspace: Path, script_file: Callable[..., Path]
) -> None:
    sandbox_here()
    (workspace / "hooks").mkdir()
    (workspace / "hooks" / "mark.sh").write_text(MARK)
    hook_file(workspace, "sh hooks/mark.sh")
    script = script_file(
        tool_call("bash", command="echo one"),
        write("hooks/mark.sh", EVIL),
        tool_call("bash", command="echo two"),
        "done",
    )
    settings = Settings.from_config(
        load_config(workspace),
        workspace=workspace.resolve(),
        model=f"scripted:{script}",
        approve="auto-edit",
        sandbox=probe(),
    )
    answers = [True, False]  # yes at the start; no once the script changed
    asked: list[int] = []
    said: list[str] = []

    def ask(hooks: Sequence[HookSpec]) -> bool:
        asked.append(len(hooks))
        return answers.pop(0)

    events: list[ev.AgentEvent] = []
    chat = ChatSession(
        settings, events.append, lambda call, tool: "yes", ask_hooks=ask, report=said.append
    )
    chat.start_new()
    chat.send("go")
    chat.close()
    assert asked == [1, 1]
    assert any("changed since they were approved" in line for line in said), said
    assert (workspace / "hook-ran").read_text() == "ran\n"
    assert not (workspace / "pwned").exists()


def test_a_workspace_hook_leaves_no_daemon_behind(bosun: RunBosun, workspace: Path) -> None:
    """A daemon that leaves the hook's session and clears its environment escapes any
    mark bosun could look for; in the sandbox its process namespace ends with the hook."""
    sandbox_here()
    tag = f"bosun-daemon-{os.getpid()}-{id(workspace)}"
    hook_file(workspace, f"setsid -f env -i sh -c 'sleep 300; : {tag}' >/dev/null 2>&1")
    run = bosun(
        [tool_call("bash", command="echo one"), "ok"],
        "--approve",
        "auto-edit",
        "--sandbox",
        "on",
        "--allow-workspace-hooks",
    )
    run.assert_no_bug()
    assert decisions(run.events) == ["allow"]
    assert _alive(tag) == []
