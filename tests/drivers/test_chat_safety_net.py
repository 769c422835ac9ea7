"""`--api chat` when the server's tool parsing fails: calls it returned as text are
recovered by bosun's parser for the model's format and the person is told, once, which
server switch would fix it; a server that left the tools out of the prompt (llama-server
without --jinja) is named as such, with `--api completions` as the way out.

The server is the loopback stub (tests/openai_servers.py) answering in the shapes of
llama-server's OpenAI-compatible API (tools/server/README.md in llama.cpp): `/props`
names llama-server, and `usage.prompt_tokens` is its count of the prompt it built.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent import events as ev
from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.settings import Settings
from tests.openai_servers import Reply, Stub, chat_event

PROPS = {"default_generation_settings": {"n_ctx": 32768}, "total_slots": 1}
CALL_AS_TEXT = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>'


def said(text: str, prompt_tokens: int = 0) -> Reply:
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 3, "total_tokens": 3}
    events = [
        chat_event({"role": "assistant", "content": text}),
        chat_event({}, finish="stop"),
        chat_event(None, usage=usage),
    ]
    return Reply(events=events)


def chat_on(stub: Stub, workspace: Path, events: list) -> ChatSession:
    settings = Settings.from_config(
        Config(model=f"openai:{stub.url}#stub-model"), workspace=workspace
    )
    chat = ChatSession(settings, events.append, lambda call, tool: "yes")
    chat.start_new()
    return chat


def test_calls_sent_as_text_are_run_and_the_fix_is_said_once(stub: Stub, workspace: Path) -> None:
    (workspace / "a.txt").write_text("apples\n")
    stub.on("GET /props", Reply(body=PROPS))
    stub.on(
        "POST /v1/chat/completions",
        said(CALL_AS_TEXT),
        said(CALL_AS_TEXT),
        said("It says apples."),
    )
    events: list = []
    chat = chat_on(stub, workspace, events)
    result = chat.send("What is in a.txt?")
    chat.close()
    assert result.status == "done" and result.final_text == "It says apples."
    results = [e for e in events if isinstance(e, ev.ToolResultEvent)]
    assert len(results) == 2 and "apples" in results[0].content
    hints = [e.message for e in events if type(e) is ev.Diagnostic and "as text" in e.message]
    assert len(hints) == 1, hints  # once a session, not once a reply
    assert "--jinja" in hints[0] and "hermes" in hints[0] and "--api completions" in hints[0]


def test_structured_calls_need_no_hint(stub: Stub, workspace: Path) -> None:
    from tests.openai_servers import tool_delta

    (workspace / "a.txt").write_text("apples\n")
    stub.on("GET /props", Reply(body=PROPS))
    call = tool_delta(0, id="c1", name="read_file", arguments=json.dumps({"path": "a.txt"}))
    structured = Reply(
        events=[chat_event({"role": "assistant", **call}), chat_event({}, finish="tool_calls")]
    )
    stub.on("POST /v1/chat/completions", structured, said("Apples."))
    events: list = []
    chat = chat_on(stub, workspace, events)
    assert chat.send("What is in a.txt?").final_text == "Apples."
    chat.close()
    assert not [e for e in events if type(e) is ev.Diagnostic and "as text" in e.message]


def conversation_only(route: str, body: Any) -> Reply | None:
    """Counts the messages and not the tools, as a server does that dropped them."""
    if route != "POST /v1/chat/completions":
        return None
    return said("Hello.", prompt_tokens=len(json.dumps(body["messages"])) // 3)


def test_a_server_that_left_the_tools_out_is_named(stub: Stub, workspace: Path) -> None:
    """The conversation is whole, so the model answers; the person reads, once, that
    it cannot call a tool and what to do about it."""
    stub.on("GET /props", Reply(body=PROPS))
    stub.pick = conversation_only
    events: list = []
    chat = chat_on(stub, workspace, events)
    first, second = chat.send("Hi."), chat.send("Hello again.")
    chat.close()
    assert first.status == second.status == "done" and first.final_text == "Hello."
    told = [
        e.message for e in events if type(e) is ev.Diagnostic and "left the tools out" in e.message
    ]
    assert len(told) == 1, told
    assert "--api completions" in told[0] and "--jinja" in told[0]
    assert all(r["body"]["tools"] for r in stub.calls("POST /v1/chat/completions"))


def test_a_truncating_chat_server_is_still_an_error(stub: Stub, workspace: Path) -> None:
    """A count below half the conversation is a lost prompt, tools or not."""
    stub.on("GET /props", Reply(body=PROPS))
    stub.pick = lambda route, body: said("Sure.", 40) if "chat" in route else None
    events: list = []
    chat = chat_on(stub, workspace, events)
    result = chat.send("x " * 3000)
    chat.close()
    assert result.status == "error" and "dropped part of the prompt" in (result.error or "")
