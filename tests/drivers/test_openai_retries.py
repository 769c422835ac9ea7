"""The OpenAI driver's retries and error messages, against the stub server: what is
tried again, what is not, and the one line a user reads."""

from __future__ import annotations

import time

import pytest

from drivers.base import DriverError, Request, UsageError, collect
from drivers.openai_http import OpenAIDriver, open_openai
from tests.openai_servers import (
    Reply,
    Stub,
    completion_event,
    free_port,
    models_body,
    stub_driver,
)

pytest.importorskip("openai")


def test_retries_503_with_backoff_then_succeeds(stub: Stub) -> None:
    busy = Reply(503, {"error": {"message": "loading model"}})
    stub.on(
        "POST /v1/completions",
        busy,
        busy,
        Reply(events=[completion_event("ok", "stop")]),
    )
    driver = stub_driver(stub, api="completions", backoff=0.25)
    assert collect(driver.stream(Request("p"))).text == "ok"
    assert len(stub.calls("POST /v1/completions")) == 3
    assert driver.sleeps == [0.25, 0.5]  # type: ignore[attr-defined]


def test_429_is_retried_and_gives_up_after_bounded_tries(stub: Stub) -> None:
    stub.on("POST /v1/chat/completions", Reply(429, {"error": {"message": "slow down"}}))
    driver = stub_driver(stub, retries=3, backoff=0.01)
    with pytest.raises(DriverError) as info:
        list(driver.chat([{"role": "user", "content": "hi"}]))
    assert len(stub.calls("POST /v1/chat/completions")) == 4
    assert driver.sleeps == [0.01, 0.02, 0.04]  # type: ignore[attr-defined]
    assert str(info.value) == (
        f"{stub.url} chat request failed with HTTP 429 after 4 tries: slow down"
    )


def test_client_errors_are_not_retried(stub: Stub) -> None:
    stub.on(
        "POST /v1/completions",
        Reply(400, {"error": {"message": "the prompt is\n4096 tokens, the context 2048"}}),
    )
    driver = stub_driver(stub, api="completions")
    with pytest.raises(DriverError) as info:
        list(driver.stream(Request("p")))
    assert len(stub.calls("POST /v1/completions")) == 1 and driver.sleeps == []  # type: ignore[attr-defined]
    assert "HTTP 400: the prompt is 4096 tokens, the context 2048" in str(info.value)
    assert not isinstance(info.value, UsageError)


def test_a_slow_server_is_not_retried(stub: Stub) -> None:
    """A read timeout means the server is there but busy; retrying would only multiply
    the wait."""
    stub.on("POST /v1/completions", Reply(events=[completion_event("x", "stop")], delay=2))
    driver = stub_driver(stub, api="completions", timeout=0.3)
    with pytest.raises(DriverError) as info:
        list(driver.stream(Request("p")))
    assert str(info.value) == (
        f"{stub.url} sent nothing for 0.3 s (a long prompt's prefill can take that long:"
        " --request-timeout SECONDS|off)"
    )
    assert len(stub.calls("POST /v1/completions")) == 1


def test_request_timeout_off_waits_for_a_slow_server(
    stub: Stub, workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--request-timeout off` through the command line: a server silent for longer than
    a short limit would allow still answers; a bad value is a usage error."""
    from tests.openai_servers import bosun

    events = [completion_event("done waiting", "stop")]
    stub.on("POST /v1/completions", Reply(events=events, delay=1.5))
    spec = f"openai:{stub.url}#stub-model"
    base = ["run", "hi", "--model", spec, "--api", "completions", "-w", str(workspace)]
    slow = bosun(*base, "--request-timeout", "0.5")
    assert slow.returncode == 1 and "--request-timeout SECONDS|off" in slow.stderr
    waited = bosun(*base, "--request-timeout", "off")
    assert waited.returncode == 0, waited.stderr
    assert "done waiting" in waited.stdout
    bad = bosun(*base, "--request-timeout", "-3")
    assert bad.returncode == 2 and "give a number of seconds or off" in bad.stderr


def test_missing_endpoint_suggests_the_other_wire(stub: Stub) -> None:
    with pytest.raises(DriverError, match=r"no /completions endpoint .*try --api chat"):
        list(stub_driver(stub, api="completions").stream(Request("p")))


def test_rejected_key_says_which_variables(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOSUN_API_KEY", "sk-bosun")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    stub.on("GET /v1/models", Reply(401, {"error": {"message": "invalid key"}}))
    with pytest.raises(DriverError, match=r"refused the API key .*BOSUN_API_KEY or OPENAI_API_KEY"):
        stub_driver(stub)
    assert stub.requests[0]["headers"]["authorization"] == "Bearer sk-bosun"


def test_dummy_key_when_none_is_set(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BOSUN_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    stub_driver(stub)
    assert stub.requests[0]["headers"]["authorization"].startswith("Bearer sk-")


def test_unknown_model_lists_what_the_server_has(stub: Stub) -> None:
    stub.on("GET /v1/models", Reply(body=models_body("qwen3-8b", "gpt-oss-20b")))
    with pytest.raises(UsageError) as info:
        open_openai(f"openai:{stub.url}#qwen3-7b")
    message = str(info.value)
    assert "'qwen3-7b' is not served by" in message and "qwen3-8b, gpt-oss-20b" in message


def test_server_without_a_model_list_is_not_refused(stub: Stub) -> None:
    stub.on("GET /v1/models", Reply(404, {"detail": "Not Found"}))
    driver = stub_driver(stub)
    assert driver.available == [] and driver.model == f"openai:{stub.url}#stub-model"


def test_server_down_is_a_clear_one_line_error() -> None:
    port = free_port()  # nothing listens there once the probe socket is closed
    started = time.monotonic()
    with pytest.raises(DriverError) as info:
        OpenAIDriver(f"http://127.0.0.1:{port}/v1", "m", backoff=0.01, sleep=lambda _s: None)
    assert str(info.value) == (
        f"cannot reach http://127.0.0.1:{port}/v1: connection refused (after 4 tries)"
    )
    assert not isinstance(info.value, UsageError)
    assert time.monotonic() - started < 10
