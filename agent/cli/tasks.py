"""`bosun tasks merge DIR…`: the shards of a batch (`run --tasks --results DIR`)
joined into one summary line; exit 1 while ids are missing or any task failed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

tasks_app = typer.Typer(help="Batch results (run --tasks --results DIR).", no_args_is_help=True)


@tasks_app.command("merge")
def tasks_merge(
    folders: Annotated[list[Path], typer.Argument(metavar="DIR...", help="--results folders.")],
) -> None:
    """One summary of the folders' results: status counts, tokens, wall time, and the
    ids (and shards) still missing. Exit 0 when every task is done, 1 when any failed or
    is missing (stderr names them), 2 when there are no results."""
    from agent.run.batch.merge import merge
    from agent.untrusted import json_line, visible

    merged = merge(folders)
    record = merged.summary()
    sys.stdout.write(json_line(record) + "\n")
    missing = record["missing_ids"]
    if missing:
        shown = ", ".join(visible(i) for i in missing[:10])
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        shards = record["missing_shards"]
        why = f" (no summary from shard {', '.join(shards)})" if shards else ""
        sys.stderr.write(
            f"bosun: {len(missing)} of {record['tasks']} tasks missing{why}: {shown}{more}\n"
        )
    raise typer.Exit(0 if not missing and record["failed"] == 0 else 1)
