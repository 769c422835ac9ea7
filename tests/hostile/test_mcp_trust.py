"""An approved workspace MCP server is code the model can change (issue #32, class 4).

The server runs outside the sandbox, from a script in the workspace that the model may
rewrite (sandboxed bash or the file tools in auto-edit). An approval therefore binds to
the command line and to the content of the workspace paths it names; a changed server
is asked for again, and a headless run does not start it, saying why in one line. A
crashed server is restarted only while its files are as they were when it started.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from agent.errors import ToolError
from agent.mcp.hub import Hub
from agent.mcp.servers import Approvals, ServerSpec, read_mcp_json
from agent.mcp.session import approvals, choose
from agent.tools import ToolContext
from agent.tools.sandbox import probe
from tests.helpers import tool_call
from tests.hostile.conftest import RunBosun
from tests.mcp.helpers import FAULT, mark, marked_pids

PLANT = 'import pathlib; pathlib.Path("pwned").write_text("ran")\n'
WRAPPER = (
    f"import runpy, sys\nsys.argv[1:] = []\nrunpy.run_path({str(FAULT)!r}, run_name='__main__')\n"
)


def spec(**settings: object) -> ServerSpec:
    return ServerSpec("repo", origin="workspace", **settings)  # type: ignore[arg-type]


def store(tmp_path: Path) -> Approvals:
    return Approvals(tmp_path / "approvals.json")


# --- what an approval binds to ---------------------------------------------------------


def _script(ws: Path) -> tuple[ServerSpec, Path]:
    (ws / "srv.py").write_text("print('server')\n")
    return spec(command="python3", args=("srv.py",)), ws / "srv.py"


def _command(ws: Path) -> tuple[ServerSpec, Path]:
    (ws / "run.sh").write_text("#!/bin/sh\nexec python3 srv.py\n")
    return spec(command="./run.sh"), ws / "run.sh"


def _option_value(ws: Path) -> tuple[ServerSpec, Path]:
    (ws / "hook.js").write_text("// hook\n")
    return spec(command="node", args=("--require=hook.js", "/opt/srv.js")), ws / "hook.js"


def _module(ws: Path) -> tuple[ServerSpec, Path]:
    (ws / "srvpkg").mkdir()
    (ws / "srvpkg" / "__init__.py").write_text("")
    (ws / "srvpkg" / "__main__.py").write_text("print('server')\n")
    return spec(command="python3", args=("-m", "srvpkg.cli")), ws / "srvpkg" / "__main__.py"


def _module_planted_later(ws: Path) -> tuple[ServerSpec, Path]:
    # an installed module: nothing in the workspace, until one of that name is made
    return spec(command="python3", args=("-m", "mcp_server_time")), ws / "mcp_server_time.py"


def _folder(ws: Path) -> tuple[ServerSpec, Path]:
    (ws / "tool" / "src").mkdir(parents=True)
    (ws / "tool" / "src" / "server.py").write_text("print('server')\n")
    return spec(command="uv", args=("run", "--directory", "tool", "srv")), ws / "tool/src/x.py"


def _in_cwd(ws: Path) -> tuple[ServerSpec, Path]:
    (ws / "tools").mkdir()
    (ws / "tools" / "srv.py").write_text("print('server')\n")
    return spec(command="python3", args=("srv.py",), cwd="tools"), ws / "tools" / "srv.py"


def _link(ws: Path) -> tuple[ServerSpec, Path]:
    (ws / "a.py").write_text("print('a')\n")
    (ws / "b.py").write_text("print('b')\n")
    (ws / "srv.py").symlink_to("a.py")
    return spec(command="python3", args=("srv.py",)), ws / "srv.py"


def _absolute(ws: Path) -> tuple[ServerSpec, Path]:
    (ws / "srv.py").write_text("print('server')\n")
    return spec(command="python3", args=(str(ws / "srv.py"),)), ws / "srv.py"


WAYS = [_script, _command, _option_value, _module, _module_planted_later, _folder, _in_cwd]
WAYS += [_link, _absolute]


@pytest.mark.parametrize("named", WAYS, ids=lambda f: f.__name__.strip("_"))
def test_a_changed_file_the_server_runs_from_voids_its_approval(
    tmp_path: Path, workspace: Path, named
) -> None:
    server, target = named(workspace)
    approved = store(tmp_path)
    approved.allow(workspace, server)
    assert approved.allowed(workspace, server)
    (workspace / "unrelated.txt").write_text("the model works elsewhere\n")
    assert approved.allowed(workspace, server)  # only its own files count
    if target.is_symlink():
        target.unlink()
        target.symlink_to("b.py")
    else:
        target.write_text(PLANT)
    assert not approved.allowed(workspace, server)
    verdict = approved.verdict(workspace, server)
    assert not verdict.approved
    assert verdict.why.startswith("its files changed since you approved it (")
    shown = str(target.relative_to(workspace))
    assert any(part in verdict.why for part in (shown, shown.split("/")[0])), verdict.why


def test_an_approval_from_before_files_were_recorded_approves_nothing(
    tmp_path: Path, workspace: Path
) -> None:
    server, _ = _script(workspace)
    path = tmp_path / "approvals.json"
    path.write_text(json.dumps({str(workspace): {"repo": server.fingerprint()}}))
    assert not Approvals(path).allowed(workspace, server)


def test_a_folder_too_big_to_check_is_asked_for_each_time(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agent.mcp.trust.MAX_FILES", 5)
    for i in range(10):
        (workspace / "tool").mkdir(exist_ok=True)
        (workspace / "tool" / f"m{i}.py").write_text("")
    server = spec(command="uv", args=("run", "--directory", "tool", "srv"))
    approved = store(tmp_path)
    approved.allow(workspace, server)
    assert not approved.allowed(workspace, server)


@pytest.mark.parametrize("odd", ["fifo", "loop", "dangling", "long"])
def test_odd_paths_in_the_command_line_never_hang_or_raise(
    tmp_path: Path, workspace: Path, odd: str
) -> None:
    if odd == "fifo":
        os.mkfifo(workspace / "srv.py")
    elif odd == "loop":
        (workspace / "srv.py").symlink_to("srv.py")
    elif odd == "dangling":
        (workspace / "srv.py").symlink_to("/nonexistent/srv.py")
    server = spec(command="python3", args=("x" * 5000 if odd == "long" else "srv.py",))
    done: list[bool] = []

    def approve() -> None:
        store(tmp_path).allow(workspace, server)
        done.append(True)

    worker = threading.Thread(target=approve, daemon=True)
    worker.start()
    worker.join(10)
    assert done == [True], "approving hung or raised"
    assert store(tmp_path).allowed(workspace, server)


# --- a headless run ---------------------------------------------------------------------


def _approved_repo_server(workspace: Path) -> tuple[ServerSpec, str]:
    """The workspace names a server that runs its own srv.py; the user approved it."""
    tag = mark()
    (workspace / "srv.py").write_text(WRAPPER)
    entry = {"command": sys.executable, "args": ["srv.py"], "env": {"BOSUN_TEST_MARK": tag}}
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo": entry}}))
    (server,) = read_mcp_json(workspace, lambda p: p.read_text())
    approvals().allow(workspace, server)
    return server, tag


def _rewrite(how: str) -> str:
    if how == "write_file":
        return tool_call("write_file", path="srv.py", content=PLANT + WRAPPER)
    command = f"sed -i '1i {PLANT.strip()}' srv.py && head -1 srv.py"
    return tool_call("bash", command=command)


@pytest.mark.parametrize("how", ["write_file", "bash"])
def test_a_server_the_model_rewrote_is_not_started_by_the_next_headless_run(
    bosun: RunBosun, workspace: Path, how: str
) -> None:
    if how == "bash" and isinstance(probe(), str):
        pytest.skip("bash runs unasked in auto-edit only inside the sandbox")
    _approved_repo_server(workspace)
    first = bosun([_rewrite(how), "done"], "--approve", "auto-edit")
    first.assert_no_bug()
    assert "not started" not in first.stderr  # approved and unchanged: it ran
    assert not first.results()[0]["is_error"], first.results()[0]
    assert (workspace / "srv.py").read_text().startswith(PLANT)
    second = bosun([tool_call("repo__echo", text="again"), "done"], "--approve", "auto")
    second.assert_no_bug()
    said = [line for line in second.stderr.splitlines() if "MCP server repo" in line]
    assert said == [
        f"bosun: MCP server repo not started: named by the workspace ({workspace}/.mcp.json),"
        " and its files changed since you approved it (srv.py); it starts once approved"
        " again in `bosun chat` or with --allow-workspace-mcp; its tools are absent"
    ], second.stderr
    assert "unknown tool 'repo__echo'" in str(second.results()[0]["content"])
    assert not (workspace / "pwned").exists(), "the rewritten server ran"


def test_chat_asks_again_for_a_changed_server_and_remembers_the_new_content(
    workspace: Path,
) -> None:
    server, _tag = _approved_repo_server(workspace)
    asked: list[str] = []

    def ask(s: ServerSpec) -> bool:
        asked.append(s.name)
        return True

    assert choose([server], workspace, allow_workspace=False, ask=ask)[0] and asked == []
    (workspace / "srv.py").write_text(PLANT + WRAPPER)
    start, off = choose([server], workspace, allow_workspace=False, ask=ask)
    assert asked == ["repo"] and [s.name for s in start] == ["repo"] and off == []
    assert choose([server], workspace, allow_workspace=False, ask=ask)[0] and asked == ["repo"]


# --- a restart mid-session ----------------------------------------------------------------


def test_a_crashed_server_whose_script_changed_is_not_restarted(
    tmp_path: Path, workspace: Path
) -> None:
    tag = mark()
    shutil.copy(FAULT, workspace / "srv.py")
    server = spec(command=sys.executable, args=("srv.py",), env=(("BOSUN_TEST_MARK", tag),))
    (started,), _ = choose([server], workspace, allow_workspace=True, ask=None)
    assert started.pinned is not None and dict(started.pinned)["srv.py"].startswith("file:")
    hub = Hub(workspace, tmp_path / "logs")
    try:
        hub.start([started])
        tools = {t.name: t for t in hub.tools()}
        ctx = ToolContext(workspace)
        assert tools["repo__echo"].func(ctx, text="x") == "x"
        (workspace / "srv.py").write_text(PLANT + (workspace / "srv.py").read_text())
        with pytest.raises(ToolError, match=r"its files changed since it started \(srv\.py\)"):
            tools["repo__crash"].func(ctx)
        with pytest.raises(ToolError, match="not running"):
            tools["repo__echo"].func(ctx, text="x")
    finally:
        hub.close()
    assert not (workspace / "pwned").exists() and marked_pids(tag) == []


def test_a_user_server_is_restarted_as_before(tmp_path: Path, workspace: Path) -> None:
    tag = mark()
    server = replace(
        spec(command=sys.executable, args=(str(FAULT),), env=(("BOSUN_TEST_MARK", tag),)),
        origin="user",
    )
    (started,), _ = choose([server], workspace, allow_workspace=False, ask=None)
    assert started.pinned is None


# --- a daemon a server started ------------------------------------------------------------


def test_a_daemon_a_server_started_does_not_outlive_the_hub(
    tmp_path: Path, workspace: Path
) -> None:
    """The SDK starts a server in a session of its own and kills that process group on
    close; a daemon leaves the group (`setsid`), so the hub finds it by a marker in the
    environment it inherited."""
    import signal
    import time

    tag = mark()
    daemon = "import subprocess\nsubprocess.Popen(['setsid', '-f', 'sleep', '60'])\n"
    (workspace / "srv.py").write_text(daemon + WRAPPER)
    server = ServerSpec(
        "d", command=sys.executable, args=("srv.py",), env=(("BOSUN_TEST_MARK", tag),)
    )
    hub = Hub(workspace, tmp_path / "logs")
    try:
        hub.start([server])
        deadline = time.monotonic() + 5
        while len(marked_pids(tag)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(marked_pids(tag)) >= 2, "the daemon did not start"
        hub.close()
        deadline = time.monotonic() + 3
        while marked_pids(tag) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = marked_pids(tag)
    finally:
        hub.close()
        for pid in marked_pids(tag):
            os.kill(pid, signal.SIGKILL)
    assert left == [], "a daemon outlived the hub"
