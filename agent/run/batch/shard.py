"""`--shard K/N`: which share of a tasks file this process runs.

A task belongs to shard `1 + sha256(id) mod N`: the same on every machine and every
Python (the built-in `hash()` is salted per process), and independent of the line order,
so a tasks file edited between runs keeps each unchanged task on its shard. A bad line
has no id; it goes by its label ("line 7"), so it is reported by exactly one shard.

With no flag a scheduler's own variables say it, so bosun runs unchanged inside one:
Slurm job arrays (`SLURM_ARRAY_TASK_ID` minus `SLURM_ARRAY_TASK_MIN`, of
`SLURM_ARRAY_TASK_COUNT`) and Kubernetes indexed Jobs (`JOB_COMPLETION_INDEX`, of
`BOSUN_SHARD_COUNT`, which the Job's spec sets to its `completions`: Kubernetes passes
the index but not the count).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from agent.errors import UsageError

SHARD_COUNT_VAR = "BOSUN_SHARD_COUNT"
_SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `count`; `Shard(1, 1)` is the whole file."""

    index: int
    count: int
    source: str = "--shard"  # where it came from, for messages

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def whole(self) -> bool:
        return self.count == 1

    def holds(self, key: str) -> bool:
        return shard_of(key, self.count) == self.index


WHOLE = Shard(1, 1, "default")


def shard_of(key: str, count: int) -> int:
    """The 1-based shard of a task id (or a bad line's label) among `count`."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % count


def parse_shard(text: str, source: str = "--shard") -> Shard:
    found = _SPEC.fullmatch(text)
    if found is None:
        raise UsageError(f"{source} must be K/N (as in 2/8), not {text!r}")
    index, count = int(found[1]), int(found[2])
    if count < 1 or not 1 <= index <= count:
        raise UsageError(f"{source} {text!r}: K must be between 1 and N, and N at least 1")
    return Shard(index, count, source)


def _int_var(env: Mapping[str, str], name: str) -> int:
    raw = env.get(name, "")
    try:
        return int(raw)
    except ValueError:
        raise UsageError(f"{name}={raw!r} is not a whole number") from None


def shard_from_env(env: Mapping[str, str]) -> Shard:
    """The scheduler's shard, or the whole file outside any array job."""
    if env.get("SLURM_ARRAY_TASK_ID"):
        if not env.get("SLURM_ARRAY_TASK_COUNT"):
            raise UsageError("SLURM_ARRAY_TASK_ID is set without SLURM_ARRAY_TASK_COUNT")
        first = _int_var(env, "SLURM_ARRAY_TASK_MIN") if env.get("SLURM_ARRAY_TASK_MIN") else 0
        count = _int_var(env, "SLURM_ARRAY_TASK_COUNT")
        index = _int_var(env, "SLURM_ARRAY_TASK_ID") - first
        where = "the Slurm array (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN)"
        if count < 1 or not 0 <= index < count:
            raise UsageError(
                f"{where} gives index {index} of {count}: use a contiguous --array"
                " such as 0-7, or pass --shard K/N"
            )
        return Shard(index + 1, count, "Slurm array")
    if env.get("JOB_COMPLETION_INDEX"):
        if not env.get(SHARD_COUNT_VAR):
            raise UsageError(
                f"JOB_COMPLETION_INDEX is set but {SHARD_COUNT_VAR} is not: set it to the"
                " Job's completions (or pass --shard K/N)"
            )
        index = _int_var(env, "JOB_COMPLETION_INDEX")
        count = _int_var(env, SHARD_COUNT_VAR)
        if count < 1 or not 0 <= index < count:
            raise UsageError(f"JOB_COMPLETION_INDEX={index} is outside {SHARD_COUNT_VAR}={count}")
        return Shard(index + 1, count, "Kubernetes indexed Job")
    return WHOLE


def resolve_shard(flag: str | None, env: Mapping[str, str]) -> Shard:
    """`--shard` wins over the environment."""
    return parse_shard(flag) if flag is not None else shard_from_env(env)
