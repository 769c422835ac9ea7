"""Context benchmark: a 100-turn session on the real SmolLM2, compaction on vs off.

    .venv/bin/python bench/context_bench.py [--turns 100] [--context-size 4096]

Each turn the model reads a file (a ~250-token result). The replies are the model's own
generation, forced to a scripted call by a GBNF grammar of exactly that text, so both
runs make the same calls while prompt evaluation, the KV cache and the summaries are
all real. Printed side by side: prompt tokens and the fraction the KV cache served, per
turn (every 5th, and every turn a compaction happened); the turn at which the run
without compaction overflows; and what each compaction cost.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent import events as ev
from agent.loop.budget import Budget
from agent.loop.compact import SUMMARY_ASK
from agent.run.assemble import Assembly, start_session
from agent.run.models import open_model
from agent.run.settings import Settings
from agent.session import SessionLog
from drivers.base import Chunk, Request

FILES = 8


def module(i: int) -> str:
    return "\n".join(f"def f{i}_{j}(x):\n    return x * {j} + {i}\n" for j in range(20))


def literal(text: str) -> str:
    return "root ::= " + json.dumps(text)


class Forced:
    """The real driver, its replies forced to the script's next call by a grammar (the
    prompt is evaluated for real; a summary request is answered freely)."""

    def __init__(self, inner: Any, replies: Iterator[str]) -> None:
        self.inner, self.replies = inner, replies
        self.model, self.info = inner.model, inner.info

    def stream(self, request: Request, **options: Any) -> Iterator[Chunk]:
        if SUMMARY_ASK not in request.prompt:
            request = replace(request, grammar=literal(next(self.replies)))
        return self.inner.stream(request, **options)

    def close(self) -> None:
        self.inner.close()


def session(turns: int, n_ctx: int, compact: bool, workspace: Path) -> dict[str, Any]:
    driver, profile = open_model("smollm2-135m", context_size=n_ctx)
    replies = (
        "<tool_call>\n"
        + json.dumps({"name": "read_file", "arguments": {"path": f"mod{i % FILES}.py"}})
        + "\n</tool_call>"
        for i in range(turns)
    )
    events: list[tuple[float, ev.AgentEvent]] = []
    log = SessionLog("bench", workspace.parent / "sessions")
    settings = Settings(workspace=workspace, approve="auto", constrain="never", context_size=n_ctx)
    assembly = Assembly(settings, Forced(driver, replies), profile, None)  # type: ignore[arg-type]
    agent = assembly.agent(
        lambda e: events.append((time.perf_counter(), e)), on_message=log.message
    )
    agent.budget = Budget(max_turns=turns, max_identical_calls=turns + 1, max_tool_calls=turns + 1)
    if not compact:
        agent.seat.compactor = None
    start_session(agent, log.id)
    started = time.perf_counter()
    result = agent.run("Read the files, one per turn.")
    wall = time.perf_counter() - started
    log.close()
    driver.close()
    rows = [e for _, e in events if isinstance(e, ev.TurnFinished)]
    compactions = [(i, e) for i, (_, e) in enumerate(events) if isinstance(e, ev.Compaction)]
    turn_of = {}
    for index, _ in compactions:
        turn_of[index] = sum(1 for _, e in events[:index] if isinstance(e, ev.TurnFinished)) + 1
    return {
        "rows": rows,
        "result": result,
        "wall": wall,
        "compactions": [(turn_of[i], e) for i, e in compactions],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=100)
    ap.add_argument("--context-size", type=int, default=4096)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        for i in range(FILES):
            (workspace / f"mod{i}.py").write_text(module(i))
        on = session(args.turns, args.context_size, True, workspace)
        off = session(args.turns, args.context_size, False, workspace)
    n = args.context_size
    print(f"SmolLM2-135M, context {n} tokens, {args.turns} turns, one file read per turn\n")
    marks = {turn for turn, _ in on["compactions"]}
    print(f"{'turn':>4}  {'on: prompt':>10}  {'cached':>6}  {'off: prompt':>11}  {'cached':>6}")
    for t in range(1, args.turns + 1):
        if t % 5 and t not in marks and t != 1:
            continue
        a = on["rows"][t - 1] if t <= len(on["rows"]) else None
        b = off["rows"][t - 1] if t <= len(off["rows"]) else None
        cells = []
        for row in (a, b):
            if row is None or not row.prompt_tokens:
                cells += ["—", "—"]
            else:
                cells += [str(row.prompt_tokens), f"{row.cached_tokens / row.prompt_tokens:.0%}"]
        note = "  ← compaction before this turn" if t in marks else ""
        print(f"{t:>4}  {cells[0]:>10}  {cells[1]:>6}  {cells[2]:>11}  {cells[3]:>6}{note}")
    print()
    for label, run in (("on", on), ("off", off)):
        r = run["result"]
        rows = run["rows"]
        served = sum(x.cached_tokens for x in rows) / max(1, sum(x.prompt_tokens for x in rows))
        print(
            f"compaction {label:>3}: status {r.status}, {r.turns} turns, {r.tool_calls} calls,"
            f" max prompt {max(x.prompt_tokens for x in rows)}, cache served {served:.0%},"
            f" wall {run['wall']:.1f} s" + (f" ({r.error})" if r.error else "")
        )
    print("\ncompactions (on):")
    print(f"{'turn':>4}  {'before':>6}  {'after':>6}  {'stubs':>5}  {'summary':>7}  {'ms':>6}")
    for turn, c in on["compactions"]:
        summary = f"{c.elided_turns} turns" if c.summary else "—"
        print(
            f"{turn:>4}  {c.tokens_before:>6}  {c.tokens_after:>6}  {len(c.stubs):>5}"
            f"  {summary:>7}  {c.ms:>6}"
        )


if __name__ == "__main__":
    main()
