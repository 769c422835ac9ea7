"""Harmony parsing cost: is streaming O(n) in the completion, whatever its size?

    .venv/bin/python bench/harmony_bench.py [--quick]

A completion is realistic gpt-oss output: an analysis message, a commentary preamble and
a write_file call whose arguments carry file contents full of quotes, escapes and
Harmony markers (the worst case for the JSON-string-aware body scan). Chunks are one
token of about 4 characters, as a local model streams. The baseline is a naive harness
that re-parses the accumulated text on every chunk, which is O(n^2).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.parsing import HarmonyStreamParser
from agent.parsing.harmony import parse_harmony

CHARS_PER_TOKEN = 4
_LINE = 'print("<|call|> and <|end|> are text here", x < y, "\\"quoted\\"")  # ok\n'


def completion(chars: int) -> str:
    """About `chars` characters of analysis, preamble and one call."""
    third = max(chars // 3, 1)
    thinking = ("I should check the parser before editing it. " * (third // 45 + 1))[:third]
    content = (_LINE * (third // len(_LINE) + 1))[:third]
    body = json.dumps({"path": "src/x.py", "content": content}, ensure_ascii=False)
    return (
        f"<|channel|>analysis<|message|>{thinking}<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Writing the file now.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.write_file <|constrain|>json"
        f"<|message|>{body}<|call|>"
    )


def chunks(text: str) -> list[str]:
    return [text[i : i + CHARS_PER_TOKEN] for i in range(0, len(text), CHARS_PER_TOKEN)]


def streamed(parts: list[str]) -> int:
    parser = HarmonyStreamParser()
    calls = 0
    for part in parts:
        calls += sum(e.kind == "tool_call" for e in parser.feed(part))
    parser.finish()
    return calls


def reparsed(parts: list[str]) -> int:
    text = ""
    for part in parts:
        text += part
        result = parse_harmony(text)
    return len(result.calls)


def best_of(fn, arg, repeat: int) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        assert fn(arg) == 1
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    args = ap.parse_args()
    # completion(n) comes out at ~0.7 n characters: 11,500 ~ 2k tokens, 365,000 ~ 64k tokens,
    # the two ends of the linearity check
    sizes = [1_000, 11_500, 16_000] if args.quick else [1_000, 11_500, 16_000, 64_000, 365_000]
    repeat = 3 if args.quick else 5
    head = ("chars", "tokens", "stream ms", "us/char", "reparse ms", "ratio")
    print(" ".join(f"{h:>{w}}" for h, w in zip(head, (7, 7, 10, 8, 11, 7), strict=True)))
    per_char: dict[int, float] = {}
    for size in sizes:
        text = completion(size)
        parts = chunks(text)
        s = best_of(streamed, parts, repeat)
        per_char[size] = s / len(text)
        if size <= 16_000:  # the quadratic baseline gets slow beyond this
            naive = best_of(reparsed, parts, 1)
            tail = f" {naive * 1e3:>11.1f} {naive / s:>6.0f}x"
        else:
            tail = f" {'-':>11} {'-':>7}"
        print(f"{len(text):>7} {len(parts):>7} {s * 1e3:>10.2f} {s * 1e6 / len(text):>8.2f}{tail}")
    print("us/char flat across sizes = linear; ratio = re-parsing cost / streaming cost")

    if 365_000 in per_char:
        ratio = per_char[365_000] / per_char[11_500]
        print(f"per-token cost at ~64k vs ~2k tokens: {ratio:.2f}x (target <= 1.2)")


if __name__ == "__main__":
    main()
