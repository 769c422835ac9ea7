"""Tool-call parsing cost: is streaming O(n), and how much does it save over re-parsing?

    .venv/bin/python bench/parse_bench.py [--quick]

Completions are realistic model output: a think block, prose with `inline code`, fenced
code, and `<tool_call>` envelopes whose arguments carry file contents. A token is
approximated as 4 characters and each chunk is one token, as a local model streams.
The baseline is what a naive harness does: re-run the one-shot parser over the whole
accumulated text on every chunk, which is O(n^2) in the completion.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.parsing import GenericStreamParser, parse_tool_calls, parser_for
from agent.parsing.formats import FORMAT_REASONING, THINK_PAIR
from agent.parsing.shapes import SHAPES, write_call

CHARS_PER_TOKEN = 4
_WORDS = [
    "the",
    "file",
    "parser",
    "returns",
    "a",
    "list",
    "of",
    "tokens",
    "so",
    "we",
    "should",
    "check",
    "each",
    "branch",
    "before",
    "editing",
    "it",
    "and",
    "then",
    "run",
    "the",
    "tests",
    "again",
    "to",
    "confirm",
    "nothing",
    "else",
    "broke",
    "in",
    "module",
]


def _prose(rng: random.Random, words: int) -> str:
    out = []
    for k in range(words):
        w = rng.choice(_WORDS)
        out.append(f"`{w}()`" if k % 17 == 5 else w)
    return " ".join(out) + ".\n\n"


def _code(rng: random.Random, lines: int) -> str:
    body = "\n".join(
        f"    {rng.choice(_WORDS)} = {rng.choice(_WORDS)}({k}, {{'k': [{k}]}})"
        for k in range(lines)
    )
    return f"```python\ndef f():\n{body}\n```\n\n"


def _call(rng: random.Random) -> str:
    content = "".join(_code(rng, 6)) + "# mentions </tool_call> inside a string\n"
    args = {"path": f"src/{rng.choice(_WORDS)}.py", "content": content}
    return (
        "<tool_call>\n" + json.dumps({"name": "write_file", "arguments": args}) + "\n</tool_call>\n"
    )


def completion(tokens: int, seed: int = 0) -> str:
    """About `tokens` tokens of mixed output, ending on a whole piece (never mid-call)."""
    rng = random.Random(seed)
    parts = ["<think>\n" + _prose(rng, 40) + "</think>\n\n"]
    size = len(parts[0])
    while size < tokens * CHARS_PER_TOKEN:
        kind = rng.random()
        piece = _prose(rng, 60) if kind < 0.5 else _code(rng, 8) if kind < 0.8 else _call(rng)
        parts.append(piece)
        size += len(piece)
    return "".join(parts)


def chunks_of(text: str) -> list[str]:
    return [text[i : i + CHARS_PER_TOKEN] for i in range(0, len(text), CHARS_PER_TOKEN)]


def stream(chunks: list[str]) -> int:
    parser = GenericStreamParser()
    n = 0
    for c in chunks:
        n += len(parser.feed(c))
    return n + len(parser.finish())


def reparse(chunks: list[str]) -> int:
    acc = ""
    n = 0
    for c in chunks:
        acc += c
        n += len(parse_tool_calls(acc).calls)
    return n


def format_completion(fmt: str, tokens: int, seed: int) -> str:
    """About `tokens` tokens as a model of `fmt` writes them: reasoning in its markers,
    prose, code, and calls in its own markup whose arguments carry file contents."""
    rng = random.Random(seed)
    pair = FORMAT_REASONING.get(fmt, THINK_PAIR) or THINK_PAIR
    parts = [pair[0] + _prose(rng, 40) + pair[1] + "\n\n"]
    size = len(parts[0])
    while size < tokens * CHARS_PER_TOKEN:
        kind = rng.random()
        if kind < 0.5:
            piece = _prose(rng, 60)
        elif kind < 0.8:
            piece = _code(rng, 8)
        else:
            args = {"path": f"src/{rng.choice(_WORDS)}.py", "content": _code(rng, 6)}
            piece = (write_call(fmt, "write_file", args) or "") + "\n"
        parts.append(piece)
        size += len(piece)
    return "".join(parts)


def stream_format(fmt: str, chunks: list[str]) -> int:
    parser = parser_for(fmt, reasoning=FORMAT_REASONING.get(fmt, THINK_PAIR), opened=False)
    n = 0
    for c in chunks:
        n += len(parser.feed(c))
    return n + len(parser.finish())


def format_table(repeat: int, clock: Callable[[], float]) -> None:
    """Per format: MB/s on 2k-token completions and on their 64k concatenation, and the
    per-token cost ratio (linear means about 1)."""
    print(f"\n{'format':<18} {'2k MB/s':>8} {'64k MB/s':>9} {'64k/2k per token':>17}")
    print(f"{'-' * 18} {'-' * 8} {'-' * 9} {'-' * 17}")
    worst = 0.0
    for fmt in sorted(SHAPES):
        short = [format_completion(fmt, 2_048, seed) for seed in range(32)]
        short_chunks = [chunks_of(t) for t in short]
        long_chunks = chunks_of("".join(short))
        t_short = best_of(
            lambda f=fmt, cs=short_chunks: [stream_format(f, c) for c in cs], repeat, clock
        )
        t_long = best_of(lambda f=fmt, cs=long_chunks: stream_format(f, cs), repeat, clock)
        size = sum(map(len, short))
        ratio = (t_long / len(long_chunks)) / (t_short / sum(map(len, short_chunks)))
        worst = max(worst, ratio)
        print(f"{fmt:<18} {size / t_short / 1e6:>8.2f} {size / t_long / 1e6:>9.2f} {ratio:>16.2f}x")
    print(f"worst per-token ratio {worst:.2f}x (target <= 1.2)")


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def best_of(fn: Callable[[], object], repeat: int, clock: Callable[[], float]) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument(
        "--clock", choices=CLOCKS, default="wall", help="cpu: process time, for a busy machine"
    )
    ap.add_argument("--formats", action="store_true", help="only the per-format table")
    args = ap.parse_args()
    repeat = 2 if args.quick else 5
    clock = CLOCKS[args.clock]
    if args.formats:
        format_table(repeat, clock)
        return

    # The long completion is the short ones back to back, so the two per-token costs
    # differ only by length: a ratio near 1 is what linear means.
    short = [completion(2_048, seed) for seed in range(32)]
    rows: list[tuple[str, str, str]] = []
    short_chunks = [chunks_of(t) for t in short]
    # all 32 in one timing, so both sides walk the same 256 KB (no cache-hot re-runs)
    t_short = best_of(lambda: [stream(c) for c in short_chunks], repeat, clock)
    n_short = sum(map(len, short_chunks))
    long_chunks = chunks_of("".join(short))
    n_long = len(long_chunks)
    t_long = best_of(lambda: stream(long_chunks), repeat, clock)
    size = sum(map(len, short))
    for label, t, n in (("2k", t_short, n_short), (f"{n_long // 1024}k", t_long, n_long)):
        rows.append(
            (
                f"stream, {label}-token completions",
                f"{size / t / 1e6:.2f} MB/s",
                f"{t / n * 1e6:.2f} us/token",
            )
        )
    ratio = (t_long / len(long_chunks)) / (t_short / n_short)
    rows.append(("per-token cost long / 2k", f"{ratio:.2f}x", "target <= 1.2 (linear)"))

    chunks = chunks_of(completion(2_048))[:2_048]
    t_stream = best_of(lambda: stream(chunks), repeat, clock)
    t_reparse = best_of(lambda: reparse(chunks), max(1, repeat // 2), clock)
    rows.append(("re-parse each chunk, 2,048 tok", f"{t_reparse * 1e3:.0f} ms", "O(n^2) baseline"))
    rows.append(("stream, 2,048 tok", f"{t_stream * 1e3:.1f} ms", ""))
    rows.append(("speed-up over re-parse", f"{t_reparse / t_stream:.0f}x", "target >= 50x"))

    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'value':>12}  note ({args.clock} clock)")
    print(f"{'-' * width}  {'-' * 12}  ----")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>12}  {note}")
    format_table(repeat, clock)


if __name__ == "__main__":
    main()
