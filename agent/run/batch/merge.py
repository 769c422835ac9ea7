"""`bosun tasks merge DIR…`: the results of a batch's shards (or of several runs of
one) as one summary, and which task ids have no complete result yet.

The ids a batch should have come from the shards' summary files (each names every id
of the tasks file, written when the shard starts), so the ids of a shard that never
ran, or died, are named too. A task recorded in more than one folder counts once.

Files are read as agent.run.batch.safe_files reads them: what no run of bosun leaves in
the folder (a link, a FIFO named `*.jsonl`, a line nested too deep) is skipped and named
in `refused`, never followed, never waited on.
"""

from __future__ import annotations

import fnmatch
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.errors import UsageError
from agent.run.batch.results import MAX_RESULT_BYTES, SUMMARY_GLOB, load_result
from agent.run.batch.safe_files import Refused, folder, read_regular
from agent.run.batch.shard import shard_of
from agent.untrusted import TooDeep, loads

TOKENS = ("prompt_tokens", "cached_tokens", "completion_tokens")


@dataclass
class Merged:
    expected: list[str] = field(default_factory=list)  # in the tasks file's order
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    shards_seen: set[tuple[int, int]] = field(default_factory=set)
    finished_wall_ms: list[int] = field(default_factory=list)
    unfinished: set[str] = field(default_factory=set)  # shards that wrote no final summary
    bad_lines: int = 0
    refused: list[str] = field(default_factory=list)  # one line for each file not read

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


def _read_summary(dir_fd: int, name: str, shown: Path) -> dict[str, Any] | None:
    data = read_regular(dir_fd, name, MAX_RESULT_BYTES, shown)
    try:
        summary = loads(data.decode("utf-8"))
    except TooDeep as exc:
        raise Refused(f"{shown} is {exc}; not read") from None
    except ValueError:  # not JSON (UnicodeDecodeError is a ValueError too): not ours
        return None
    if not isinstance(summary, dict) or not isinstance(summary.get("shard"), str):
        return None
    ids = summary.get("ids")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return None
    return summary


def _names(dir_fd: int, pattern: str) -> list[str]:
    return sorted(n for n in os.listdir(dir_fd) if fnmatch.fnmatchcase(n, pattern))


def merge(folders: list[Path]) -> Merged:
    merged = Merged()
    seen: set[str] = set()
    for where in folders:
        try:
            with folder(where) as fd:
                _merge_folder(merged, seen, fd, where)
        except NotADirectoryError:
            raise UsageError(f"not a results folder: {where}") from None
        except OSError as exc:
            raise UsageError(f"cannot read the results folder {where}: {exc.strerror}") from None
    if not merged.shards_seen and not merged.results:
        refused = f"; {merged.refused[0]}" if merged.refused else ""
        raise UsageError(
            f"no batch results in {', '.join(map(str, folders))} (made by --results DIR)" + refused
        )
    return merged


def _merge_folder(merged: Merged, seen: set[str], fd: int, where: Path) -> None:
    for name in _names(fd, SUMMARY_GLOB):
        try:
            data = _read_summary(fd, name, where / name)
        except (Refused, OSError) as exc:
            merged.refused.append(_why(exc, where / name))
            continue
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
    for name in _names(fd, "*.jsonl"):
        try:
            record = load_result(fd, name, where / name)
        except (Refused, OSError) as exc:
            merged.refused.append(_why(exc, where / name))
            continue
        if record is None or record["task"] in merged.results:
            continue
        merged.results[record["task"]] = record
        if record["task"] not in seen:  # a result whose summary is gone: still counted
            seen.add(record["task"])
            merged.expected.append(record["task"])


def _why(exc: Exception, shown: Path) -> str:
    if isinstance(exc, Refused):
        return str(exc)
    strerror = exc.strerror if isinstance(exc, OSError) else None
    return f"cannot read {shown}: {strerror or exc}"
