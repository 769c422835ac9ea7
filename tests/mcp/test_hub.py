"""The hub against real servers over stdio: the SDK-written fault server for every
failure the issue names, and the time server from PyPI."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.errors import ToolError
from agent.mcp.hub import Hub
from agent.mcp.servers import ServerSpec
from agent.mcp.tools import MAX_RESULT_CHARS
from agent.tools import ToolContext
from tests.mcp.helpers import fault, mark, marked_pids, pypi_server


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    h = Hub(tmp_path, tmp_path / "logs")
    yield h
    h.close()


def call(h: Hub, name: str, **arguments: object) -> str:
    tool = next(t for t in h.tools() if t.name == name)
    return tool.func(ToolContext(h.workspace), **arguments)


def state(h: Hub, name: str):
    return next(s for s in h.states() if s.spec.name == name)


def test_tools_arrive_namespaced_with_schemas_and_results(hub: Hub) -> None:
    hub.start([fault(), ServerSpec("time", command=pypi_server("mcp-server-time"))])
    names = [t.name for t in hub.tools()]
    assert "fault__echo" in names and "time__get_current_time" in names
    echo = next(t for t in hub.tools() if t.name == "fault__echo")
    assert echo.kind == "mcp" and echo.parameters["required"] == ["text"]
    assert call(hub, "fault__echo", text="héllo") == "héllo"
    assert '"timezone": "UTC"' in call(hub, "time__get_current_time", timezone="UTC")


def test_is_error_other_content_and_huge_results(hub: Hub) -> None:
    hub.start([fault()])
    with pytest.raises(ToolError, match="the thing failed"):
        call(hub, "fault__fail")
    assert call(hub, "fault__image") == "[image content: image/png, 9 bytes]"
    big = call(hub, "fault__huge", size=MAX_RESULT_CHARS * 3)
    assert len(big) < MAX_RESULT_CHARS + 100 and "more characters" in big


def test_a_bad_schema_leaves_out_that_tool_only(hub: Hub) -> None:
    hub.start([fault()])
    names = [t.name for t in hub.tools()]
    assert "fault__bad" not in names and "fault__echo" in names
    assert any(
        s.startswith("bad: its input schema is not valid") for s in state(hub, "fault").skipped
    )


def test_a_hanging_call_times_out_and_the_server_still_answers(hub: Hub) -> None:
    hub.start([fault(tool_timeout=1.0)])
    started = time.monotonic()
    with pytest.raises(ToolError, match="did not answer within 1 s"):
        call(hub, "fault__hang")
    assert time.monotonic() - started < 5
    assert call(hub, "fault__echo", text="still here") == "still here"


def test_a_crash_mid_call_is_an_error_result_and_one_restart(hub: Hub) -> None:
    tag = mark()
    hub.start([fault(tag=tag)])
    first = call(hub, "fault__pid")
    with pytest.raises(ToolError, match=r"stopped during this call.*it was restarted"):
        call(hub, "fault__crash")
    second = call(hub, "fault__pid")
    assert second != first and marked_pids(tag) == [int(second)]
    with pytest.raises(ToolError, match="restarted once already"):
        call(hub, "fault__crash")
    with pytest.raises(ToolError, match="not running"):
        call(hub, "fault__echo", text="x")
    assert state(hub, "fault").restarts == 1


def test_start_failures_are_one_line_and_leave_the_others(hub: Hub) -> None:
    started = time.monotonic()
    hub.start(
        [
            fault("slow", "--slow-start", "1"),
            fault("stuck", "--hang-start", startup_timeout=1.5),
            fault("dies", "--crash-start"),
            ServerSpec("missing", command="no-such-mcp-server-here"),
            fault("ok"),
        ]
    )
    assert time.monotonic() - started < 6  # in parallel, each within its own timeout
    assert state(hub, "slow").status == "running" and state(hub, "ok").status == "running"
    assert state(hub, "stuck").error == "did not start within 1.5 s"
    assert "fault server: failing on purpose" in state(hub, "dies").error
    assert state(hub, "missing").error == "command not found: no-such-mcp-server-here"
    for name in ("stuck", "dies", "missing"):
        assert state(hub, name).status == "failed" and "\n" not in state(hub, name).error
    assert {t.name.split("__")[0] for t in hub.tools()} == {"slow", "ok"}


def test_close_ends_every_server_process(tmp_path: Path) -> None:
    tag = mark()
    h = Hub(tmp_path)
    h.start(
        [
            fault("a", tag=tag),
            fault("b", tag=tag),
            fault("c", "--hang-start", tag=tag, startup_timeout=1),
        ]
    )
    assert len(marked_pids(tag)) >= 2
    started = time.monotonic()
    h.close()
    assert time.monotonic() - started < 10
    deadline = time.monotonic() + 5
    while marked_pids(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marked_pids(tag) == []
    h.close()  # twice is fine


def test_streamable_http_server(hub: Hub) -> None:
    import socket
    import subprocess
    import sys

    from tests.mcp.helpers import FAULT

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(FAULT), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        hub.start([ServerSpec("web", url=f"http://127.0.0.1:{port}/mcp")])
        assert state(hub, "web").status == "running", state(hub, "web").error
        assert call(hub, "web__echo", text="over http") == "over http"
    finally:
        server.terminate()
        server.wait(timeout=10)
