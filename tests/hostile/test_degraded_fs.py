"""Issue #45's degraded items, where a hostile workspace did not break bosun but made it
slow or useless: a commands folder of links to itself that made every `/` walk for
minutes, a restore that gave up on every file because the model swapped one folder for
a link, and a `.bosun.toml` that shrank the checkpoints' size cap until `/undo` could
not bring a deleted file back. Each must end in the right thing done, or one clear line,
never a hang or a refusal of everything."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from agent.cli.config_report import report
from agent.run.config import Config, load_config, user_config_path
from agent.run.custom_commands import find_commands
from agent.tools.restore import rewind_files
from agent.tools.shadow import ShadowRepo, git_available
from agent.tools.skill import find_skills
from tests.helpers import own_home  # noqa: F401 - an autouse fixture (`home`)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


T = TypeVar("T")


def within(seconds: float, work: Callable[[], T]) -> T:
    """`work()`'s result, failing (not hanging) when it takes longer than `seconds`."""
    out: list[T] = []
    worker = threading.Thread(target=lambda: out.append(work()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still walking after {seconds} s"
    return out[0]


# --- 1: a folder full of links to itself ----------------------------------------------


def test_200_links_to_the_commands_folder_itself_cost_nothing(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = workspace / ".bosun/commands"
    write(folder / "review.md", "look at $ARGUMENTS")
    write(folder / "sub/deep.md", "deep")
    for i in range(200):
        os.symlink(".", folder / f"x{i:03}")
    found = within(5, lambda: find_commands(workspace))
    assert set(found) == {"review", "sub:deep"}
    err = capsys.readouterr().err
    assert f"skipping {folder}/x000: a link to a folder is not followed" in err


def test_a_deep_wide_tree_of_real_folders_is_bounded_too(workspace: Path) -> None:
    folder = workspace / ".bosun/commands"
    for i in range(40):
        for j in range(40):
            (folder / f"a{i:02}" / f"b{j:02}").mkdir(parents=True)
    write(folder / "zz.md", "last")
    found = within(5, lambda: find_commands(workspace))
    assert found == {}  # the budget (doc_folders.MAX_WALK) went on 1,640 folders before it


def test_skills_do_not_multiply_through_links_either(workspace: Path) -> None:
    folder = workspace / ".bosun/skills"
    write(folder / "real/SKILL.md", "---\nname: real\ndescription: one\n---\nbody")
    for i in range(200):
        os.symlink(".", folder / f"x{i:03}")
    skills = within(5, lambda: find_skills(workspace))
    assert [s.name for s in skills] == ["real"]


# --- 2: a restore after the model swapped a folder for a link ---------------------------

needs_git = pytest.mark.skipif(not git_available(), reason="git is not installed")


def _swap(workspace: Path, shadow: ShadowRepo, change: Callable[[], None]) -> None:
    """Request 1's before-snapshot, the model's `change`, its after-snapshot."""
    shadow.snapshot(1, "before")
    change()
    shadow.snapshot(1, "after")


@needs_git
def test_a_folder_the_model_swapped_for_a_link_is_restored_with_the_rest(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "d").mkdir()
    write(workspace / "d/a.txt", "in the folder\n")
    write(workspace / "kept.txt", "original\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write(elsewhere / "a.txt", "outside\n")
    shadow = ShadowRepo(workspace, "s1")

    def change() -> None:
        (workspace / "d/a.txt").unlink()
        (workspace / "d").rmdir()
        (workspace / "d").symlink_to(elsewhere, target_is_directory=True)
        (workspace / "kept.txt").write_text("changed\n")

    _swap(workspace, shadow, change)
    done = rewind_files(shadow, 1)
    assert not (workspace / "d").is_symlink()
    assert (workspace / "d/a.txt").read_text() == "in the folder\n"
    assert (workspace / "kept.txt").read_text() == "original\n"
    assert (elsewhere / "a.txt").read_text() == "outside\n"  # never written through
    assert set(done.restored) == {"d", "d/a.txt", "kept.txt"} and done.failed == []


@needs_git
@pytest.mark.parametrize("kind", ["file", "link", "folder"])
def test_every_change_of_kind_comes_back(workspace: Path, kind: str) -> None:
    """A file becomes a folder, a link, …, and each of them goes back to what it was."""
    write(workspace / "x", "a file\n")
    write(workspace / "y/inner.txt", "a folder\n")
    shadow = ShadowRepo(workspace, "s1")

    def change() -> None:
        (workspace / "x").unlink()
        (workspace / "y/inner.txt").unlink()
        (workspace / "y").rmdir()
        for name in ("x", "y"):
            if kind == "file":
                write(workspace / name, "now a file\n")
            elif kind == "link":
                (workspace / name).symlink_to("notes.txt")
            else:
                write(workspace / name / "made.txt", "now a folder\n")

    _swap(workspace, shadow, change)
    done = rewind_files(shadow, 1)
    assert done.failed == []
    assert (workspace / "x").read_text() == "a file\n" and not (workspace / "x").is_symlink()
    assert (workspace / "y/inner.txt").read_text() == "a folder\n"


@needs_git
def test_a_path_that_cannot_be_put_back_is_named_and_the_rest_restored(
    workspace: Path,
) -> None:
    """The model made a folder where a file was and put an ignored file in it: the
    folder cannot go (ignored files are never deleted), so that file is reported, and
    the others come back anyway, those after it too (it is put back first)."""
    write(workspace / ".gitignore", "*.log\n")
    write(workspace / "a", "a file\n")
    write(workspace / "kept.txt", "original\n")
    shadow = ShadowRepo(workspace, "s1")

    def change() -> None:
        (workspace / "a").unlink()
        write(workspace / "a/build.log", "ignored\n")
        (workspace / "kept.txt").write_text("changed\n")

    _swap(workspace, shadow, change)
    done = rewind_files(shadow, 1)
    assert (workspace / "kept.txt").read_text() == "original\n"
    assert (workspace / "a/build.log").read_text() == "ignored\n"
    assert [path for path, _why in done.failed] == ["a"]


# --- 3: a workspace may not shrink the checkpoints' size cap ----------------------------


def test_a_workspace_may_raise_the_checkpoint_cap_but_never_lower_it(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(workspace / ".bosun.toml", "checkpoint_max_mb = 0.001\n")
    assert load_config(workspace).checkpoint_max_mb == Config().checkpoint_max_mb
    err = capsys.readouterr().err
    assert "ignoring checkpoint_max_mb = 0.001" in err and "may only raise it" in err
    write(user_config_path(), "checkpoint_max_mb = 50\n")
    write(workspace / ".bosun.toml", "checkpoint_max_mb = 20\n")
    assert load_config(workspace).checkpoint_max_mb == 50
    write(workspace / ".bosun.toml", "checkpoint_max_mb = 100\n")
    assert load_config(workspace).checkpoint_max_mb == 100  # safer: honoured
    capsys.readouterr()


def test_bosun_config_shows_the_cap_honoured_or_ignored(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(workspace / ".bosun.toml", "checkpoint_max_mb = 1\n")
    row = {s["name"]: s for s in report(workspace)["settings"]}["checkpoint_max_mb"]
    assert (row["value"], row["source"]) == (10.0, "default")
    assert "ignoring checkpoint_max_mb = 1 in" in capsys.readouterr().err
    write(workspace / ".bosun.toml", "checkpoint_max_mb = 64\n")
    row = {s["name"]: s for s in report(workspace)["settings"]}["checkpoint_max_mb"]
    assert (row["value"], row["source"]) == (64, "workspace")
