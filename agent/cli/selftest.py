"""`bosun selftest`: load a model and evaluate a real multi-token prompt.

A llama.cpp build that crashes on batched prompts (the AMX segfault) dies here, in a
command made for it, instead of in the middle of someone's session.
"""

from __future__ import annotations

import time

from agent.history import System, User
from agent.protocol.render import render
from drivers import open_driver
from drivers.base import Request, collect


def selftest(model: str) -> str:
    start = time.perf_counter()
    driver = open_driver(model)
    loaded = time.perf_counter() - start
    try:
        prompt = render(
            [System("You are a helpful assistant."), User("Name three colours of the rainbow.")]
        )
        done = collect(driver.stream(Request(prompt, max_tokens=24)))
    finally:
        driver.close()
    u = done.usage
    rate = u.completion_tokens / (u.ms / 1000) if u.ms else 0.0
    return (
        f"{driver.model}: loaded in {loaded:.1f}s; prompt {u.prompt_tokens} tokens,"
        f" {u.completion_tokens} generated in {u.ms / 1000:.2f}s ({rate:.0f} tok/s):"
        f" {done.text.strip()[:60]!r}"
    )
