"""Prefill progress over the OpenAI wire, against the stub server: llama-server's
`prompt_progress` reports become chunks with `progress`, then `PromptProgress` events
for the screen, and never a JSONL line or a session record.

The stub answers `/props` as llama-server does where a test needs the driver to know
it is talking to one (only llama-server is asked for the reports).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from agent import events as ev
from agent.history import Message, User
from agent.loop.turn import Query, call_model
from agent.protocol.profile import profile_for
from agent.run.output import JsonlPrinter, TextPrinter
from drivers.base import Chunk, Request, halting, interrupted
from tests.openai_servers import Reply, Stub, chat_event, completion_event, stub_driver

pytest.importorskip("openai")

PROPS = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}


def report(processed: int, total: int = 400, cache: int = 0) -> dict[str, int]:
    return {"total": total, "cache": cache, "processed": processed, "time_ms": 5}


def as_llama_server(stub: Stub) -> Stub:
    stub.on("GET /props", Reply(body=PROPS))
    return stub


def chat_with_progress(stub: Stub) -> None:
    """What llama-server streams for a chat request with `return_progress`: an empty
    assistant delta carrying each report, then the reply."""
    start = {"role": "assistant", "content": None}
    stub.on(
        "POST /v1/chat/completions",
        Reply(
            events=[
                chat_event(start, prompt_progress=report(128)),
                chat_event(start, prompt_progress=report(400)),
                chat_event({"content": "ok"}),
                chat_event({}, finish="stop"),
            ]
        ),
    )


def test_chat_progress_reports_become_chunks_and_are_asked_for(stub: Stub) -> None:
    chat_with_progress(as_llama_server(stub))
    driver = stub_driver(stub)
    chunks = list(driver.chat([{"role": "user", "content": "hi"}]))
    assert [c.progress for c in chunks if c.progress] == [(128, 400), (400, 400)]
    assert [c.text for c in chunks if c.text] == ["ok"]
    assert chunks[0].progress is not None and not chunks[0].text  # before the reply
    body = stub.calls("POST /v1/chat/completions")[0]["body"]
    assert body["return_progress"] is True


def test_completions_progress_reports_become_chunks_and_are_asked_for(stub: Stub) -> None:
    as_llama_server(stub).on(
        "POST /v1/completions",
        Reply(
            events=[
                completion_event("", prompt_progress=report(64, 100, cache=32)),
                completion_event("", prompt_progress=report(100, 100, cache=32)),
                completion_event("Hi"),
                completion_event("", finish="stop"),
            ]
        ),
    )
    driver = stub_driver(stub, api="completions")
    chunks = list(driver.stream(Request("<prompt>")))
    assert [c.progress for c in chunks if c.progress] == [(64, 100), (100, 100)]
    assert "".join(c.text for c in chunks) == "Hi"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 1
    body = stub.calls("POST /v1/completions")[0]["body"]
    assert body["return_progress"] is True and body["skip_special_tokens"] is False


def test_a_server_that_is_not_llama_server_is_not_asked(stub: Stub) -> None:
    """OpenAI's own API answers an unknown field with HTTP 400: nothing extra is sent
    where /props did not say llama-server."""
    chat_with_progress(stub)
    list(stub_driver(stub).chat([{"role": "user", "content": "hi"}]))
    stub.on("POST /v1/completions", Reply(events=[completion_event("", finish="stop")]))
    list(stub_driver(stub, api="completions").stream(Request("p")))
    assert "return_progress" not in stub.calls("POST /v1/chat/completions")[0]["body"]
    assert "return_progress" not in stub.calls("POST /v1/completions")[0]["body"]


@pytest.mark.parametrize(
    "bad",
    [
        "45%",
        {"processed": "1", "total": 4},
        {"processed": 1, "total": 0},
        {"processed": True, "total": 4},
        {"total": 4},
    ],
)
def test_a_report_that_is_not_one_tells_nothing(stub: Stub, bad: object) -> None:
    as_llama_server(stub).on(
        "POST /v1/completions",
        Reply(events=[completion_event("", prompt_progress=bad), completion_event("x", "stop")]),
    )
    chunks = list(stub_driver(stub, api="completions").stream(Request("p")))
    assert all(c.progress is None for c in chunks)


def test_a_report_past_its_total_is_clamped(stub: Stub) -> None:
    as_llama_server(stub).on(
        "POST /v1/completions",
        Reply(
            events=[
                completion_event("", prompt_progress=report(900, 10)),
                completion_event("x", "stop"),
            ]
        ),
    )
    chunks = list(stub_driver(stub, api="completions").stream(Request("p")))
    assert [c.progress for c in chunks if c.progress] == [(10, 10)]


def test_progress_reports_are_no_pieces_of_a_halted_reply() -> None:
    """A stop mid-prefill says the model wrote nothing."""
    chunks = iter([Chunk("", progress=(1, 9)), Chunk("", progress=(5, 9)), Chunk("a")])
    asked = iter([False, False, True])
    out = list(halting(chunks, lambda: next(asked), interrupted))
    assert out[-1].finish_reason == "interrupted"
    assert out[-1].usage is not None and out[-1].usage.completion_tokens == 0


def test_a_turn_emits_prompt_progress_and_printers_keep_it_off_jsonl(stub: Stub) -> None:
    chat_with_progress(as_llama_server(stub))
    driver = stub_driver(stub)
    events: list[ev.AgentEvent] = []
    history: list[Message] = [User("hi")]
    reply = call_model(driver, profile_for(driver.model), Query(history, [], events.append, 16))
    assert reply.prose == "ok"
    kinds = [e.type for e in events]
    assert kinds[:3] == ["prompt_progress", "prompt_progress", "text"]
    assert events[0] == ev.PromptProgress(128, 400)
    out = io.StringIO()
    printer = JsonlPrinter(out)
    for event in events:
        printer(event)
    assert [json.loads(line)["type"] for line in out.getvalue().splitlines()] == ["text"]
    text, err = io.StringIO(), io.StringIO()
    shown = TextPrinter(text, err)
    for event in events:
        shown(event)
    assert text.getvalue() == "ok" and err.getvalue() == ""


def test_the_session_file_keeps_no_progress(tmp_path: Path) -> None:
    from agent.session import SessionLog

    log = SessionLog("s-progress", tmp_path)
    log.event(ev.PromptProgress(1, 2))
    log.event(ev.Diagnostic("kept"))
    log.close()
    records = [json.loads(line) for line in log.path.read_text().splitlines()]
    assert [r["type"] for r in records] == ["diagnostic"]
