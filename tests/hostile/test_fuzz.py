"""A hostile model over a hostile workspace, generated: random tool calls (random names,
nested and malformed arguments, paths with "..", absolute paths out, symlinks, loops,
FIFOs, hard links) through the real `bosun run` on the scripted driver.

Whatever comes: one `result` event, an exit code in {0, 1, 3}, a session file of whole
JSON lines, no internal error, and nothing outside the workspace touched. `bash` is left
out: it is not confined (the sandbox is its own issue) and is refused anyway, since
nobody can approve it here.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import snapshot
from tests.hostile.conftest import SECRET, run_bosun

TOOLS = ["read_file", "write_file", "edit_file", "list_dir", "glob", "grep"]
KEYS = ["path", "content", "old", "new", "pattern", "glob", "offset", "limit", "replace_all"]
NAMES = st.sampled_from(["a.txt", "sub", "sub/b.py", "é x.md", ".git", ".gitignore", "n"])
LINKS = st.sampled_from(["inside", "outside", "outside-file", "loop", "dangling", "up"])


@st.composite
def workspaces(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    """(kind, path, detail) entries to build: files, folders, links, a FIFO."""
    entries: list[tuple[str, str, str]] = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["file", "dir", "link", "link", "fifo", "hardlink"]))
        folder = draw(st.sampled_from(["", "sub/", "sub/deep/"]))
        name = folder + draw(NAMES).replace("/", "_") + str(len(entries))
        detail = draw(LINKS) if kind == "link" else draw(st.text(max_size=20))
        entries.append((kind, name, detail))
    return entries


def build(root: Path, entries: list[tuple[str, str, str]]) -> tuple[Path, Path]:
    ws, outside = root / "ws", root / "outside"
    (ws / "sub" / "deep").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (outside / "linked.txt").write_text("hard-linked from the workspace\n")
    (ws / "a.txt").write_text("alpha\nbeta\n")
    targets = {
        "inside": "a.txt",
        "outside": str(outside),
        "outside-file": str(outside / "secret.txt"),
        "dangling": str(outside / "new.txt"),
        "up": "..",
    }
    for kind, name, detail in entries:
        path = ws / name
        if path.exists() or path.is_symlink():
            continue
        if kind == "file":
            path.write_text(detail, encoding="utf-8", errors="replace")
        elif kind == "dir":
            path.mkdir()
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "hardlink":  # reads through it are allowed (README), writes are not
            os.link(outside / "linked.txt", path)
        else:
            path.symlink_to(name.rsplit("/", 1)[-1] if detail == "loop" else targets[detail])
    return ws, outside


def paths(outside: str) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(
            [
                ".",
                "a.txt",
                "sub",
                "sub/deep",
                "..",
                "../outside/secret.txt",
                "sub/../../outside",
                f"{outside}/secret.txt",
                outside,
                "~/x",
                ".git/config",
                "x\x00y",
                "",
                "//",
            ]
        ),
        st.builds(lambda n, k: n + str(k), NAMES, st.integers(0, 8)),
        st.builds(lambda d, n: "sub/" * d + n, st.integers(0, 40), NAMES),
        st.text(max_size=30),
    )


def values(outside: str) -> st.SearchStrategy[Any]:
    leaf = st.one_of(
        paths(outside),
        st.integers(-(2**70), 2**70),
        st.booleans(),
        st.none(),
        st.floats(allow_nan=False),
    )
    return st.recursive(leaf, lambda inner: st.lists(inner, max_size=3), max_leaves=6)


def proper(name: str, outside: str) -> dict[str, st.SearchStrategy[Any]]:
    """Arguments of the right names and types for `name`, with hostile values."""
    text = st.text(max_size=30)
    path = paths(outside)
    return {
        "read_file": {"path": path, "offset": st.integers(-5, 2**40)},
        "write_file": {"path": path, "content": text},
        "edit_file": {"path": path, "old": st.sampled_from(["alpha", "", "zz"]), "new": text},
        "list_dir": {"path": path},
        "glob": {"pattern": st.one_of(path, st.sampled_from(["**", "*", "[z-a]", "**/*.txt"]))},
        "grep": {
            "pattern": st.one_of(text, st.sampled_from(["(a+)+$", "a", "SECRET", "(", ".*"])),
            "path": path,
        },
    }[name]


@st.composite
def replies(draw: st.DrawFn, outside: str) -> str:
    """One completion: prose and calls, some of them broken on purpose."""
    parts = [draw(st.text(max_size=40))]
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.integers(0, 9)) < 7:  # mostly calls that pass validation
            name = draw(st.sampled_from(TOOLS))
            args = {k: draw(strategy) for k, strategy in proper(name, outside).items()}
        else:
            name = draw(st.one_of(st.sampled_from(TOOLS), st.text(max_size=12)))
            keys = st.one_of(st.sampled_from(KEYS), st.text(max_size=6))
            args = {k: draw(values(outside)) for k in draw(st.lists(keys, max_size=4))}
        body = json.dumps({"name": name, "arguments": args})
        shape = draw(st.sampled_from(["whole", "whole", "deep", "cut", "bare", "surrogate"]))
        if shape == "deep":
            depth = draw(st.integers(60, 3000))
            body = body.replace('"arguments": ', '"arguments": ' + '{"a": ' * depth, 1)
            body = body[:-1] + "}" * depth + "}"
        elif shape == "cut":
            body = body[: draw(st.integers(0, len(body)))]
        elif shape == "surrogate":
            body = body.replace('"name"', '"\\ud800": "\\udfff", "name"', 1)
        parts.append(body if shape == "bare" else f"<tool_call>\n{body}\n</tool_call>")
        parts.append(draw(st.text(max_size=10)))
    return "".join(parts)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data(), entries=workspaces())
def test_random_hostile_runs_always_end_cleanly(
    data: st.DataObject, entries: list[tuple[str, str, str]], tmp_path: Path
) -> None:
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    scripts = Path(tempfile.mkdtemp(dir=tmp_path))
    ws, outside = build(root, entries)
    before = snapshot(root, ws)
    steps: list[str | dict[str, Any]] = data.draw(
        st.lists(replies(str(outside)), min_size=1, max_size=4)
    )
    if data.draw(st.booleans()):
        steps.append("done")  # else the script may run out: a backend error, exit 1
    approve = data.draw(st.sampled_from(["auto-edit", "auto-edit", "read-only", "ask"]))
    turns = str(data.draw(st.integers(1, 6)))  # fewer turns than replies: exit 3
    run = run_bosun(steps, ws, scripts, "--approve", approve, "--max-turns", turns)
    run.assert_no_bug()
    assert run.code in (0, 1, 3, 4), (run.code, run.result, run.stderr)  # 4: all refused
    assert run.session and run.session[0]["type"] == "session"
    assert snapshot(root, ws) == before, "something outside the workspace changed"
    for event in run.events:
        assert SECRET not in json.dumps(event), event
    if os.environ.get("BOSUN_FUZZ_STATS"):
        calls = [e for e in run.events if e["type"] == "tool_result"]
        ok = sum(not e["is_error"] for e in calls)
        print("STATS", run.code, run.result["status"], len(calls), ok)
