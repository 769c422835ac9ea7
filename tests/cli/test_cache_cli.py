"""`bosun cache info | clear` as a user meets them: real subprocesses, real exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from drivers.prefix_cache import PrefixCache, cache_dir

BOSUN = [sys.executable, "-m", "agent"]


def bosun(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "BOSUN_DEBUG"}
    return subprocess.run(
        [*BOSUN, *args], capture_output=True, text=True, env={**base, **env}, timeout=120
    )


def fill() -> None:
    """Two states of two models, as the driver would leave them."""
    for label, n in (("smollm2-135m", 1033), ("other.gguf", 40)):
        cache = PrefixCache({"model": label}, label=label, folder=cache_dir(), limit=10**9)
        assert cache.store(list(range(n)), b"s" * 50_000) is not None


def test_info_lists_each_state_and_the_total_against_the_cap() -> None:
    empty = bosun("cache", "info")
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout.strip() == f"0 saved states, 0 B of a 2.0 GiB cap, in {cache_dir()}"
    fill()
    shown = bosun("cache", "info", BOSUN_PREFIX_CACHE_MAX="1G")
    assert shown.returncode == 0, shown.stderr
    header, *rows, total = shown.stdout.splitlines()
    assert header.split("\t") == ["model", "tokens", "size", "saved", "used", "file"]
    assert sorted(r.split("\t")[:2] for r in rows) == [
        ["other.gguf", "40"],
        ["smollm2-135m", "1033"],
    ]
    assert total.startswith("2 saved states, ") and "of a 1.0 GiB cap" in total
    as_json = [json.loads(line) for line in bosun("cache", "info", "--json").stdout.splitlines()]
    assert {(r["model"], r["tokens"]) for r in as_json} == {
        ("smollm2-135m", 1033),
        ("other.gguf", 40),
    }
    assert all(r["size"] > 50_000 and r["file"].endswith(".kv") for r in as_json)


def test_clear_deletes_the_states_and_nothing_else() -> None:
    fill()
    (cache_dir() / "keep.txt").write_text("not a state")
    done = bosun("cache", "clear")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("removed 2 saved state files (")
    assert sorted(p.name for p in cache_dir().iterdir()) == ["keep.txt"]
    assert bosun("cache", "info").stdout.startswith("0 saved states")


def test_usage_errors_are_one_line_and_exit_2() -> None:
    bad = bosun("cache", "info", BOSUN_PREFIX_CACHE_MAX="plenty")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "bosun: error: BOSUN_PREFIX_CACHE_MAX='plenty' is not a size; use e.g. 2G, 500M or 0 (off)"
    ]
    extra = bosun("cache", "clear", "now")
    assert extra.returncode == 2 and len(extra.stderr.strip().splitlines()) == 1
    assert bosun("cache").returncode == 2  # no subcommand: help, usage exit
