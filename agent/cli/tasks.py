"""`bosun tasks merge DIR…`: the shards of a batch (`run --tasks --results DIR`)
joined into one summary line; exit 1 while ids are missing or any task failed. Also
`bosun run`'s options for a batch past one machine, and the check that they come with
--tasks."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import EXIT_USAGE, fail


class Executor(StrEnum):
    local = "local"
    ray = "ray"


ShardOpt = Annotated[
    str | None,
    typer.Option(
        metavar="K/N",
        help="With --tasks: only share K of N, by task id (default: a Slurm array's or"
        " a Kubernetes indexed Job's own; BOSUN_SHARD_COUNT gives the Job's count).",
    ),
]
ResultsOpt = Annotated[
    Path | None,
    typer.Option(
        metavar="DIR",
        help="With --tasks: one JSONL file per task in DIR; a rerun skips the tasks"
        " recorded there (bosun tasks merge joins shards).",
    ),
]
RedoOpt = Annotated[
    bool, typer.Option(help="With --results: run every task again, recorded or not.")
]
ExecutorOpt = Annotated[
    Executor,
    typer.Option(help="With --tasks: local (threads here) or ray (a Ray cluster; bosun[ray])."),
]
RayAddressOpt = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        metavar="ADDR",
        help="With --executor ray: the cluster to join (default: RAY_ADDRESS, else the"
        " one `ray start` made on this machine, else a new one for this batch).",
    ),
]


def batch_flags(
    tasks: Path | None,
    shard: str | None,
    results: Path | None,
    redo: bool,
    executor: Executor,
    ray_address: str | None,
) -> None:
    """A batch flag without --tasks (or --redo without --results) is a usage error:
    silently ignoring `--shard 1/8` would run the whole thing."""
    given = {
        "--shard": shard is not None,
        "--results": results is not None,
        "--redo": redo,
        "--executor ray": executor is Executor.ray,
        "--ray-address": ray_address is not None,
    }
    named = [flag for flag, on in given.items() if on]
    if tasks is None and named:
        fail(f"{named[0]} needs --tasks FILE", EXIT_USAGE)
    if redo and results is None:
        fail("--redo needs --results DIR", EXIT_USAGE)
    if ray_address is not None and executor is not Executor.ray:
        fail("--ray-address needs --executor ray", EXIT_USAGE)


tasks_app = typer.Typer(help="Batch results (run --tasks --results DIR).", no_args_is_help=True)


@tasks_app.command("merge")
def tasks_merge(
    folders: Annotated[list[Path], typer.Argument(metavar="DIR...", help="--results folders.")],
) -> None:
    """One summary of the folders' results: status counts, tokens, wall time, and the
    ids (and shards) still missing. Exit 0 when every task is done, 1 when any failed or
    is missing or a file was refused (stderr names them), 2 when there are no results."""
    from agent.run.batch.merge import merge
    from agent.untrusted import json_line, visible

    merged = merge(folders)
    record = merged.summary()
    sys.stdout.write(json_line(record) + "\n")
    for line in merged.refused[:10]:  # a link or a FIFO is never read: each named
        sys.stderr.write(f"bosun: error: {visible(line)}\n")
    if len(merged.refused) > 10:
        sys.stderr.write(f"bosun: error: and {len(merged.refused) - 10} more files refused\n")
    missing = record["missing_ids"]
    if missing:
        shown = ", ".join(visible(i) for i in missing[:10])
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        shards = record["missing_shards"]
        why = f" (no summary from shard {', '.join(shards)})" if shards else ""
        sys.stderr.write(
            f"bosun: {len(missing)} of {record['tasks']} tasks missing{why}: {shown}{more}\n"
        )
    clean = not missing and record["failed"] == 0 and not merged.refused
    raise typer.Exit(0 if clean else 1)
