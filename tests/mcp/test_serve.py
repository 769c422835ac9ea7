"""`bosun mcp serve` driven by the SDK's own client over stdio, with a scripted model:
both tools, progress while a run goes on, a second call while one runs, cancel, and
hostile arguments that must come back as tool errors from a server that stays up."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers import tool_call

ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def serving(script: Path, *extra: str) -> AsyncIterator[Any]:
    """A client connected to `python -m agent mcp serve` on this script."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agent", "mcp", "serve", "--model", f"scripted:{script}", *extra],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    async with Client(stdio_client(params, errlog=sys.__stderr__)) as client:
        yield client


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


def error_text(result: Any) -> str:
    assert result.is_error
    return " ".join(getattr(c, "text", "") for c in result.content)


def test_run_then_continue_with_progress(workspace: Path, script_file: Callable[..., Path]) -> None:
    script = script_file(
        tool_call("read_file", path="notes.txt"),
        "It says hello from bosun.",
        # answered only to a prompt that holds the first request's answer: a
        # continuation that lost its history finds no step and ends in an error
        {"match": "It says hello from bosun.", "completion": "The file is notes.txt."},
    )
    seen: list[str] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async def go() -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        async with serving(script) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            assert names == ["continue_session", "run_task"]
            first = structured(
                await client.call_tool(
                    "run_task",
                    {"prompt": "What does notes.txt say?", "workspace": str(workspace)},
                    progress_callback=progress,
                )
            )
            second = structured(
                await client.call_tool(
                    "continue_session",
                    {"session_id": first["session_id"], "prompt": "Which file was it?"},
                )
            )
            return first, second, names

    first, second, _ = anyio.run(go)
    assert first["status"] == "done" and first["final_text"] == "It says hello from bosun."
    assert first["turns"] == 2 and first["tool_calls"] == 1
    assert second["status"] == "done" and second["final_text"] == "The file is notes.txt."
    assert second["session_id"] == first["session_id"]
    assert "tool call: read_file" in seen and any(m.startswith("model call:") for m in seen)
    # the continuation saw the first request: one session file holds both
    files = list((Path(os.environ["BOSUN_HOME"]) / "sessions").glob("*.jsonl"))
    assert [f.stem for f in files] == [first["session_id"]]
    text = files[0].read_text(encoding="utf-8")
    assert "What does notes.txt say?" in text and "Which file was it?" in text


def test_second_call_while_one_runs_is_queued(
    workspace: Path, script_file: Callable[..., Path]
) -> None:
    slow = {"chunks": ["slow ", "answer"], "delay_ms": 600}
    script = script_file(slow, "second answer")
    seen: list[str] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async def go() -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = [{}, {}]
        async with serving(script) as client:

            async def one(i: int, prompt: str) -> None:
                got = await client.call_tool(
                    "run_task",
                    {"prompt": prompt, "workspace": str(workspace)},
                    progress_callback=progress if i else None,
                )
                results[i] = structured(got) | {"at": time.monotonic()}

            async with anyio.create_task_group() as tg:
                tg.start_soon(one, 0, "first")
                await anyio.sleep(0.3)  # the first run is inside its slow reply
                tg.start_soon(one, 1, "second")
        return results

    first, second = anyio.run(go)
    assert first["final_text"] == "slow answer" and second["final_text"] == "second answer"
    assert first["session_id"] != second["session_id"]
    assert first["at"] <= second["at"]  # queued behind the first: one driver, one stream
    assert any(m.startswith("queued:") for m in seen), seen


def test_cancel_stops_the_run(workspace: Path, script_file: Callable[..., Path]) -> None:
    script = script_file({"chunks": ["a"] * 50, "delay_ms": 200}, "after the cancel")

    async def go() -> tuple[float, dict[str, Any]]:
        async with serving(script) as client:
            started = time.monotonic()
            with anyio.move_on_after(1.0):  # the client gives up: notifications/cancelled
                await client.call_tool("run_task", {"prompt": "go", "workspace": str(workspace)})
            stopped = time.monotonic() - started
            # the server is still there, and the script went on from the next step:
            # the cancelled run ended at its safe point and let the model go
            after = structured(
                await client.call_tool("run_task", {"prompt": "again", "workspace": str(workspace)})
            )
            return stopped, after

    stopped, after = anyio.run(go)
    assert stopped < 3.0
    assert after["final_text"] == "after the cancel", after
    [log, *_] = sorted((Path(os.environ["BOSUN_HOME"]) / "sessions").glob("*.jsonl"))
    assert '"status": "interrupted"' in log.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("run_task", {"prompt": "x", "workspace": "/no/such/folder"}, "does not exist"),
        ("run_task", {"prompt": "x", "workspace": "WS", "approve": "yolo"}, "approve must be"),
        ("run_task", {"prompt": "x", "workspace": "WS", "approve": "auto"}, "looser"),
        ("run_task", {"prompt": "x" * 300_000, "workspace": "WS"}, "at most"),
        ("run_task", {"prompt": "  ", "workspace": "WS"}, "empty"),
        ("continue_session", {"session_id": "20990101-000000-abcdef", "prompt": "x"}, "no session"),
        ("continue_session", {"session_id": "../../etc/passwd", "prompt": "x"}, "no session"),
        ("continue_session", {"session_id": "*", "prompt": "x"}, "no session"),
        ("run_task", {"prompt": "x"}, "workspace"),
    ],
)
def test_hostile_arguments_are_tool_errors(
    workspace: Path,
    script_file: Callable[..., Path],
    tool: str,
    arguments: dict[str, Any],
    says: str,
) -> None:
    script = script_file("still here")
    arguments = {k: str(workspace) if v == "WS" else v for k, v in arguments.items()}

    async def go() -> tuple[str, dict[str, Any]]:
        async with serving(script) as client:
            bad = error_text(await client.call_tool(tool, arguments))
            good = structured(
                await client.call_tool("run_task", {"prompt": "hi", "workspace": str(workspace)})
            )
            return bad, good

    bad, good = anyio.run(go)
    assert says in bad and "Traceback" not in bad
    assert good["final_text"] == "still here"


def test_a_running_session_cannot_be_continued(
    workspace: Path, script_file: Callable[..., Path]
) -> None:
    script = script_file({"chunks": ["slow ", "answer"], "delay_ms": 800}, "next")
    sessions = Path(os.environ["BOSUN_HOME"]) / "sessions"

    async def go() -> tuple[str, dict[str, Any]]:
        first: dict[str, Any] = {}
        async with serving(script) as client:

            async def slow() -> None:
                got = await client.call_tool(
                    "run_task", {"prompt": "a", "workspace": str(workspace)}
                )
                first.update(structured(got))

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                while not list(sessions.glob("*.jsonl")):
                    await anyio.sleep(0.05)
                [running] = [p.stem for p in sessions.glob("*.jsonl")]
                refused = error_text(
                    await client.call_tool(
                        "continue_session", {"session_id": running, "prompt": "b"}
                    )
                )
        return refused, first

    refused, first = anyio.run(go)
    assert "is running" in refused
    assert first["final_text"] == "slow answer"


def test_a_model_the_caller_names_never_gets_the_users_key(tmp_path: Path) -> None:
    from agent.run.serve_runs import Runs
    from agent.run.settings import Settings

    runs = Runs(Settings(model="smollm2-135m", approve="auto-edit"), lambda s: None)  # type: ignore[arg-type, return-value]
    theirs = runs.settings_for(str(tmp_path), None, "openai:http://203.0.113.9/v1#m")
    assert theirs.workspace_model == theirs.model  # opened keyless (agent.run.assemble)
    mine = runs.settings_for(str(tmp_path), None, "smollm2-135m")
    assert mine.workspace_model is None
