"""Config and tasks files may ask, never grant: what the user said on the command line
is the ceiling. A tasks-file line may make approval stricter than `--approve`, never
looser; a workspace's `.bosun.toml` may point at a model server on this machine only
(an address checked as an address, not as a string), and the user's API key is never
sent to a server the workspace chose."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from agent.run.assemble import Assembly
from agent.run.batch import run_tasks
from agent.run.config import load_config, resolve
from agent.run.settings import Settings
from agent.run.tasks_file import read_tasks
from drivers.base import UsageError
from tests.hostile.conftest import jsonl_steps
from tests.openai_servers import Stub

ORDER = ("read-only", "ask", "auto-edit", "auto")
LOOSER = [(flag, line) for i, flag in enumerate(ORDER) for line in ORDER[i + 1 :]]
NOT_LOOSER = [(flag, line) for i, flag in enumerate(ORDER) for line in ORDER[: i + 1]]


def tasks_file(path: Path, *lines: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


# --- a tasks-file line under --approve ------------------------------------------------


@pytest.mark.parametrize(("flag", "line"), LOOSER)
def test_a_task_line_cannot_loosen_approval_beyond_the_flag(
    tmp_path: Path, workspace: Path, flag: str, line: str
) -> None:
    path = tasks_file(tmp_path / "t.jsonl", {"id": "a", "prompt": "p", "approve": line})
    tasks, bad = read_tasks(Settings(approve=flag, workspace=workspace), path)
    assert tasks == [] and len(bad) == 1
    message = bad[0].message
    assert message.startswith(f"{path}:1: ") and "\n" not in message
    assert f"looser than --approve {flag}" in message


@pytest.mark.parametrize(("flag", "line"), NOT_LOOSER)
def test_a_task_line_may_make_approval_stricter(
    tmp_path: Path, workspace: Path, flag: str, line: str
) -> None:
    path = tasks_file(tmp_path / "t.jsonl", {"id": "a", "prompt": "p", "approve": line})
    tasks, bad = read_tasks(Settings(approve=flag, workspace=workspace), path)
    assert bad == [] and tasks[0].settings.approve == line


def test_a_looser_line_runs_nothing_through_the_command_line(
    tmp_path: Path, workspace: Path
) -> None:
    """The issue's own case, end to end: `--approve read-only` and a line asking for
    `auto` whose model would write a file. The line fails alone; nothing is written."""
    from agent.cli.main import app

    call = {"name": "write_file", "arguments": {"path": "pwned.txt", "content": "x"}}
    script = tmp_path / "s.jsonl"
    script.write_text(jsonl_steps([f"<tool_call>{json.dumps(call)}</tool_call>", "done"]))
    path = tasks_file(
        tmp_path / "t.jsonl",
        {"id": "evil", "prompt": "go", "approve": "auto"},
        {"id": "fine", "prompt": "go", "approve": "read-only"},
    )
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", "--tasks", str(path), "--approve", "read-only", "-w", str(workspace)]
    with redirect_stdout(out), redirect_stderr(err), pytest.raises(SystemExit) as exit_:
        app([*argv, "-m", f"scripted:{script}"])
    assert exit_.value.code == 1, err.getvalue()
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    results = {e["task"]: e for e in events if e["type"] == "result"}
    assert results["line 1"]["status"] == "error"
    assert results["line 1"]["error"].startswith(f"{path}:1: ")
    assert "fine" in results and "evil" not in results
    assert not (workspace / "pwned.txt").exists()


def test_strict_refuses_the_whole_file_for_a_looser_line(tmp_path: Path, workspace: Path) -> None:
    path = tasks_file(tmp_path / "t.jsonl", {"id": "a", "prompt": "p", "approve": "auto-edit"})
    settings = Settings(model="scripted:/nonexistent.jsonl", workspace=workspace, strict=True)
    with pytest.raises(UsageError, match=rf"^{path}:1: .*looser than --approve ask"):
        run_tasks(settings, path, out=io.StringIO(), err=io.StringIO())


def test_a_task_from_stdin_is_capped_the_same_way(workspace: Path) -> None:
    stdin = io.StringIO(json.dumps({"id": "a", "prompt": "p", "approve": "auto"}) + "\n")
    tasks, bad = read_tasks(Settings(approve="auto-edit", workspace=workspace), Path("-"), stdin)
    assert tasks == [] and bad[0].message.startswith("<stdin>:1: ")


# --- the model server a workspace may choose ------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.attacker.example/v1",  # a name that starts like a loopback address
        "http://127.0.0.1.attacker.example/v1",
        "http://127.0.0.1.nip.io:8080/v1",
        "http://localhost.attacker.example/v1",
        "http://localhost./v1",
        "http://attacker.example\\@127.0.0.1/v1",  # parsers disagree on the backslash
        "http://127.0.0.1@attacker.example/v1",
        "http://user@127.0.0.1/v1",  # credentials in the URL: no reason to allow them
        "http://[::ffff:8.8.8.8]/v1",
        "http://0x7f000001/v1",  # loopback to some resolvers, not an address literal
        "http://%31%32%37.0.0.1/v1",
        "http://10.0.0.1:8080/v1",
        "http://[::2]/v1",
    ],
)
def test_a_workspace_cannot_name_a_server_that_only_looks_local(
    workspace: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    model = f"openai:{url}#m"
    (workspace / ".bosun.toml").write_text(f"model = {json.dumps(model)}\n")
    assert load_config(workspace).model == "smollm2-135m"
    assert "a server on this machine" in capsys.readouterr().err


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/v1",
        "http://127.9.8.7/v1",
        "http://[::1]:8080/v1",
        "http://localhost:8080/v1",
        "http://LOCALHOST/v1",
        "https://127.0.0.1/v1",
    ],
)
def test_a_workspace_may_name_a_loopback_server(workspace: Path, url: str) -> None:
    model = f"openai:{url}#m"
    (workspace / ".bosun.toml").write_text(f"model = {json.dumps(model)}\n")
    assert load_config(workspace).model == model


def _authorization(stub: Stub, settings: Settings) -> str:
    """The Authorization header the model server got when `settings` opened it."""
    with Assembly.open(settings):
        pass
    return str(stub.calls("GET /v1/models")[-1]["headers"].get("authorization", ""))


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "BOSUN_API_KEY"])
def test_the_api_key_never_goes_to_a_server_the_workspace_chose(
    workspace: Path, stub: Stub, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "sk-user-secret")
    model = f"openai:{stub.url}#stub-model"
    (workspace / ".bosun.toml").write_text(f"model = {json.dumps(model)}\n")
    config = load_config(workspace)
    assert config.model == model  # loopback: allowed, but keyless
    chosen = Settings.from_config(config, workspace=workspace)
    assert "sk-user-secret" not in _authorization(stub, chosen)
    # the same server named by the user (a flag) gets the key: the check discriminates
    by_user = resolve(workspace, model=model)
    assert "sk-user-secret" in _authorization(stub, Settings.from_config(by_user))


def test_a_workspace_file_cannot_declare_itself_trusted(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever field carries "the workspace chose this model" is not a setting."""
    (workspace / ".bosun.toml").write_text('workspace_model = ""\n')
    with pytest.raises(UsageError, match="unknown setting 'workspace_model'"):
        load_config(workspace)
