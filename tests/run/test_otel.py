"""OpenTelemetry: `bosun run` with a scripted model sends its spans over OTLP/HTTP to a
real receiver on 127.0.0.1; names, parent links and GenAI attributes are checked, and
contents are absent unless asked for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import tool_call
from tests.run.otlp_receiver import Received, otlp_receiver

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "What does notes.txt say? SECRET-PROMPT-7"
CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def run(
    workspace: Path, script: Path, env: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "run",
            PROMPT,
            "--model",
            f"scripted:{script}",
            "--workspace",
            str(workspace),
            "--output",
            "jsonl",
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        timeout=120,
    )


@pytest.fixture
def script(script_file: Callable[..., Path]) -> Path:
    return script_file(
        tool_call("read_file", path="notes.txt"),
        tool_call("read_file", path="missing.txt"),
        tool_call("write_file", path="new.txt", content="x"),  # ask mode, nobody asked
        "It says hello from bosun.",
    )


def one(spans: list[Received], prefix: str) -> Received:
    found = [s for s in spans if s.name.startswith(prefix)]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def test_spans_names_parents_attributes(workspace: Path, script: Path) -> None:
    with otlp_receiver() as receiver:
        proc = run(workspace, script, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
        assert proc.returncode == 0, proc.stderr
        spans = receiver.spans
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    session = one(spans, "bosun.session")
    request = one(spans, "invoke_agent bosun")
    chats = [s for s in spans if s.name.startswith("chat ")]
    tools = [s for s in spans if s.name.startswith("execute_tool ")]
    assert len(chats) == 4 and len(tools) == 3
    # the tree: session -> request -> model calls and tool calls, one trace
    assert session.parent_id == ""
    assert request.parent_id == session.span_id
    assert all(s.parent_id == request.span_id for s in chats + tools)
    assert len({s.trace_id for s in spans}) == 1
    session_id = next(
        json.loads(line)["id"] for line in proc.stdout.splitlines() if '"session"' in line
    )
    assert session.attributes["gen_ai.conversation.id"] == session_id
    assert session.resource["service.name"] == "bosun"
    assert request.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert request.attributes["bosun.status"] == "done"
    assert request.attributes["bosun.tool_calls"] == 3
    for chat in chats:
        a = chat.attributes
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.request.model"] == chat.name.removeprefix("chat ") != ""
        assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
        assert "gen_ai.usage.cache_read.input_tokens" in a
        assert a["gen_ai.response.finish_reasons"] == ["stop"]
        assert a["gen_ai.response.time_to_first_chunk"] >= 0
        assert request.start <= chat.start <= chat.end <= request.end
    # later calls re-read the earlier prompt: the cache counts it
    assert chats[-1].attributes["gen_ai.usage.cache_read.input_tokens"] > 0
    assert (
        sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats)
        == (request.attributes["gen_ai.usage.input_tokens"])
    )
    read_ok, read_missing, write = sorted(tools, key=lambda s: s.start)
    assert read_ok.name == "execute_tool read_file" and read_ok.status != 2
    assert read_ok.attributes["gen_ai.tool.name"] == "read_file"
    assert read_ok.attributes["bosun.tool.decision"] == "allowed"
    assert read_missing.status == 2 and read_missing.attributes["error.type"] == "tool_error"
    assert write.attributes["bosun.tool.decision"] == "refused"
    assert write.attributes["error.type"] == "refused"
    # contents are not sent by default: not the prompt, not the file, not the answer
    every = json.dumps([s.attributes for s in spans])
    assert "SECRET-PROMPT-7" not in every and "hello from bosun" not in every
    assert "gen_ai.tool.call.arguments" not in every


def test_contents_only_when_asked(workspace: Path, script: Path) -> None:
    with otlp_receiver() as receiver:
        env = {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.endpoint + "/v1/traces",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
            "OTEL_SERVICE_NAME": "my-bosun",
        }
        proc = run(workspace, script, env)
        assert proc.returncode == 0, proc.stderr
        spans = receiver.spans
    request = one(spans, "invoke_agent bosun")
    assert "SECRET-PROMPT-7" in request.attributes["gen_ai.input.messages"]
    assert "It says hello from bosun." in request.attributes["gen_ai.output.messages"]
    read_ok = min(receiver.by_name("execute_tool read_file"), key=lambda s: s.start)
    assert json.loads(read_ok.attributes["gen_ai.tool.call.arguments"]) == {"path": "notes.txt"}
    assert "hello from bosun" in read_ok.attributes["gen_ai.tool.call.result"]
    assert request.resource["service.name"] == "my-bosun"


def test_what_turns_it_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent.run.settings import Settings
    from agent.run.telemetry import content_on, telemetry_on

    for name in [k for k in os.environ if k.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    assert not telemetry_on(Settings()) and not content_on(Settings())
    assert telemetry_on(Settings(otel=True))  # `otel = true` alone: the OTLP default endpoint
    assert content_on(Settings(otel_content=True))
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/v1/traces")
    assert telemetry_on(Settings())
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert not telemetry_on(Settings(otel=True))
    monkeypatch.delenv("OTEL_TRACES_EXPORTER")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert not telemetry_on(Settings(otel=True))
    monkeypatch.setenv(CONTENT_VARIABLE, "true")
    assert content_on(Settings())


def test_config_turns_it_on_and_sdk_disabled_turns_it_off(
    workspace: Path, script: Path, bosun_home: Path, script_file: Callable[..., Path]
) -> None:
    (bosun_home / "config.toml").write_text("otel = true\n", encoding="utf-8")
    with otlp_receiver() as receiver:
        # otel = true with no endpoint goes to the OTLP default; the traces one wins here
        env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.endpoint + "/v1/traces"}
        assert run(workspace, script, env).returncode == 0
        assert receiver.by_name("invoke_agent")
        before = len(receiver.spans)
        again = script_file("done.")
        off = run(workspace, again, {**env, "OTEL_SDK_DISABLED": "true"})
        assert off.returncode == 0, off.stderr
        assert len(receiver.spans) == before


def test_a_workspace_file_cannot_turn_it_on(
    workspace: Path, script_file: Callable[..., Path]
) -> None:
    (workspace / ".bosun.toml").write_text("otel = true\notel_content = true\n", encoding="utf-8")
    proc = run(workspace, script_file("done."), {})
    assert proc.returncode == 0, proc.stderr
    assert "ignoring otel = True" in proc.stderr and "ignoring otel_content" in proc.stderr


def test_unreachable_collector_costs_one_warning_and_no_time(
    workspace: Path, script_file: Callable[..., Path]
) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    quick = script_file("done.")
    started = time.monotonic()
    base = run(workspace, quick, {})
    baseline = time.monotonic() - started
    started = time.monotonic()
    proc = run(
        workspace, script_file("done."), {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
    )
    took = time.monotonic() - started
    assert base.returncode == 0 and proc.returncode == 0, proc.stderr
    [warning] = proc.stderr.splitlines()  # one line, and nothing of the SDK's own logs
    assert warning.startswith("bosun: OpenTelemetry: cannot send spans to http://127.0.0.1:")
    assert took < baseline + 4.0, (took, baseline)  # the export timeout is 3 s at most


@pytest.mark.parametrize(
    "env",
    [{}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_SDK_DISABLED": "true"}],
    ids=["unset", "sdk-disabled"],
)
def test_a_run_without_otel_imports_no_opentelemetry(
    workspace: Path, script_file: Callable[..., Path], env: dict[str, str]
) -> None:
    script = script_file("done.")
    code = (
        "import sys\n"
        "from agent.cli.main import app\n"
        "try:\n"
        f"    app(['run', 'hi', '--model', 'scripted:{script}', '--workspace', {str(workspace)!r},"
        " '--output', 'jsonl'])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "loaded = {m.split('.')[0] for m in sys.modules}\n"
        "print('RESULT', code, sorted(loaded & {'opentelemetry', 'mcp'}))\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**clean, **env},
        timeout=120,
    )
    assert out.stdout.splitlines()[-1] == "RESULT 0 []", out.stdout + out.stderr


def test_every_face_sends_spans_batch_and_mcp_serve(
    workspace: Path, script_file: Callable[..., Path], tmp_path: Path
) -> None:
    """A batch's tasks and a served run go through the same assembly: each session
    is its own trace, and each goes out when its task or call is done."""
    import anyio

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "".join(json.dumps({"id": f"t{i}", "prompt": f"task {i}"}) + "\n" for i in range(2))
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    with otlp_receiver() as receiver:
        env = {**clean, "PYTHONPATH": str(ROOT), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        batch = subprocess.run(
            [sys.executable, "-m", "agent", "run", "--tasks", str(tasks), "--model",
             f"scripted:{script_file('done.')}", "--workspace", str(workspace)],
            capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
        )  # fmt: skip
        assert batch.returncode == 0, batch.stderr
        sessions = receiver.by_name("bosun.session")
        requests = receiver.by_name("invoke_agent")
        assert len(sessions) == 2 and len({s.trace_id for s in sessions}) == 2
        assert sorted(r.parent_id for r in requests) == sorted(s.span_id for s in sessions)
        before = len(receiver.spans)

        async def serve() -> None:
            from mcp import Client, StdioServerParameters
            from mcp.client.stdio import stdio_client

            script = script_file("served.")
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "agent", "mcp", "serve", "--model", f"scripted:{script}"],
                env=env,
                cwd=ROOT,
            )
            async with Client(stdio_client(params, errlog=sys.__stderr__)) as client:
                got = await client.call_tool(
                    "run_task", {"prompt": "hi", "workspace": str(workspace)}
                )
                assert not got.is_error, got.content
                # released when the call is done: the session span goes out while the
                # server still runs
                with anyio.fail_after(10):
                    while not receiver.by_name("bosun.session")[2:]:
                        await anyio.sleep(0.1)

        anyio.run(serve)
        served = receiver.spans[before:]
        [session] = [s for s in served if s.name == "bosun.session"]
        [request] = [s for s in served if s.name.startswith("invoke_agent")]
        assert request.parent_id == session.span_id


@pytest.mark.model
@pytest.mark.slow
def test_the_bundled_model_served_over_mcp_with_spans(workspace: Path) -> None:
    """The real path end to end: `bosun mcp serve` on the bundled model (llama.cpp in
    process, CPU), a task through the SDK's client, its spans over OTLP/HTTP with the
    model's real token counts and time to first token."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    with otlp_receiver() as receiver:
        env = {**clean, "PYTHONPATH": str(ROOT), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}

        async def go() -> dict[str, object]:
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "agent", "mcp", "serve", "--model", "smollm2-135m", "--max-turns", "3"],
                env=env,
                cwd=ROOT,
            )
            async with Client(stdio_client(params, errlog=sys.__stderr__)) as client:
                got = await client.call_tool(
                    "run_task",
                    {"prompt": "Read the file notes.txt and say what it says.",
                     "workspace": str(workspace), "approve": "read-only"},
                )  # fmt: skip
                assert not got.is_error, got.content
                assert got.structured_content is not None
                return dict(got.structured_content)

        result = anyio.run(go)
    assert result["status"] in ("done", "max_turns", "stuck", "refused"), result
    assert result["turns"] >= 1 and result["session_id"]
    chats = receiver.by_name("chat ")
    assert chats, [s.name for s in receiver.spans]
    first = chats[0].attributes
    assert first["gen_ai.request.model"] == "smollm2-135m"
    assert first["gen_ai.usage.input_tokens"] > 100  # the real prompt, real tokenizer
    assert first["gen_ai.response.finish_reasons"][0] in ("stop", "length")
    ttft_ns = first["gen_ai.response.time_to_first_chunk"] * 1e9
    assert 0 < ttft_ns <= chats[0].end - chats[0].start
