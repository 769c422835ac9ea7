"""Batch benchmark: `bosun run --tasks` throughput, on a server and on the in-process model.

    .venv/bin/python bench/batch_bench.py [--tasks 8] [--jobs 1,4] [--max-tokens 32] [--repeat 2]
                                          [--only server,in-process]

Starts llama-cpp-python's server on the bundled SmolLM2-135M exactly as the test suite
does (tests/openai_servers.py: one CPU thread, `--interrupt_requests false`), warms
it with one request, then runs the same N one-turn tasks through `agent.run.batch.run_tasks`
at each --jobs value and prints: jobs, tasks, wall s (best of --repeat), tasks/minute,
and the speed-up over the first --jobs value.

llama-cpp-python's server holds one model and one KV cache behind a lock, so it answers
one request at a time: extra jobs can only overlap bosun's own per-task work (prompt
rendering, HTTP, session files) with generation, not generation with generation. Expect
a ratio near 1 here; a server with parallel slots (llama.cpp's `llama-server -np 4`,
vLLM) is where --jobs pays off.

Then the same N tasks on the in-process model (`--model smollm2-135m`), three ways, each
on a newly opened driver: every task evaluating the system prompt and tools itself (what
N separate `bosun run`s cost before warm starts: KV cache emptied before each task, no
saved states), the batch sharing the head with an empty state cache (its first task
evaluates and saves it, the others find it in memory), and again with the state saved
(as the next run of the batch would: no task evaluates the head). States go to a
temporary folder. Prints wall seconds (best of --repeat, the three ways interleaved so
they share the machine's noise), prompt, cached and completion tokens, and the speed-up.

`--only ray` (needs Ray: `pip install 'bosun[ray]'`): starts a Ray cluster on 127.0.0.1
(`ray start --head --num-cpus 2`, tests/ray_cluster.py), and runs the same N tasks with
`--jobs 2` two ways, side by side: the local executor (threads of this process) and
`--executor ray` (2 Ray tasks at a time on a served model; 2 actors, each loading the
model, for the in-process one). First on the scripted model, which answers at once, so
the difference is Ray's own overhead (joining the cluster, shipping each task and its
events); then on the in-process model, where the local executor has one model and one
KV cache (a task at a time whatever --jobs says, on every core) and Ray has one per
actor (each on its share of the cluster's CPUs: 1 thread here). Model loading is counted
on both sides, and no saved head state is kept between batches (each model evaluates
the head once); one warm-up Ray run first (its worker processes are started then, not
in the timed runs).

    .venv/bin/python bench/batch_bench.py --only ray --tasks 16 --max-tokens 16 --repeat 1
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.run.batch import run_tasks
from agent.run.settings import Settings

PROMPTS = [
    "Say hello.",
    "What is 2+2?",
    "Name a primary color.",
    "Write one word that rhymes with cat.",
    "What is the capital of France?",
    "Count from one to three.",
    "Say goodbye.",
    "Name a fruit.",
]


def write_tasks(path: Path, n: int, max_tokens: int) -> None:
    lines = [
        json.dumps(
            {
                "id": f"t{i}",
                "prompt": PROMPTS[i % len(PROMPTS)],
                "max_turns": 1,
                "max_tokens": max_tokens,
            }
        )
        for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def run_batch(
    tasks: Path,
    spec: str,
    workspace: Path,
    jobs: int,
    max_tokens: int,
    driver=None,
    trace: Path | None = None,
) -> dict:
    out = io.StringIO()
    started = time.perf_counter()
    code = run_tasks(
        Settings(
            model=spec,
            workspace=workspace,
            jobs=jobs,
            max_turns=1,
            max_tokens=max_tokens,
            api=None if driver is not None else "completions",
            trace=trace,
        ),
        tasks,
        out=out,
        err=io.StringIO(),
        driver=driver,
    )
    wall = time.perf_counter() - started
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    summary = lines[-1]
    statuses = [e["status"] for e in lines if e["type"] == "result"]
    broken = [s for s in statuses if s not in ("done", "max_turns")]
    if broken:
        raise SystemExit(f"jobs={jobs}: tasks failed: {broken} (exit {code})")
    return {
        "wall": wall,
        "completion_tokens": summary["completion_tokens"],
        "prompt_tokens": summary["prompt_tokens"],
        "cached_tokens": summary["cached_tokens"],
    }


class Unshared:
    """The in-process driver as separate `bosun run`s use it: every call starts from an
    empty KV cache, and nothing is saved or loaded."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.model = inner.model
        self.info = replace(inner.info, prefix_cache=False)

    def stream(self, request, **options):
        self.inner.llm.reset()
        return self.inner.stream(request, **options)

    def close(self) -> None:
        self.inner.close()


def bench_in_process(args, tasks: Path, workspace: Path, home: Path) -> None:
    from drivers.llama_cpp import open_llama
    from drivers.prefix_cache import clear

    folder = home / "prefix-states"
    os.environ["BOSUN_PREFIX_CACHE"] = str(folder)  # never the user's cache
    ways = {
        "every task evaluates the head": lambda: Unshared(open_llama(args.model)),
        "shared head, no saved state": lambda: open_llama(args.model),
        "shared head, saved state": lambda: open_llama(args.model),
    }
    best: dict[str, dict] = {}
    for _ in range(args.repeat):  # interleaved, best kept: the rows share the machine's noise
        clear(folder)
        for label, make in ways.items():
            run = run_batch(tasks, args.model, workspace, 1, args.max_tokens, make())
            if label not in best or run["wall"] < best[label]["wall"]:
                best[label] = run
    print(
        f"\nin-process {args.model}; {args.tasks} tasks, --jobs 1, max_turns 1,"
        f" max_tokens {args.max_tokens}, best of {args.repeat}; model load not counted"
    )
    header = ("batch", 29), ("wall s", 7), ("prompt", 6), ("cached", 6), ("evaluated", 9)
    print("  ".join(f"{n:>{w}}" for n, w in header) + "  tokens  speed-up")
    base = best["every task evaluates the head"]["wall"]
    for label, r in best.items():
        evaluated = r["prompt_tokens"] - r["cached_tokens"]
        print(
            f"{label:>29}  {r['wall']:>7.2f}  {r['prompt_tokens']:>6}  {r['cached_tokens']:>6}"
            f"  {evaluated:>9}  {r['completion_tokens']:>6}  {base / r['wall']:>7.2f}×"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--jobs", default="1,4", help="comma-separated --jobs values")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=2, help="runs per --jobs value; best is kept")
    ap.add_argument("--model", default="smollm2-135m", help="the in-process model")
    ap.add_argument(
        "--only",
        default="server,llama-server,in-process",
        help="any of server (llama-cpp-python's), llama-server, in-process, ray",
    )
    args = ap.parse_args()
    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="bosun-batch-bench-") as tmp:
        tmp_path = Path(tmp)
        home = tmp_path / "home"  # session files go here, not into ~/.bosun
        home.mkdir()
        os.environ["BOSUN_HOME"] = str(home)
        workspace = tmp_path / "ws"
        workspace.mkdir()
        (workspace / "notes.txt").write_text("nothing to see\n", encoding="utf-8")
        tasks = tmp_path / "tasks.jsonl"
        write_tasks(tasks, args.tasks, args.max_tokens)
        if "server" in only:
            bench_server(args, tasks, workspace, tmp_path)
        if "llama-server" in only:
            bench_llama_server(args, tasks, workspace, tmp_path)
        if "in-process" in only:
            bench_in_process(args, tasks, workspace, home)
        if "ray" in only:
            bench_ray(args, tasks, workspace, tmp_path)


def ray_batch(tasks: Path, spec: str, workspace: Path, max_tokens: int, address: str | None):
    """One --jobs 2 batch: local when `address` is None, else on that Ray cluster. No
    saved head states: each model evaluates the head once (else the first batch would
    save it, and the second load it)."""
    from drivers.prefix_cache import clear

    clear(Path(os.environ["BOSUN_PREFIX_CACHE"]))
    out, err = io.StringIO(), io.StringIO()
    settings = Settings(
        model=spec, workspace=workspace, jobs=2, max_turns=1, max_tokens=max_tokens,
        constrain="never", executor="ray" if address else "local", ray_address=address,
    )  # fmt: skip
    started = time.perf_counter()
    code = run_tasks(settings, tasks, out=out, err=err, env={})
    wall = time.perf_counter() - started
    statuses = [json.loads(x)["status"] for x in out.getvalue().splitlines() if '"result"' in x]
    if code not in (0, 3) or any(s not in ("done", "max_turns") for s in statuses):
        raise SystemExit(f"{'ray' if address else 'local'} {spec}: exit {code}\n{err.getvalue()}")
    return wall


def bench_ray(args, tasks: Path, workspace: Path, tmp_path: Path) -> None:
    from tests.ray_cluster import local_cluster

    os.environ["BOSUN_PREFIX_CACHE"] = str(tmp_path / "prefix-states")  # never the user's
    script = tmp_path / "answer.jsonl"
    script.write_text(json.dumps({"completion": "Done."}) + "\n", encoding="utf-8")
    models = [("scripted (no model work)", f"scripted:{script}"), (args.model, args.model)]
    rows = []
    load = os.getloadavg()
    with local_cluster(num_cpus=2) as address:
        ray_batch(tasks, f"scripted:{script}", workspace, args.max_tokens, address)  # warm-up
        for label, spec in models:
            local = min(
                ray_batch(tasks, spec, workspace, args.max_tokens, None) for _ in range(args.repeat)
            )
            remote = min(
                ray_batch(tasks, spec, workspace, args.max_tokens, address)
                for _ in range(args.repeat)
            )
            rows.append((label, local, remote))
    print(
        f"\n{args.tasks} one-turn tasks, --jobs 2, max_tokens {args.max_tokens}, best of"
        f" {args.repeat}; Ray: a 2-CPU cluster on 127.0.0.1; load before"
        f" {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(f"{'model':>26}  {'local s':>7}  {'ray s':>7}  {'ray/local':>9}  ray - local")
    for label, local, remote in rows:
        extra = remote - local
        print(
            f"{label:>26}  {local:>7.2f}  {remote:>7.2f}  {remote / local:>8.2f}×"
            f"  {extra:+.2f} s ({extra / args.tasks * 1000:+.0f} ms a task)"
        )
    _, local, remote = rows[0]
    print(
        f"Ray's own overhead (the scripted row: no model work): {remote - local:.2f} s"
        f" for the batch, {(remote - local) / args.tasks * 1000:.0f} ms a task"
    )


def bench_server(args, tasks: Path, workspace: Path, tmp_path: Path) -> None:
    import pytest  # the launcher reports a missing model with pytest.skip

    from tests.openai_servers import MODEL_ALIAS, llama_server

    jobs_values = [int(j) for j in args.jobs.split(",")]
    warm = tmp_path / "warm.jsonl"
    write_tasks(warm, 1, args.max_tokens)
    try:
        server = llama_server(tmp_path / "server.log")
        url = server.__enter__()
    except (pytest.skip.Exception, pytest.fail.Exception) as exc:
        raise SystemExit(f"cannot start llama_cpp.server: {exc}") from None
    try:
        spec = f"openai:{url}#{MODEL_ALIAS}"
        run_batch(warm, spec, workspace, 1, args.max_tokens)
        rows = []
        for jobs in jobs_values:
            runs = [
                run_batch(tasks, spec, workspace, jobs, args.max_tokens) for _ in range(args.repeat)
            ]
            best = min(runs, key=lambda r: r["wall"])
            rows.append((jobs, best))
    finally:
        server.__exit__(None, None, None)

    base = rows[0][1]["wall"]
    print(
        f"llama_cpp.server, SmolLM2-135M, 1 thread; {args.tasks} tasks, max_turns 1, "
        f"max_tokens {args.max_tokens}, best of {args.repeat}"
    )
    header = ("jobs", 4), ("tasks", 5), ("wall s", 7), ("tasks/min", 9), ("tokens", 6)
    print("  ".join(f"{name:>{width}}" for name, width in header) + "  speed-up")
    for jobs, best in rows:
        wall = best["wall"]
        print(
            f"{jobs:>4}  {args.tasks:>5}  {wall:>7.2f}  {args.tasks / wall * 60:>9.1f}"
            f"  {best['completion_tokens']:>6}  {base / wall:>7.2f}×"
        )


def raw_parallel(url: str, prompts: list[str], jobs: int, max_tokens: int) -> float:
    """The ceiling: the same completion requests bosun sent, fired from `jobs` threads
    with nothing else in between (no rendering, parsing or session files)."""
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    def one(prompt: str) -> None:
        body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0}
        request = urllib.request.Request(
            f"{url}/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=600) as reply:
            reply.read()

    started = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, prompts))
    return time.perf_counter() - started


def bench_llama_server(args, tasks: Path, workspace: Path, tmp_path: Path) -> None:
    """llama.cpp's own llama-server with 4 parallel slots and a unified KV cache: bosun's
    --jobs 1/2/4 beside the raw parallel requests of the same prompts, in one run."""
    import pytest

    from tests.openai_servers import MODEL_ALIAS, real_llama_server

    jobs_values = [1, 2, 4]
    trace = tmp_path / "trace.jsonl"
    try:
        server = real_llama_server(tmp_path / "llama-server.log", n_ctx=4 * 2048, slots=4,
                                   unified=True)  # fmt: skip
        url = server.__enter__()
    except (pytest.skip.Exception, pytest.fail.Exception, RuntimeError) as exc:
        print(f"\nllama-server: not run ({exc})")
        return
    try:
        spec = f"openai:{url}#{MODEL_ALIAS}"
        # The prompts, then every slot warm: a slot keeps the last prompt it evaluated, so
        # a run at --jobs 4 finds the shared head (system prompt, tools) in each of the 4
        # slots, as a long batch does after its first wave. Without it the 4-slot runs pay
        # 4 prefills of the head that the 1-slot run pays once.
        run_batch(tasks, spec, workspace, 1, args.max_tokens, trace=trace)
        run_batch(tasks, spec, workspace, max(jobs_values), args.max_tokens)
        records = [json.loads(line) for line in trace.read_text().splitlines()]
        prompts = [r["prompt"] for r in records if isinstance(r.get("prompt"), str)]
        rows = []
        for jobs in jobs_values:
            bosun = min(
                run_batch(tasks, spec, workspace, jobs, args.max_tokens)["wall"]
                for _ in range(args.repeat)
            )
            raw = min(raw_parallel(url, prompts, jobs, args.max_tokens) for _ in range(args.repeat))
            rows.append((jobs, bosun, raw))
    finally:
        server.__exit__(None, None, None)
    load = os.getloadavg()[0]
    print(
        f"\nllama-server -np 4 --kv-unified, SmolLM2-135M, 1 thread; {args.tasks} tasks,"
        f" max_tokens {args.max_tokens}, best of {args.repeat}; load before {load:.2f}"
    )
    print(f"{'jobs':>4}  {'bosun s':>7}  {'speed-up':>8}  {'raw s':>7}  {'ceiling':>7}  of ceiling")
    base_bosun, base_raw = rows[0][1], rows[0][2]
    for jobs, bosun, raw in rows:
        up, ceiling = base_bosun / bosun, base_raw / raw
        print(
            f"{jobs:>4}  {bosun:>7.2f}  {up:>7.2f}×  {raw:>7.2f}  {ceiling:>6.2f}×"
            f"  {up / ceiling:>9.0%}"
        )


if __name__ == "__main__":
    main()
