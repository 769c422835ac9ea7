"""The map as text the model reads: the most important definitions, grouped by file,
as many as fit a token budget.

How many fit is found by bisection over the ranked list (rendering is cheap; counting
tokens is the cost), so the map fills its budget without passing it. Each definition is
its line number and its first line of source, the signature a model needs to call it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent.tools.repomap.rank import Ranked

TokenCount = Callable[[str], int]
HEADER = "Repository map (the definitions the code uses most, by file; line: source):"


def approx_tokens(text: str) -> int:
    """About 3 characters a token for code, as the context budget counts without a
    tokenizer (agent.loop.context)."""
    return -(-len(text) // 3)


def _text(chosen: Sequence[Ranked], footer: str) -> str:
    by_file: dict[str, list[Ranked]] = {}
    for r in chosen:  # files in order of their best definition
        by_file.setdefault(r.path, []).append(r)
    lines = [HEADER]
    for path, defs in by_file.items():
        lines.append(f"{path}:")
        lines += [f"  {d.line}: {d.signature}" for d in sorted(defs, key=lambda d: d.line)]
    if footer:
        lines.append(footer)
    return "\n".join(lines)


def render(
    ranked: Sequence[Ranked],
    budget: int,
    *,
    count: TokenCount = approx_tokens,
    files: int = 0,
    skipped: str = "",
) -> str:
    """The largest prefix of `ranked` whose text fits `budget` tokens ("" when not even
    the header fits). `files`: how many files were mapped; `skipped`: what was not."""

    def footer(k: int) -> str:
        shown = len({r.path for r in ranked[:k]})
        return f"({shown} of {files} files shown" + (f"; {skipped})" if skipped else ")")

    if budget <= 0:
        return ""
    low, high = 0, min(len(ranked), budget)  # each definition costs a token at least
    best = ""
    while low <= high:
        mid = (low + high) // 2
        text = _text(ranked[:mid], footer(mid))
        if count(text) <= budget:
            best, low = text, mid + 1
        else:
            high = mid - 1
    return best
