"""What OpenTelemetry costs a run: `bosun run` on a one-step scripted model with telemetry
off, on (a real OTLP/HTTP receiver on 127.0.0.1), and on with a collector that accepts
connections and never answers (the bounded export timeout). Prints a table of medians.

    python bench/otel_bench.py [--reps 8]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.run.otlp_receiver import otlp_receiver  # noqa: E402


def one_run(workspace: Path, script: Path, env: dict[str, str]) -> float:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "agent", "run", "hi", "--model", f"scripted:{script}",
         "--workspace", str(workspace), "--output", "jsonl"],
        cwd=ROOT, env={**clean, **env}, capture_output=True, check=True,
    )  # fmt: skip
    return (time.perf_counter() - started) * 1000


def silent_collector() -> tuple[str, socket.socket]:
    """Accepts every connection and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return f"http://127.0.0.1:{server.getsockname()[1]}", server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=8)
    reps = parser.parse_args().reps
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        workspace = base / "ws"
        workspace.mkdir()
        script = base / "script.jsonl"
        script.write_text('{"completion": "done."}\n')
        home = {"BOSUN_HOME": str(base / "home")}
        rows: list[tuple[str, list[float]]] = []
        rows.append(("off", [one_run(workspace, script, home) for _ in range(reps)]))
        with otlp_receiver() as receiver:
            env = {**home, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
            rows.append(("on, receiver", [one_run(workspace, script, env) for _ in range(reps)]))
        url, server = silent_collector()
        env = {**home, "OTEL_EXPORTER_OTLP_ENDPOINT": url}
        rows.append(
            ("on, silent collector", [one_run(workspace, script, env) for _ in range(reps)])
        )
        server.close()
    print(f"{'telemetry':<22}{'median ms':>10}{'min ms':>10}")
    for name, times in rows:
        print(f"{name:<22}{statistics.median(times):>10.0f}{min(times):>10.0f}")
    print("load:", os.getloadavg())


if __name__ == "__main__":
    main()
