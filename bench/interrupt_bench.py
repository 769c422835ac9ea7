"""Ctrl-C while the prompt is being evaluated: how long until the model call returns.

    .venv/bin/python bench/interrupt_bench.py [--model smollm2-135m] [--tokens 3000]

A stop request (the `halt` a Ctrl-C sets) arrives part-way through evaluating a long
prompt. Side by side: bosun's driver, whose stop llama.cpp itself asks for between the
operations of a decode (its abort callback), and the same driver evaluating the prompt
in one piece with nothing asking (as `Llama.generate` does), which can only notice once
the whole prompt is in. Also what the callback costs: prompt evaluation speed both ways,
and a new workspace's first prompt, whose head (system prompt and tools) is evaluated on
its own to be saved for later sessions: stoppable the same way. Target: latency < 0.3 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from drivers.base import Request
from drivers.llama_cpp import open_llama


def prompt_of(driver: object, tokens: int) -> str:
    text, words = "", 0
    while len(driver.tokenize(text)) < tokens:  # type: ignore[attr-defined]
        text += " ".join(f"word{words + i}" for i in range(200)) + "\n"
        words += 200
    return text


def one(
    driver: object, prompt: str, after: float, sliced: bool, head: int = 0
) -> tuple[float, float]:
    """(latency from the stop request to the call's end, seconds of prompt evaluated)."""
    driver.llm.n_tokens = 0  # type: ignore[attr-defined]  # a cold cache every time
    stop, finished = threading.Event(), threading.Event()
    asked: list[float] = []

    def press() -> None:
        if finished.wait(after):  # the call ended first: no stop to time
            return
        asked.append(time.perf_counter())
        stop.set()

    original = driver._prefill  # type: ignore[attr-defined]

    def whole(tokens: list[int], halt: object) -> bool:
        """The prompt in one eval, deaf to the stop until it is all in."""
        pos = driver._cached_prefix(tokens)  # type: ignore[attr-defined]
        driver.llm.n_tokens = pos  # type: ignore[attr-defined]
        driver.llm.eval(tokens[pos:-1])  # type: ignore[attr-defined]
        return True

    if not sliced:
        driver._prefill = whole  # type: ignore[attr-defined]
    began = time.perf_counter()
    presser = threading.Thread(target=press)
    presser.start()
    try:
        for _ in driver.stream(Request(prompt, max_tokens=1, head=head), halt=stop.is_set):  # type: ignore[attr-defined]
            pass
    finally:
        ended = time.perf_counter()
        finished.set()
        driver._prefill = original  # type: ignore[attr-defined]
        presser.join()
    return (ended - asked[0] if asked else 0.0), ended - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--tokens", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args()
    driver = open_llama(opts.model, n_ctx=opts.tokens + 256, prefix_cache=False)
    prompt = prompt_of(driver, opts.tokens)
    n = len(driver.tokenize(prompt))
    speed = {}
    for sliced in (True, False):  # whole-prompt speed, no stop: the cost of slicing
        runs = [one(driver, prompt, 1e9, sliced)[1] for _ in range(2)]
        speed[sliced] = n / min(runs)
    after = min(1.0, 0.4 * n / speed[False])  # part-way through the prompt
    rows = []
    for sliced in (True, False):
        latencies = [one(driver, prompt, after, sliced)[0] for _ in range(opts.repeat)]
        rows.append((sliced, statistics.median(latencies), max(latencies)))
    driver.close()
    # A new workspace: the head (here the prompt's first half) is evaluated on its own
    # first, to be saved; the stop lands inside it, so nothing is ever saved.
    with tempfile.TemporaryDirectory() as folder:
        os.environ["BOSUN_PREFIX_CACHE"] = folder
        driver = open_llama(opts.model, n_ctx=opts.tokens + 256)
        head = [one(driver, prompt, after, True, len(prompt) // 2)[0] for _ in range(opts.repeat)]
        driver.close()
    rows.append(("head", statistics.median(head), max(head)))
    print(f"{opts.model}, a {n}-token prompt, stop requested {after:.2f} s into it\n")
    print(f"{'prompt evaluation':<34}{'stop → return median':>22}{'max':>8}{'prompt tok/s':>14}")
    names = {
        True: "abort callback (bosun)",
        False: "deaf until done (Llama.generate)",
        "head": "bosun, a new workspace's head",
    }
    for kind, median, worst in rows:
        rate = f"{speed[kind]:>14.0f}" if kind in speed else f"{'':>14}"
        print(f"{names[kind]:<34}{median:>20.3f} s{worst:>7.3f}s{rate}")
    print("\ntarget: stop → return < 0.3 s")


if __name__ == "__main__":
    main()
