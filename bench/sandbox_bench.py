"""What the sandbox costs a `bash` call: wall time with and without bubblewrap.

    .venv/bin/python bench/sandbox_bench.py [--calls 100]

Each command runs `--calls` times through the real tool (the registry, as the loop calls
it), sandboxed and not, alternating call by call so both see the same machine; the
table gives the median and the 95th percentile of each, and the median overhead, whose
target is 15 ms. A sandboxed call builds the bwrap command line, holds the .git
placeholder, makes and removes a pids cgroup (root), and starts user, PID, network,
IPC and UTS namespaces with their mounts.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.history import ToolCall
from agent.tools import ToolContext, default_registry
from agent.tools.sandbox import SandboxPolicy, probe

# The system's python3 on both sides: one under the home folder (pyenv, uv) is hidden in
# the sandbox, and a pyenv shim alone costs more than the sandbox does.
PYTHON = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or "python3"
COMMANDS = ("true", f"{PYTHON} -c 'print(1)'")
TARGET_MS = 15.0


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def timings(command: str, policy: SandboxPolicy, calls: int, ws: Path) -> dict[str, list[float]]:
    registry = default_registry()
    contexts = {"plain": ToolContext(ws), "sandboxed": ToolContext(ws, policy)}
    out: dict[str, list[float]] = {name: [] for name in contexts}
    for i in range(calls + 5):
        for name, ctx in contexts.items():
            started = time.perf_counter()
            result = registry.execute(ToolCall("b", "bash", {"command": command}), ctx)
            took = (time.perf_counter() - started) * 1000
            if result.is_error or "[exit code" in result.content:
                raise SystemExit(f"{name} {command!r} failed: {result.content}")
            if i >= 5:  # the first calls warm caches (and the probe) on both sides
                out[name].append(took)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=100)
    args = ap.parse_args()
    policy = probe()
    if isinstance(policy, str):
        raise SystemExit(f"no sandbox here: {policy}")
    rows: list[tuple[str, str, str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="bosun-bench-") as scratch:
        for command in COMMANDS:
            got = timings(command, policy, args.calls, Path(scratch))
            plain, boxed = got["plain"], got["sandboxed"]
            overhead = statistics.median(boxed) - statistics.median(plain)
            rows.append(
                (
                    command,
                    f"{statistics.median(plain):.1f} / {p95(plain):.1f}",
                    f"{statistics.median(boxed):.1f} / {p95(boxed):.1f}",
                    f"{overhead:+.1f}",
                    "ok" if overhead <= TARGET_MS else f"over {TARGET_MS:.0f} ms",
                )
            )
    print(
        f"{args.calls} bash calls per command and mode, interleaved; process limit by"
        f" {policy.process_limit}"
    )
    head = ("command", "plain ms median / p95", "sandboxed ms median / p95", "overhead", "")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    for row in [head, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    print(f"target: median overhead <= {TARGET_MS:.0f} ms")


if __name__ == "__main__":
    main()
