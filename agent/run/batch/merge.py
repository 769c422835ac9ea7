"""`bosun tasks merge DIR…`: the results of a batch's shards (or of several runs of
one) as one summary, and which task ids have no complete result yet.

The ids a batch should have come from the shards' summary files (each names every id
of the tasks file, written when the shard starts), so the ids of a shard that never
ran, or died, are named too. A task recorded in more than one folder counts once.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.errors import UsageError
from agent.run.batch.results import SUMMARY_GLOB, read_result
from agent.run.batch.shard import shard_of

TOKENS = ("prompt_tokens", "cached_tokens", "completion_tokens")


@dataclass
class Merged:
    expected: list[str] = field(default_factory=list)  # in the tasks file's order
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    shards_seen: set[tuple[int, int]] = field(default_factory=set)
    finished_wall_ms: list[int] = field(default_factory=list)
    unfinished: set[str] = field(default_factory=set)  # shards that wrote no final summary
    bad_lines: int = 0

    @property
    def missing(self) -> list[str]:
        return [i for i in self.expected if i not in self.results]

    def missing_shards(self) -> list[str]:
        counts = {n for _k, n in self.shards_seen}
        gone = [
            f"{k}/{n}" for n in sorted(counts) for k in range(1, n + 1)
            if (k, n) not in self.shards_seen
            and any(shard_of(i, n) == k for i in self.missing)
        ]  # fmt: skip
        return gone

    def summary(self) -> dict[str, Any]:
        statuses = Counter(str(r.get("status")) for r in self.results.values())
        done = statuses.get("done", 0)
        record: dict[str, Any] = {
            "type": "summary",
            "tasks": len(self.expected),
            "done": done,
            "failed": len(self.results) - done + self.bad_lines,
            "missing": len(self.missing),
            "statuses": dict(sorted(statuses.items())),
        }
        for key in TOKENS:
            record[key] = sum(_count(r, key) for r in self.results.values())
        record["task_ms"] = sum(_count(r, "duration_ms") for r in self.results.values())
        record["wall_ms"] = max(self.finished_wall_ms, default=0)
        record["shards"] = sorted(f"{k}/{n}" for k, n in self.shards_seen)
        record["missing_shards"] = self.missing_shards()
        record["missing_ids"] = self.missing
        return record


def _count(record: dict[str, Any], key: str) -> int:
    value = record.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _read_summary(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("shard"), str):
        return None
    ids = data.get("ids")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return None
    return data


def merge(folders: list[Path]) -> Merged:
    merged = Merged()
    seen: set[str] = set()
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"not a results folder: {folder}")
        for path in sorted(folder.glob(SUMMARY_GLOB)):
            data = _read_summary(path)
            if data is None:
                continue
            k, _, n = data["shard"].partition("/")
            if k.isdigit() and n.isdigit():
                merged.shards_seen.add((int(k), int(n)))
            for task_id in data["ids"]:
                if task_id not in seen:
                    seen.add(task_id)
                    merged.expected.append(task_id)
            if data.get("finished") is True:
                merged.finished_wall_ms.append(_count(data, "wall_ms"))
                merged.bad_lines += _count(data, "bad_lines")
            else:
                merged.unfinished.add(data["shard"])
        for path in sorted(folder.glob("*.jsonl")):
            record = read_result(path)
            if record is None or record["task"] in merged.results:
                continue
            merged.results[record["task"]] = record
            if record["task"] not in seen:  # a result whose summary is gone: still counted
                seen.add(record["task"])
                merged.expected.append(record["task"])
    if not merged.shards_seen and not merged.results:
        raise UsageError(
            f"no batch results in {', '.join(map(str, folders))} (made by --results DIR)"
        )
    return merged
