"""The context guards against llama.cpp's own llama-server (built by `install.sh --dev`),
on 127.0.0.1 with the bundled SmolLM2, so the words and numbers they rely on are the
server's real ones: its refusal of a prompt over the context, the usage of a reply cut
at a full window, and the exact count its `/tokenize` gives of a completion prompt.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.loop.compact import Compactor
from agent.loop.context import Counter, Limits
from drivers.base import ContextOverflow, DriverError, Request, collect
from tests.drivers.prompt_proxy import prompt_proxy
from tests.openai_servers import MODEL_ALIAS, real_llama_server

pytest.importorskip("openai")
pytestmark = pytest.mark.model
N_CTX = 512


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with real_llama_server(tmp_path_factory.mktemp("llama-server") / "log", n_ctx=N_CTX) as url:
        yield url


def driver_on(url: str):  # type: ignore[no-untyped-def]
    from drivers.openai_http import open_openai

    return open_openai(f"openai:{url}#{MODEL_ALIAS}", api="completions")


def words(n: int) -> str:
    """`n` tokens for SmolLM2 (no BOS; "the" and " the" are one token each)."""
    return " ".join(["the"] * n)


def test_a_prompt_over_the_context_is_a_context_overflow(server: str) -> None:
    driver = driver_on(server)
    with pytest.raises(ContextOverflow) as refused:
        collect(driver.stream(Request(words(2000), max_tokens=8)))
    assert "too long for its context" in str(refused.value)
    # and the server is still there for the next, shorter, prompt
    assert collect(driver.stream(Request("Hello", max_tokens=4))).finish_reason in (
        "stop",
        "length",
    )


def test_a_reply_cut_at_the_full_window_reads_as_an_overflow(server: str) -> None:
    """llama-server stops where the window ends, with finish "length", before the
    reply's own limit: the compactor must tell that from a reply that hit max_tokens."""
    driver = driver_on(server)
    done = collect(driver.stream(Request(words(N_CTX - 120), max_tokens=400)))
    usage = done.usage
    assert done.finish_reason == "length" and usage.completion_tokens < 400, usage
    compactor = Compactor(Limits(N_CTX), Counter(None))
    assert compactor.overflowed(done.finish_reason, usage, 400), usage
    short = collect(driver.stream(Request("Count: 1 2 3", max_tokens=6)))
    assert not compactor.overflowed(short.finish_reason, short.usage, 6), short.usage


def test_a_small_loss_is_caught_exactly_by_the_servers_own_count(server: str) -> None:
    # drops the first tenth of every prompt: too small a loss for an estimate to see
    with prompt_proxy(server, lambda prompt: prompt[len(prompt) // 10 :]) as url:
        trimmed = driver_on(url)
        assert trimmed.info.server == "llama-server"
        with pytest.raises(DriverError) as lost:
            collect(trimmed.stream(Request(words(300), max_tokens=4)))
    assert "dropped part of the prompt" in str(lost.value) and "/tokenize" in str(lost.value)
    # the same prompt straight to the server is whole: no false alarm
    whole = collect(driver_on(server).stream(Request(words(300), max_tokens=4)))
    assert whole.usage.prompt_tokens == 300


def test_tools_refused_without_jinja_say_how_to_start_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """llama-server without --jinja answers a request with tools with HTTP 500: said at
    once (no retries of a start flag), with the flag and bosun's own way out."""
    from drivers.openai_http import open_openai

    log = tmp_path_factory.mktemp("no-jinja") / "log"
    with real_llama_server(log, n_ctx=N_CTX, jinja=False) as url:
        driver = open_openai(f"openai:{url}#{MODEL_ALIAS}", sleep=lambda _s: None)
        tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
        with pytest.raises(DriverError) as refused:
            list(driver.chat([{"role": "user", "content": "hi"}], [tool], max_tokens=4))
    said = str(refused.value)
    assert "--jinja" in said and "--api completions" in said and "tries" not in said, said
