"""Links a hostile repository can hold: symlink loops, folders that are swapped for
symlinks while a tool looks at them, and hard links to files outside the workspace."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import agent.tools.files as files
import agent.tools.search as search
from tests.helpers import tool_call
from tests.hostile.conftest import SECRET, RunBosun, World
from tests.tools.conftest import RunTool

LOOPS = {
    "self": "loop",  # loop -> loop
    "pair": "ping",  # ping -> pong -> ping
    "under-a-loop": "loop/file.txt",
    "chain-into-loop": "entry/x",  # entry -> ping
}


@pytest.fixture
def loops(workspace: Path) -> Path:
    (workspace / "loop").symlink_to("loop")
    (workspace / "ping").symlink_to("pong")
    (workspace / "pong").symlink_to("ping")
    (workspace / "entry").symlink_to("ping")
    (workspace / "d").mkdir()
    (workspace / "d" / "up").symlink_to("..")  # a folder cycle, not a resolve loop
    (workspace / "d" / "f.txt").write_text("needle\n")
    return workspace


CALLS = {
    "read_file": lambda p: {"path": p},
    "write_file": lambda p: {"path": p, "content": "x"},
    "edit_file": lambda p: {"path": p, "old": "a", "new": "b"},
    "list_dir": lambda p: {"path": p},
    "grep": lambda p: {"pattern": "x", "path": p},
}


@pytest.mark.parametrize("tool", CALLS)
@pytest.mark.parametrize("where", LOOPS)
def test_a_symlink_loop_is_an_error_result_for_every_tool(
    run_tool: RunTool, loops: Path, tool: str, where: str
) -> None:
    result = run_tool(tool, **CALLS[tool](LOOPS[where]))
    assert result.is_error and "symlink loop" in result.content, result.content


def test_searches_and_listings_walk_past_loops(run_tool: RunTool, loops: Path) -> None:
    assert run_tool("glob", pattern="**").content == "d/f.txt\nnotes.txt"
    assert run_tool("glob", pattern="loop/**").content.startswith("(no files match")
    assert run_tool("grep", pattern="needle").content == "d/f.txt:1: needle"
    listed = ["d/", "entry@", "loop@", "notes.txt", "ping@", "pong@"]
    assert run_tool("list_dir").content.splitlines() == listed
    assert run_tool("list_dir", path="d/up").content == run_tool("list_dir").content
    # the folder cycle resolves, one level at a time, to files inside
    assert run_tool("read_file", path="d/up/d/up/d/f.txt").content == "1\tneedle"


def test_a_run_over_loops_ends_with_its_result(bosun: RunBosun, loops: Path) -> None:
    calls = [tool_call("read_file", path="loop"), tool_call("glob", pattern="**")]
    run = bosun([*calls, tool_call("grep", pattern="needle", path="ping"), "done"])
    run.assert_no_bug()
    assert run.code == 0 and run.result["status"] == "done"
    assert [r["is_error"] for r in run.results()] == [True, False, True]


# -- a folder swapped for a symlink while it is listed ---------------------------------


def test_list_dir_lists_the_folder_it_checked_not_what_was_swapped_in(
    run_tool: RunTool, world: World, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deterministic race: the folder becomes a symlink out after list_dir has opened it
    and before it reads it. Listing through the descriptor shows the folder that was
    checked (now moved aside), never the outside."""
    (workspace / "d").mkdir()
    (workspace / "d" / "mine.txt").write_text("inside\n")
    world.seal()
    opened = files.open_dir_in_workspace

    def open_then_swap(root: Path, path: str) -> int:
        fd = opened(root, path)
        (workspace / "d").rename(workspace / "d_moved")
        (workspace / "d").symlink_to(world.outside)
        return fd

    monkeypatch.setattr(files, "open_dir_in_workspace", open_then_swap)
    result = run_tool("list_dir", path="d")
    assert result.content == "mine.txt"


def test_what_ripgrep_reports_is_rechecked_through_safe_descriptors(
    run_tool: RunTool, world: World, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deterministic race: rg walks by path, so a folder swapped for a symlink between
    its readdir and its open is followed. Here the swap comes right after rg's answer:
    names and lines that no longer open inside are dropped, as those rg read through a
    swapped folder would be."""
    (workspace / "d").mkdir()
    (workspace / "d" / "secret.txt").write_text("TOP SECRET inside, for now\n")
    (world.outside / "secret.txt").write_text("TOP SECRET outside\n")
    world.seal()
    real = search.run_rg

    def rg_then_swap(*args: object, **kw: object) -> object:
        found = real(*args, **kw)  # type: ignore[arg-type]
        if (workspace / "d").is_dir() and not (workspace / "d").is_symlink():
            (workspace / "d").rename(workspace / "d_moved")
            (workspace / "d").symlink_to(world.outside)
        return found

    monkeypatch.setattr(search, "run_rg", rg_then_swap)
    assert run_tool("glob", pattern="**/secret.txt").content.startswith("(no files match")
    (workspace / "d").unlink()
    (workspace / "d_moved").rename(workspace / "d")
    assert run_tool("grep", pattern="TOP SECRET").content.startswith("(no matches")
    (workspace / "d").unlink()
    (workspace / "d_moved").rename(workspace / "d")

    def rg_through_a_swap(*args: object, **kw: object) -> object:
        """rg runs while d is a symlink out (it reads the outside file) and the swap is
        undone before the recheck: only the line's text can tell."""
        (workspace / "d").rename(workspace / "d_moved")
        (workspace / "d").symlink_to(world.outside)
        try:
            return real(*args, **kw)  # type: ignore[arg-type]
        finally:
            (workspace / "d").unlink()
            (workspace / "d_moved").rename(workspace / "d")

    monkeypatch.setattr(search, "run_rg", rg_through_a_swap)
    found = run_tool("grep", pattern="TOP SECRET", path="d/secret.txt").content
    assert found.startswith("(no matches"), found


def flipping(folder: Path, target: Path, stop: threading.Event) -> None:
    """Swap `folder` between a real folder and a symlink to `target`, as fast as it goes."""
    real = folder.with_name(folder.name + ".real")
    while not stop.is_set():
        try:
            folder.rename(real)
            folder.symlink_to(target)
            time.sleep(0.0005)  # each state lasts a moment, so calls meet both
            folder.unlink()
            real.rename(folder)
            time.sleep(0.0005)
        except OSError:
            continue


def test_list_dir_and_glob_under_a_flipping_folder_never_show_the_outside(
    run_tool: RunTool, world: World, workspace: Path
) -> None:
    """The race as an attacker runs it: a loop flips a folder to a symlink and back while
    the model lists and globs it. Every answer is the inside or an error."""
    (workspace / "d").mkdir()
    (workspace / "d" / "mine.txt").write_text("inside\n")
    world.seal()
    stop = threading.Event()
    flipper = threading.Thread(target=flipping, args=(workspace / "d", world.outside, stop))
    flipper.start()
    seen: set[str] = set()
    try:
        for _ in range(150):
            for result in (
                run_tool("list_dir", path="d"),
                run_tool("glob", pattern="d/*"),
                run_tool("glob", pattern="**/*.txt"),
                run_tool("grep", pattern="TOP S[E]CRET", path="d"),
            ):
                seen.update(result.content.splitlines())
                assert "secret.txt" not in result.content, result.content
                assert SECRET not in result.content, result.content
    finally:
        stop.set()
        flipper.join()
    # the race really ran both ways: calls met the folder and the symlink
    assert "mine.txt" in seen or "d/mine.txt" in seen
    assert any("symlink" in line or "outside the workspace" in line for line in seen)


# -- hard links ------------------------------------------------------------------------


@pytest.fixture
def hardlink(world: World, workspace: Path) -> Path:
    link = workspace / "linked.txt"
    os.link(world.secret, link)
    world.seal()
    return link


def test_writes_to_a_hard_linked_file_are_refused(run_tool: RunTool, hardlink: Path) -> None:
    for tool, args in [
        ("write_file", {"content": "PWNED"}),
        ("edit_file", {"old": "TOP", "new": "PWNED"}),
    ]:
        result = run_tool(tool, path="linked.txt", **args)
        assert result.is_error and "hard links" in result.content, (tool, result.content)
    assert hardlink.read_text() == SECRET


def test_reads_through_a_hard_link_are_documented(run_tool: RunTool, hardlink: Path) -> None:
    """A hard link is the file itself: no path check can tell it from a workspace file.
    The README says so; reading it works, and that is what this test pins."""
    assert SECRET in run_tool("read_file", path="linked.txt").content
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "hard link" in readme.lower()


def test_a_file_with_one_link_is_written_as_before(run_tool: RunTool, workspace: Path) -> None:
    assert not run_tool("edit_file", path="notes.txt", old="hello", new="bye").is_error
    assert (workspace / "notes.txt").read_text() == "bye from bosun\n"
