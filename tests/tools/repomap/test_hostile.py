"""Hostile repositories: a 100 MB source file, a million nested brackets, 100,000 tiny
files, links out of the workspace, a corrupt cache. Bounded time and memory, nothing
outside the workspace read, and the map says what it skipped."""

from __future__ import annotations

import importlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from agent.tools.repomap import cache, repo_map
from agent.tools.repomap.scan import MAX_FILES

REPO = Path(__file__).resolve().parents[3]


def bosun_map(root: Path, *args: str, timeout: float = 120) -> tuple[dict, float, int]:
    """`bosun map --json` in a child limited to 2 GB of address space per process:
    (its JSON, seconds, the peak RSS of it and its workers in MB)."""
    code = (
        "import resource, runpy, sys;"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30));"
        "sys.argv = ['bosun', 'map', sys.argv[1], '--json', *sys.argv[2:]];"
        "runpy.run_module('agent', run_name='__main__')"
    )
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", code, str(root), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
    )
    seconds = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-2000:]
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    return json.loads(proc.stdout), seconds, peak


def test_huge_files_deep_brackets_and_links_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("def leaked_secret():\n    pass\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ok.py").write_text("def fine():\n    return 1\n")
    with (ws / "huge.py").open("wb") as fh:  # 100 MB, sparse: skipped by its size
        fh.truncate(100 * 1024 * 1024)
    million = 1_000_000
    (ws / "brackets.py").write_bytes(b"x = " + b"[" * million + b"]" * million + b"\n")
    # under the size cap (and in lines of 60, not minified): parsed, however deep
    opening, closing = (b"(" * 60 + b"\n") * 5_000, (b")" * 60 + b"\n") * 5_000
    (ws / "deep.py").write_bytes(b"def before():\n    pass\ny = " + opening + closing)
    (ws / "link.py").symlink_to(outside / "secret.py")
    (ws / "linkdir").symlink_to(outside, target_is_directory=True)
    (ws / "app.min.js").write_text("function minified(){return 1}\n")
    (ws / "blob.c").write_bytes(b"int f(void);\x00\x01\x02")
    deep = ws.joinpath(*["d"] * 40)
    deep.mkdir(parents=True)
    (deep / "buried.py").write_text("def buried():\n    pass\n")
    data, seconds, peak = bosun_map(ws)
    names = {d["name"] for d in data["definitions"]}
    assert "fine" in names
    # deep.py: mapped, or (on a machine too busy to parse it in time) counted as cut short
    assert "before" in names or data["skipped"].get("timeout") == 1
    assert "leaked_secret" not in names
    assert "buried" not in names  # 40 folders down: past the depth the map walks
    assert not any("link" in d["path"] for d in data["definitions"])
    assert data["skipped"]["large"] == 2  # huge.py, brackets.py
    assert data["skipped"]["generated"] == 1 and data["skipped"]["binary"] == 1
    assert seconds < 60, seconds
    assert peak < 2048, peak
    text = repo_map(ws).text(500)
    assert "skipped: 1 binary, 1 generated or minified, 2 over 1 MB" in text


def test_a_hundred_thousand_tiny_files(tmp_path: Path) -> None:
    ws = tmp_path / "many"
    for d in range(100):
        folder = ws / f"d{d:03}"
        folder.mkdir(parents=True)
        for f in range(1000):
            (folder / f"m{f:04}.py").write_text(f"def f_{d}_{f}():\n    pass\n")
    data, seconds, peak = bosun_map(ws, timeout=300)
    assert data["files"] == MAX_FILES
    assert data["over_cap"] == 100_000 - MAX_FILES
    assert seconds < 180, seconds
    assert peak < 2048, peak


def test_a_corrupt_or_hostile_cache_is_ignored(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("def alpha():\n    pass\n")
    root = ws.resolve()
    target = cache.cache_file(root)
    target.parent.mkdir(parents=True, exist_ok=True)
    info = os.stat(ws / "a.py")
    planted = [["planted", "function", "x", "y"]]  # a line that is not a number
    fake = {"size": info.st_size, "mtime": info.st_mtime_ns, "lang": "python",
            "defs": planted, "refs": {}, "note": "", "skip": ""}  # fmt: skip
    bad_shapes = {"version": 1, "root": str(root), "files": {"a.py": fake}}
    for content in (
        b"\x00\xff garbage",
        b"[" * 100_000,
        json.dumps({"version": 1, "root": str(root), "files": []}).encode(),
        json.dumps(bad_shapes).encode(),
    ):
        target.write_bytes(content)
        names = {r.name for r in repo_map(ws).ranked}
        assert names == {"alpha"}, content[:40]


def test_a_worker_that_dies_costs_its_files_not_bosun(tmp_path: Path, monkeypatch) -> None:
    """A worker killed (out of time here; a parser crash alike) leaves its files out,
    said, and they are not parsed in bosun's own process instead."""
    module = importlib.import_module("agent.tools.repomap.scan")

    ws = tmp_path / "ws"
    ws.mkdir()
    for k in range(10):
        (ws / f"m{k}.py").write_text(f"def f{k}():\n    pass\n")
    monkeypatch.setattr(module, "PARALLEL_OVER", 0)
    monkeypatch.setattr(module, "WORKER_TIMEOUT_S", 0.001)
    monkeypatch.setattr(module.os, "cpu_count", lambda: 2)
    found = module.scan(ws)
    assert found.skipped["failed"] == 10 and not found.files
    assert "10 not parsed (the parser crashed or ran out of time)" in found.skipped_note()
    monkeypatch.setattr(module, "WORKER_TIMEOUT_S", 120.0)  # the failures were not cached
    assert len(module.scan(ws).files) == 10
