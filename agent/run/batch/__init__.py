"""`bosun run --tasks FILE.jsonl`: many headless runs against one model, concurrently,
on this machine or spread over many.

Each task runs through the same Agent as `bosun run` and gets its own history, tools,
workspace and session file; only the driver is shared. Every event on stdout carries
`"task": ID`, lines are written whole under one lock, and a `summary` line ends the
output.

The tasks file is checked completely before the model is loaded, so a typo on line 40
costs nothing. A bad line (not JSON, a missing prompt, a duplicate id…) does not stop
the good ones: it is reported on stdout as a `diagnostic` and then a `result` with
status "error", both tagged `"task": "line N"`, whose message names the file and line;
it counts as a failed task in the summary, so the exit code is 1. With `strict`
(`--strict`), any bad line refuses the whole file before anything runs (a UsageError,
exit 2). A tasks file that is missing, unreadable or empty is always a UsageError.

Past one machine: `--shard K/N` (shard.py) takes a share by task id, `--results DIR`
(results.py) makes a batch resumable and `bosun tasks merge` (merge.py) joins the
shards; a task may carry a workspace that is built where it runs (workspaces.py); and
`--executor ray` (ray_executor.py, remote.py) runs the tasks on a Ray cluster. DIR is
often on a filesystem others write to, so nothing planted under it is followed
(safe_files.py).
"""

from agent.run.batch.runner import run_tasks
from agent.run.batch.task import DriverPool
from agent.run.tasks_file import load_tasks

__all__ = ["DriverPool", "load_tasks", "run_tasks"]
