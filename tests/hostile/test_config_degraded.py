"""Smaller ways input degraded bosun instead of failing cleanly: an `@` mention of a
name too long for the filesystem, `/save` through a planted symlink, an endless stdin,
a resumed session's workspace over the one the user gave, and a full disk that ended a
run with nothing said on stderr. Each must end in one clear line (or do the right
thing), never in a traceback, a hang or a write outside the workspace."""

from __future__ import annotations

import io
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agent.errors import UsageError
from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.settings import Settings
from agent.ui import commands
from agent.ui.mentions import complete, expand
from agent.ui.render import Renderer
from tests.hostile.conftest import SECRET, RunBosun, World

# --- @ mentions -------------------------------------------------------------------------

LONG_NAMES = [
    "a" * 300,  # one component past NAME_MAX
    "a/" * 3000 + "x",  # a path past PATH_MAX
    "notes.txt/" + "b" * 400,
    "é" * 200 + ".py",  # 400 bytes in UTF-8
]


@pytest.mark.parametrize("name", LONG_NAMES)
def test_a_mention_of_an_over_long_name_is_left_alone(workspace: Path, name: str) -> None:
    text = f"look at @{name} and @notes.txt"
    out = expand(text, workspace)
    assert out.attached == ["notes.txt"]  # the real mention still works
    assert all("\n" not in p for p in out.problems)
    assert complete(name, workspace) == []


def test_completing_through_a_symlink_loop_offers_nothing(workspace: Path) -> None:
    (workspace / "loop").symlink_to("loop")
    assert complete("loop/x", workspace) == [] and complete("a\x00b/c", workspace) == []
    out = expand("see @loop/x", workspace)
    assert out.attached == [] and all("\n" not in p for p in out.problems)


# --- /save -----------------------------------------------------------------------------


class SaveRepl:
    """What `/save` uses of the REPL: its chat and a place to say things."""

    def __init__(self, chat: ChatSession) -> None:
        self.chat = chat
        self.console = Console(file=io.StringIO(), width=200, highlight=False)

    def say(self, message: str, style: str = "dim") -> None:
        self.console.print(message, style=style, markup=False)


@pytest.fixture
def save_repl(workspace: Path, script_file: Any) -> Iterator[SaveRepl]:
    settings = Settings.from_config(
        Config(model=f"scripted:{script_file('hi')}"), workspace=workspace
    )
    chat = ChatSession(settings, lambda e: None, lambda call, tool: "yes")
    chat.start_new()
    yield SaveRepl(chat)
    chat.close()


def save(repl: SaveRepl, arg: str) -> None:
    commands.find("/save").run(repl, arg)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "plant",
    [
        lambda ws, out: (ws / "out.md").symlink_to(out / "victim.md"),  # a file link out
        lambda ws, out: (ws / "link").symlink_to(out),  # a folder link out: link/out.md
        lambda ws, out: None,  # a plain path outside: ../outside/victim.md
        lambda ws, out: None,  # an absolute one
    ],
    ids=["file-link", "folder-link", "dotdot", "absolute"],
)
def test_save_never_writes_outside_the_workspace(
    save_repl: SaveRepl, world: World, workspace: Path, plant: Any, request: Any
) -> None:
    victim = world.outside / "victim.md"
    victim.write_text(SECRET)
    plant(workspace, world.outside)
    world.seal()
    arg = {
        "file-link": "out.md",
        "folder-link": "link/victim.md",
        "dotdot": "../outside/victim.md",
        "absolute": str(victim),
    }[request.node.callspec.id]
    with pytest.raises(UsageError) as info:
        save(save_repl, arg)
    assert "outside the workspace" in str(info.value) and "\n" not in str(info.value)
    assert victim.read_text() == SECRET


def test_save_refuses_a_file_with_a_second_name_and_a_fifo(
    save_repl: SaveRepl, world: World, workspace: Path
) -> None:
    os.link(world.secret, workspace / "hard.md")
    os.mkfifo(workspace / "pipe.json")
    world.seal()
    with pytest.raises(UsageError, match="hard links"):
        save(save_repl, "hard.md")
    with pytest.raises(UsageError, match="not a regular file"):
        save(save_repl, "pipe.json")  # and it did not wait for a reader
    assert world.secret.read_text() == SECRET


def test_save_writes_inside_the_workspace_relative_to_it(
    save_repl: SaveRepl, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # not the workspace: the path is the workspace's
    (workspace / "old.md").write_text("x" * 10_000)
    save(save_repl, "exports/chat.md")
    save(save_repl, "old.md")  # an existing file is replaced, not appended to
    assert (workspace / "exports" / "chat.md").read_text() == (workspace / "old.md").read_text()
    assert "wrote" in save_repl.console.file.getvalue()  # type: ignore[attr-defined]
    assert not (tmp_path / "exports").exists()


# --- stdin ------------------------------------------------------------------------------


class Endless(io.RawIOBase):
    """A stdin that never ends; it fails the test once far more was read than a cap."""

    def __init__(self, limit: int = 64 * 2**20) -> None:
        self.given = 0
        self.limit = limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.given > self.limit:
            raise AssertionError(f"read {self.given} bytes of an endless stdin")
        n = len(buffer)
        buffer[:n] = b"x" * n
        self.given += n
        return n


def _run_cli(argv: list[str]) -> tuple[int, str, str]:
    from contextlib import redirect_stderr, redirect_stdout

    from agent.cli.main import app

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), pytest.raises(SystemExit) as exit_:
        app(argv)
    code = exit_.value.code
    return code if isinstance(code, int) else 1, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("source", ["endless", "big"])
def test_run_dash_reads_a_bounded_prompt_from_stdin(
    workspace: Path, script_file: Any, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    if source == "endless":
        stdin: io.TextIOWrapper[Any] = io.TextIOWrapper(io.BufferedReader(Endless()), "utf-8")
    else:
        stdin = io.TextIOWrapper(io.BytesIO(b"y" * (2**20 + 1)), "utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    argv = ["run", "-", "-m", f"scripted:{script_file('done')}", "-w", str(workspace)]
    code, out, err = _run_cli(argv)
    assert code == 2 and out == ""
    assert err.startswith("bosun: error: ") and "over 1 MB" in err and err.count("\n") == 1


def test_run_dash_takes_a_prompt_just_under_the_cap_and_odd_bytes(
    workspace: Path, script_file: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = b"summarise \xff\xfe " + b"z" * (2**20 - 20)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), "utf-8"))
    argv = ["run", "-", "-m", f"scripted:{script_file('done')}", "-w", str(workspace)]
    code, out, err = _run_cli([*argv, "--output", "jsonl"])
    assert code == 0, err
    assert json.loads(out.splitlines()[-1])["status"] == "done"


def test_tasks_from_an_endless_stdin_or_device_are_refused(workspace: Path) -> None:
    from agent.run.tasks_file import read_tasks

    endless = io.TextIOWrapper(io.BufferedReader(Endless()), "utf-8")
    with pytest.raises(UsageError, match="<stdin> is over 32 MB"):
        read_tasks(Settings(workspace=workspace), Path("-"), endless)
    with pytest.raises(UsageError, match="/dev/zero is over 32 MB"):
        read_tasks(Settings(workspace=workspace), Path("/dev/zero"))


def test_piped_text_stops_reading_an_endless_pipe() -> None:
    from agent.cli.piped import MAX_PIPED, piped_text

    read, write = os.pipe()
    stop = threading.Event()

    def pour() -> None:
        chunk = b"p" * 65536
        try:
            while not stop.is_set():
                os.write(write, chunk)
        except OSError:  # the reader went away
            pass

    pourer = threading.Thread(target=pour, daemon=True)
    pourer.start()
    try:
        with os.fdopen(read, "rb", closefd=False) as stream:
            text = piped_text(stream, wait=5)
        assert text is not None and len(text) < MAX_PIPED + 100
    finally:
        stop.set()
        os.close(read)
        pourer.join(5)
        os.close(write)


# --- chat --resume with --workspace -----------------------------------------------------


def _session_in(workspace: Path, script: Path) -> Path:
    settings = Settings.from_config(Config(model=f"scripted:{script}"), workspace=workspace)
    chat = ChatSession(settings, lambda e: None, lambda call, tool: "yes")
    chat.start_new()
    chat.send("hi")
    path = chat.log.path if chat.log is not None else None
    chat.close()
    assert path is not None
    return path


def test_an_explicit_workspace_wins_over_the_resumed_sessions(
    tmp_path: Path, workspace: Path, script_file: Any
) -> None:
    from agent.ui.app import Repl

    other = tmp_path / "other"
    other.mkdir()
    path = _session_in(workspace, script_file("hello", "again"))
    settings = Settings.from_config(
        Config(model=f"scripted:{script_file('x')}"), workspace=other.resolve()
    )
    chat = ChatSession(settings, lambda e: None, lambda call, tool: "yes")
    try:
        # the REPL without its terminal: what resume uses of it
        repl = Repl.__new__(Repl)
        repl.console = Console(file=io.StringIO(), width=300, highlight=False)
        repl.renderer = Renderer(repl.console, lambda name, args: None)
        repl.chat = chat
        repl.keep_workspace = True
        repl.resume(path)
        assert chat.workspace == other.resolve() and chat.agent.workspace == other.resolve()
        said = repl.console.file.getvalue()  # type: ignore[attr-defined]
        lines = [line for line in said.splitlines() if str(workspace) in line]
        assert len(lines) == 1 and str(other.resolve()) in lines[0], said
        # without --workspace, the session's own folder applies, as before
        repl.keep_workspace = False
        repl.resume(path)
        assert chat.workspace == workspace.resolve()
    finally:
        chat.close()


def test_chat_resume_passes_an_explicit_workspace_on(
    tmp_path: Path, workspace: Path, script_file: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent.ui.app as app_module

    other = tmp_path / "other"
    other.mkdir()
    path = _session_in(workspace, script_file("hello"))
    seen: dict[str, Any] = {}

    class FakeRepl:
        def __init__(
            self, console: Any, settings: Settings, show: bool, *, keep_workspace: bool = False
        ) -> None:
            seen.update(settings=settings, keep_workspace=keep_workspace)

        def resume(self, p: Path) -> None:
            seen["resumed"] = p

        def say(self, *_a: Any) -> None: ...

        def loop(self) -> int:
            return 0

        def close(self) -> None: ...

    monkeypatch.setattr(app_module, "Repl", FakeRepl)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    code = app_module.chat_command(
        other, {"model": f"scripted:{script_file('x')}"}, path.stem, False, False
    )
    assert code == 0 and seen["resumed"] == path
    assert seen["settings"].workspace == other.resolve() and seen["keep_workspace"] is True


# --- a full disk ------------------------------------------------------------------------


@pytest.fixture
def full_disk(bosun_home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every new session file is /dev/full: its first write fails with ENOSPC."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    sessions = bosun_home / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / "full.jsonl").symlink_to("/dev/full")
    monkeypatch.setattr("agent.run.headless.new_session_id", lambda: "full")
    monkeypatch.setattr("agent.run.batch.task.new_session_id", lambda: "full")
    return "cannot write the session file"


@pytest.mark.parametrize("output", ["jsonl", "text"])
def test_a_full_disk_says_so_on_stderr(bosun: RunBosun, full_disk: str, output: str) -> None:
    run = bosun(["done"], "--output", output)  # the later --output wins
    assert run.code == 1
    if output == "jsonl":
        assert run.result["status"] == "error" and run.result["error"].startswith(full_disk)
    lines = [line for line in run.stderr.splitlines() if full_disk in line]
    assert len(lines) == 1, run.stderr
    assert "No space left on device" in lines[0] and "internal error" not in run.stderr


def test_a_full_disk_in_a_batch_says_so_once(
    tmp_path: Path, workspace: Path, script_file: Any, full_disk: str
) -> None:
    tasks = tmp_path / "t.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "prompt": "p"}) + "\n" for i in (1, 2)))
    script = script_file("done")
    argv = ["run", "--tasks", str(tasks), "-m", f"scripted:{script}", "-w", str(workspace)]
    code, out, err = _run_cli(argv)
    assert code == 1
    results = [json.loads(line) for line in out.splitlines()]
    assert all(r["status"] == "error" for r in results if r["type"] == "result")
    lines = [line for line in err.splitlines() if full_disk in line]
    assert len(lines) == 1 and lines[0].startswith("bosun: error: "), err
    assert "internal error" not in err
