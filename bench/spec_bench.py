"""Prompt-lookup speculation: decode tokens/s with and without, per model and reply kind.

    .venv/bin/python bench/spec_bench.py [--models smollm2-135m,gemma3-270m]
                                         [--repeats 3] [--max-tokens 160]

Reply kinds: copy-heavy (a write_file copying a file just read; an edit_file whose `old`
quotes it) and fresh prose (a story, nothing to copy). Each reply is decoded with
`--speculate off` and `on`, interleaved (off, on, off, on, ...) on one loaded model
whose KV cache already holds the prompt, so the time is decoding; the table gives the
median tokens/s of the repeats, the ratio, how many drafted tokens were taken, and
whether the two replies were the same text (with flash attention on, as bosun runs, a
batch can round a near-tie the other way: drivers/llama_speculate.py).

Targets: >= 1.5x on copy-heavy replies, >= 0.97x on prose. `auto` speculates only where
the model runs on a GPU: on a CPU a batch costs nearly a step per token it holds. The
machine's load average is printed with the numbers: timings taken while other work runs
are not comparable.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.history import AssistantToolUse, System, ToolCall, ToolResult, User
from agent.protocol.profile import profile_for
from agent.tools import default_registry
from drivers.base import Request
from drivers.llama_cpp import open_llama

ROOT = Path(__file__).resolve().parent.parent
# Real code past its docstring (a reply that opens with an escaped \"\"\" ends at once).
SOURCE = "".join((ROOT / "drivers" / "llama_state.py").read_text().splitlines(True)[8:50])


def prompts(model: str) -> dict[str, str]:
    """Reply kind -> prompt. The copying kinds begin the call in the prompt, so the
    model is writing the argument from its first token."""
    profile = profile_for(model)
    specs = default_registry().specs()
    system = System("You are a coding agent. Use the tools.")
    call = ToolCall("call_1", "read_file", {"path": "state.py"})
    read = [AssistantToolUse(call), ToolResult("call_1", SOURCE)]

    def render(*messages: Any) -> str:
        return profile.render([system, *messages], specs)

    head = '<tool_call>\n{"name": '
    return {
        "copy (write_file)": render(User("Copy state.py to state_copy.py."), *read)
        + head
        + '"write_file", "arguments": {"path": "state_copy.py", "content": '
        + json.dumps(SOURCE[:30])[:-1],
        "copy (edit_file)": render(User("In state.py rename _plain to as_json."), *read)
        + head
        + '"edit_file", "arguments": {"path": "state.py", "old": "def _plain',
        "prose": render(User("Write a short story about a lighthouse keeper.")),
    }


def decode(driver: Any, prompt: str, mode: str, max_tokens: int) -> tuple[float, int, str]:
    """(decode tokens/s, tokens, text) of one reply: from its first token to its last."""
    driver.speculate = mode
    text, first, usage = "", None, None
    for chunk in driver.stream(Request(prompt, max_tokens=max_tokens)):
        if first is None:
            first = time.perf_counter()
        text += chunk.text
        usage = chunk.usage or usage
    end = time.perf_counter()
    n = usage.completion_tokens if usage else 0
    return (n - 1) / max(end - (first or end), 1e-9), n, text


def bench(model: str, repeats: int, max_tokens: int) -> list[list[str]]:
    driver = open_llama(model, prefix_cache=False)
    rows = []
    try:
        for kind, prompt in prompts(driver.model).items():
            decode(driver, prompt, "off", 8)  # the prompt into the KV cache
            rates: dict[str, list[float]] = {"off": [], "on": []}
            texts: dict[str, str] = {}
            taken = drafted = n = 0
            for _ in range(repeats):
                for mode in ("off", "on"):
                    rate, n, texts[mode] = decode(driver, prompt, mode, max_tokens)
                    rates[mode].append(rate)
                    if mode == "on":
                        taken += driver.last_speculation.get("accepted", 0)
                        drafted += driver.last_speculation.get("drafted", 0)
            off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
            rows.append(
                row := [
                    model,
                    kind,
                    str(n),
                    f"{off:.1f}",
                    f"{on:.1f}",
                    f"{on / off:.2f}x",
                    f"{taken}/{drafted}",
                    "yes" if texts["off"] == texts["on"] else "no",
                ]
            )
            print("  ".join(row), flush=True)  # as it goes: a long run shows progress
    finally:
        driver.close()
    return rows


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="smollm2-135m,gemma3-270m")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=160)
    args = parser.parse_args()
    load = os.getloadavg()
    rows: list[list[str]] = []
    for model in args.models.split(","):
        rows += bench(model.strip(), args.repeats, args.max_tokens)
    after = os.getloadavg()
    table(
        f"decode tokens/s, --speculate off vs on (median of {args.repeats}, interleaved)",
        ["model", "reply", "tokens", "off tok/s", "on tok/s", "on/off", "taken", "same"],
        rows,
    )
    print(
        f"\nload average (1 min) before {load[0]:.2f}, after {after[0]:.2f};"
        f" {os.cpu_count()} CPUs. Targets: copy >= 1.5x, prose >= 0.97x."
    )


if __name__ == "__main__":
    main()
