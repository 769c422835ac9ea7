"""What the batch tests share: the fixture folder, a tasks-file writer, a runner that
returns the JSONL events, and a thread-safe stand-in for a server."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.run.batch import run_tasks
from agent.run.settings import Settings
from drivers.base import Chunk, DriverError, DriverInfo, Request, Usage

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "batch"
SCRIPT = FIXTURES / "read_notes.script.jsonl"


Options = tuple[Settings, Path]


def options(tasks: Path, **kw: Any) -> Options:
    """A batch's settings and its tasks file (the two things `run_tasks` takes)."""
    kw.setdefault("model", f"scripted:{SCRIPT}")
    kw.setdefault("workspace", FIXTURES / "ws")
    return Settings(**kw), tasks


def write_tasks(path: Path, *tasks: dict[str, Any] | str) -> Path:
    lines = [t if isinstance(t, str) else json.dumps(t) for t in tasks]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(opts: Options, **kw: Any) -> tuple[int, list[dict[str, Any]]]:
    out = io.StringIO()
    code = run_tasks(*opts, out=out, err=io.StringIO(), **kw)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def by_task(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    tasks: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        if e["type"] != "summary":
            tasks.setdefault(e["task"], []).append(e)
    return tasks


def piece_text(i: int) -> str:
    """A long chunk (so torn writes would show) that does not repeat itself, which the
    runtime's loop guard would cut short."""
    return "".join(f"word{i}.{j} " for j in range(40))


class FakeDriver:
    """A thread-safe stand-in for a server: streams `pieces` chunks per call, fails on
    prompts that ask it to, and records how many streams ran at once."""

    model = "fake"

    def __init__(self, pieces: int = 5, delay: float = 0.0, max_concurrency: int = 8) -> None:
        self.pieces = pieces
        self.delay = delay
        self.info = DriverInfo(max_concurrency=max_concurrency)
        self.active = 0
        self.peak = 0
        self.closed = False
        self._lock = threading.Lock()

    def stream(self, request: Request, **_ignored: Any) -> Iterator[Chunk]:
        # halt is ignored: this stand-in never stops early by itself
        prompt = request.prompt
        with self._lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            if "BOOM" in prompt:
                raise DriverError("http://gpu-box:8000/v1: the completions stream broke off")
            if "BUG" in prompt:
                raise RuntimeError("harness bug")
            for i in range(self.pieces):
                time.sleep(self.delay)
                yield Chunk(piece_text(i))
            yield Chunk("", usage=Usage(100, 60, self.pieces, 1.0), finish_reason="stop")
        finally:
            with self._lock:
                self.active -= 1

    def close(self) -> None:
        self.closed = True
