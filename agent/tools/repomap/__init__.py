"""The repository map: every definition of a workspace's source files (tree-sitter),
ranked by how the code uses them (PageRank), fitted to a token budget.

    scan -> rank -> render:  repo_map(root, personal=..., mentioned=...).text(budget)

Used three ways: in the prompt (agent.loop.repomap), by the `outline` and
`find_symbol` tools (agent.tools.symbols), and by `bosun map`. tree-sitter is imported
only when a file is parsed, so importing this costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.tools.repomap.rank import Ranked, rank_definitions
from agent.tools.repomap.render import TokenCount, approx_tokens, render
from agent.tools.repomap.scan import Scan, scan


@dataclass
class RepoMap:
    scan: Scan
    ranked: list[Ranked]

    def text(self, budget: int, count: TokenCount = approx_tokens) -> str:
        """The map in at most `budget` tokens ("" for nothing to show)."""
        if not self.ranked:
            return ""
        files, skipped = len(self.scan.files), self.scan.skipped_note()
        return render(self.ranked, budget, count=count, files=files, skipped=skipped)

    def to_json(self) -> dict[str, Any]:
        """Every definition, in rank order, and what was left out."""
        return {
            "root": str(self.scan.root),
            "files": len(self.scan.files),
            "skipped": dict(self.scan.skipped),
            "over_cap": self.scan.over_cap,
            "notes": self.scan.notes,
            "definitions": [
                {"path": r.path, "name": r.name, "kind": r.kind, "line": r.line,
                 "signature": r.signature, "rank": round(r.score, 8)}
                for r in self.ranked
            ],
        }  # fmt: skip


def repo_map(
    root: Path,
    *,
    personal: Mapping[str, float] = {},
    mentioned: Iterable[str] = (),
    use_cache: bool = True,
) -> RepoMap:
    """The map of `root`: `personal`, files to rank from (those the session read,
    edited or mentioned); `mentioned`, names the user wrote."""
    found = scan(root, use_cache=use_cache)
    return RepoMap(found, rank_definitions(found.files, personal, mentioned))


__all__ = ["Ranked", "RepoMap", "Scan", "repo_map", "scan"]
