"""The context a server gives one request, read the way each server documents it, and
what bosun does with it: a budget for the session (capping, compaction), said in the
session event with its source; a server that dropped the prompt's front is an error.

No binary of Ollama, LM Studio or vLLM runs here, so their answers are fixtures written
from their documentation, served by the loopback stub (tests/openai_servers.py):
- vLLM: the OpenAI-compatible server's `GET /v1/models` ModelCard carries `max_model_len`
  (vLLM docs, "OpenAI-Compatible Server"; vllm/entrypoints/openai/protocol.py); SGLang
  answers the same field;
- LM Studio: "LM Studio REST API" (lmstudio.ai/docs/developer/rest): v1 `GET
  /api/v1/models` lists `models[]` with `key` and `loaded_instances[].config`; v0 `GET
  /api/v0/models/{model}`;
- Ollama: "API" docs (github.com/ollama/ollama/blob/main/docs/api.md), `POST /api/show`:
  `model_info` with `<arch>.context_length` and `parameters` as Modelfile text lines.
llama-server's `/props` is exercised against the real server in tests/drivers/
test_llama_server.py; its shape here follows tools/server/README.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.run.chat import ChatSession
from agent.run.config import Config
from agent.run.settings import Settings
from drivers.server_facts import (
    OLLAMA_DEFAULT_CTX,
    detect_context,
    ollama_trained_context,
    root_of,
)
from tests.openai_servers import Reply, Stub, stub_driver

LLAMA_PROPS = {
    "default_generation_settings": {"n_ctx": 1536, "params": {"temperature": 0.8}},
    "total_slots": 4,
    "model_path": "/models/smollm2.gguf",
    "chat_template": "{{ messages }}",
}
VLLM_MODELS = {
    "object": "list",
    "data": [
        {
            "id": "stub-model",
            "object": "model",
            "created": 1732000000,
            "owned_by": "vllm",
            "root": "Qwen/Qwen3-8B",
            "parent": None,
            "max_model_len": 32768,
            "permission": [],
        }
    ],
}
LM_STUDIO_V1 = {
    "models": [
        {
            "type": "llm",
            "key": "stub-model",
            "display_name": "Stub",
            "max_context_length": 131072,
            "loaded_instances": [{"id": "stub-model", "config": {"context_length": 8192}}],
        }
    ]
}
LM_STUDIO_V0 = {
    "id": "stub-model",
    "object": "model",
    "type": "llm",
    "state": "loaded",
    "max_context_length": 131072,
    "loaded_context_length": 4096,
}
OLLAMA_SHOW = {
    "modelfile": "FROM qwen3:8b",
    "parameters": "num_ctx                        16384\n"
    'stop                           "<|im_end|>"',
    "template": "{{ .Prompt }}",
    "details": {"family": "qwen3", "parameter_size": "8.2B"},
    "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
}


def test_the_root_is_the_base_url_without_v1() -> None:
    assert root_of("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080"
    assert root_of("http://h:1/v1/") == "http://h:1"
    assert root_of("http://h:1/api") == "http://h:1/api"


@pytest.mark.parametrize(
    ("routes", "n_ctx", "source", "slots"),
    [
        ({"GET /props": LLAMA_PROPS}, 1536, "llama-server /props (per slot)", 4),
        ({"GET /v1/models": VLLM_MODELS}, 32768, "/v1/models max_model_len", None),
        ({"GET /api/v1/models": LM_STUDIO_V1}, 8192, "LM Studio /api/v1/models (loaded)", None),
        (
            {"GET /api/v0/models/stub-model": LM_STUDIO_V0},
            4096,
            "LM Studio /api/v0/models (loaded)",
            None,
        ),
        ({"POST /api/show": OLLAMA_SHOW}, 16384, "Ollama /api/show num_ctx", None),
    ],
    ids=["llama-server", "vllm", "lm-studio-v1", "lm-studio-v0", "ollama"],
)
def test_each_server_says_its_window_its_own_way(
    stub: Stub, routes: dict, n_ctx: int, source: str, slots: int | None
) -> None:
    for route, body in routes.items():
        stub.on(route, Reply(body=body))
    found = detect_context(stub.url, "stub-model")
    assert found is not None and (found.n_ctx, found.source, found.slots) == (n_ctx, source, slots)


def test_ollama_without_num_ctx_is_its_small_default_not_the_trained_length(stub: Stub) -> None:
    show = {**OLLAMA_SHOW, "parameters": 'stop "<|im_end|>"'}
    stub.on("POST /api/show", Reply(body=show))
    found = detect_context(stub.url, "stub-model")
    assert found is not None and found.n_ctx == OLLAMA_DEFAULT_CTX
    assert found.source == "Ollama's default window"
    root = root_of(stub.url)
    from drivers.server_facts import http_json

    assert ollama_trained_context(root, "stub-model", http_json()) == 40960
    assert stub.calls("POST /api/show")[0]["body"] == {"model": "stub-model"}


def test_a_server_that_says_nothing_leaves_the_context_unknown(stub: Stub) -> None:
    stub.on("GET /props", Reply(body={"default_generation_settings": {"n_ctx": "lots"}}))
    stub.on("GET /api/v1/models", Reply(500, {"error": "x"}))
    assert detect_context(stub.url, "stub-model") is None  # the listing has no max_model_len
    driver = stub_driver(stub)
    assert driver.info.n_ctx is None and driver.info.context_source == ""


def test_the_driver_takes_the_window_and_the_slots(stub: Stub) -> None:
    stub.on("GET /props", Reply(body=LLAMA_PROPS))
    driver = stub_driver(stub, max_concurrency=32)
    assert driver.info.n_ctx == 1536 and driver.info.max_concurrency == 4
    assert driver.info.context_source == "llama-server /props (per slot)"
    # asked after the model listing accepted the key, and with the same key
    routes = [r["route"] for r in stub.requests]
    assert routes.index("GET /v1/models") < routes.index("GET /props")
    assert stub.calls("GET /props")[0]["headers"]["authorization"].startswith("Bearer ")
    stub.on("GET /props", Reply(404, {}))
    assert stub_driver(stub, probe_context=False).info.n_ctx is None


def chat_on(stub: Stub, workspace: Path, events: list, **config: object) -> ChatSession:
    settings = Settings.from_config(
        Config(model=f"openai:{stub.url}#stub-model", **config), workspace=workspace
    )
    chat = ChatSession(settings, events.append, lambda call, tool: "yes")
    chat.start_new()
    return chat


def test_the_session_says_the_context_and_where_it_came_from(stub: Stub, workspace: Path) -> None:
    stub.on("GET /props", Reply(body=LLAMA_PROPS))
    events: list = []
    chat = chat_on(stub, workspace, events)
    [session] = [e for e in events if type(e).__name__ == "SessionStarted"]
    assert (session.context, session.context_source) == (1536, "llama-server /props (per slot)")
    assert chat.context_size == 1536 and chat.agent.compactor is not None
    chat.close()
    events.clear()
    flagged = chat_on(stub, workspace, events, context_size=1024)  # the flag wins
    [session] = [e for e in events if type(e).__name__ == "SessionStarted"]
    assert (session.context, session.context_source) == (1024, "--context-size")
    flagged.close()


def test_a_server_that_dropped_the_prompt_front_is_an_error_not_a_turn(
    stub: Stub, workspace: Path
) -> None:
    """Ollama behind its default window answers HTTP 200 with prompt_tokens at the
    window: the system prompt and tools were lost, so the run stops and says so."""
    from tests.openai_servers import chat_event

    wide = LLAMA_PROPS | {"default_generation_settings": {"n_ctx": 65536}}
    stub.on("GET /props", Reply(body=wide))
    events = [
        chat_event({"role": "assistant", "content": "Sure."}),
        chat_event({}, finish="stop"),
        chat_event(None, usage={"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42}),
    ]
    stub.on("POST /v1/chat/completions", Reply(events=events))
    seen: list = []
    chat = chat_on(stub, workspace, seen)
    result = chat.send("x " * 3000)  # thousands of tokens sent, 40 counted
    assert result.status == "error" and result.exit_code == 1
    assert result.error is not None and "dropped part of the prompt" in result.error
    assert "llama-server /props" in result.error
    chat.close()


def test_models_listing_without_the_model_is_not_a_context(stub: Stub) -> None:
    stub.on("GET /v1/models", Reply(body={"data": [{"id": "other", "max_model_len": 4096}]}))
    assert detect_context(stub.url, "stub-model") is None


@pytest.mark.parametrize(
    "routes",
    [
        {"GET /api/v1/models": {"models": [{"key": "stub-model", "loaded_instances": 5}]}},
        {"GET /props": {"default_generation_settings": "[" * 100_000}},
        {"POST /api/show": {"model_info": {"x.context_length": True}, "parameters": 7}},
        {"GET /v1/models": {"data": "not a list"}},
    ],
    ids=["instances-not-a-list", "a-string-of-brackets", "wrong-types", "listing-not-a-list"],
)
def test_a_hostile_answer_teaches_nothing_and_never_raises(stub: Stub, routes: dict) -> None:
    for route, body in routes.items():
        stub.on(route, Reply(body=body))
    found = detect_context(stub.url, "stub-model")
    assert found is None or found.source == "Ollama's default window"


def test_a_deeply_nested_answer_is_not_a_recursion_error() -> None:
    """json.loads recurses once per bracket: 100,000 of them would end the run."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from drivers.server_facts import http_json

    class Deep(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return None

        def do_GET(self) -> None:
            body = b"[" * 100_000
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Deep)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert http_json()(f"{url}/props", None) is None
        assert detect_context(f"{url}/v1", "m") is None
    finally:
        server.shutdown()
        server.server_close()
