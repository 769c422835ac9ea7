"""Workspace confinement: every escape attempt is refused and nothing outside changes.

The world outside the workspace is a sentinel tree in tmp_path; every test snapshots it
(paths and bytes) and checks it afterwards, so "refused" means "nothing happened", not
only "the result said Error".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import agent.tools.confine as permissions
from agent.errors import ToolError
from agent.tools.confine import resolve_in_workspace
from agent.tools.rg import run_rg
from tests.helpers import snapshot
from tests.tools.conftest import RunTool

SECRET = "TOP SECRET: outside the workspace"


@pytest.fixture
def world(tmp_path: Path, workspace: Path) -> Iterator[Path]:
    """Sentinels outside, symlinks inside that point at them; checked untouched after."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (tmp_path / "secret.txt").write_text(SECRET)
    (tmp_path / "ws_evil").mkdir()  # shares the workspace's name as a string prefix
    (tmp_path / "ws_evil" / "secret.txt").write_text(SECRET)
    (tmp_path / "alias").symlink_to(tmp_path)
    (workspace / "to_root").symlink_to("/")
    (workspace / "to_outside").symlink_to(outside)
    (workspace / "chain1").symlink_to("chain2")
    (workspace / "chain2").symlink_to("chain3")
    (workspace / "chain3").symlink_to("../outside")
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "dangling.txt").symlink_to(outside / "created.txt")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "deep").symlink_to(outside)
    before = snapshot(tmp_path, workspace)
    yield tmp_path
    assert snapshot(tmp_path, workspace) == before, "something outside the workspace changed"


def escapes(tmp: Path) -> dict[str, str]:
    """Paths that all lead to a sentinel outside the workspace."""
    ws, outside = tmp / "ws", tmp / "outside"
    return {
        "dotdot": "../outside/secret.txt",
        "dot-dotdot": "./../outside/secret.txt",
        "parent-itself": "..",
        "absolute-elsewhere": f"{outside}/secret.txt",
        "double-slash": f"/{outside}/secret.txt",
        "missing-dir-dotdot": "a/../../outside/secret.txt",
        "file-dotdot": "notes.txt/../../outside/secret.txt",
        "deep-dotdot": "x/y/../../../secret.txt",
        "symlink-to-root": f"to_root{outside}/secret.txt",
        "symlink-to-outside-dir": "to_outside/secret.txt",
        "symlink-chain": "chain1/secret.txt",
        "symlink-file": "link.txt",
        "dangling-symlink-out": "dangling.txt",
        "symlink-then-dotdot": "sub/deep/../secret.txt",
        "absolute-dotdot": f"{ws}/../outside/secret.txt",
        "absolute-alias": f"{tmp}/alias/outside/secret.txt",
        "alias-through-workspace": f"{tmp}/alias/ws/../outside/secret.txt",
        "sibling-name-prefix": f"{tmp}/ws_evil/secret.txt",
        "nul-byte": "notes.txt\x00/../../outside/secret.txt",
    }


SYSTEM_READS = ["/etc/passwd", "//etc/passwd", "to_root/etc/passwd", "/proc/self/environ"]
OPERATIONS = {
    "read_file": lambda p: {"path": p},
    "write_file": lambda p: {"path": p, "content": "PWNED"},
    "edit_file": lambda p: {"path": p, "old": "TOP", "new": "PWNED"},
    "list_dir": lambda p: {"path": p},
    "grep": lambda p: {"pattern": "TOP|root:", "path": p},
}


def test_every_escape_is_refused_by_every_file_tool(run_tool: RunTool, world: Path) -> None:
    leaks = []
    for op, args in OPERATIONS.items():
        for name, path in escapes(world).items():
            result = run_tool(op, **args(path))
            if not result.is_error or "SECRET" in result.content:
                leaks.append(f"{op} {name}: {result.content[:120]!r}")
    assert not leaks, "\n".join(leaks)
    assert not (world / "outside" / "created.txt").exists()


def test_system_files_are_not_read(run_tool: RunTool, world: Path) -> None:
    for path in SYSTEM_READS:
        for op in ("read_file", "grep"):
            result = run_tool(op, **OPERATIONS[op](path))
            assert result.is_error and "root:" not in result.content, (op, path, result)
            assert "outside the workspace" in result.content


def test_resolve_refuses_every_escape(world: Path, workspace: Path) -> None:
    for name, path in [*escapes(world).items(), *((p, p) for p in SYSTEM_READS)]:
        with pytest.raises(ToolError):
            resolve_in_workspace(workspace, path)
            pytest.fail(f"{name}: {path!r} resolved inside")  # pragma: no cover


def test_tilde_is_a_plain_folder_name(
    run_tool: RunTool, world: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(world / "outside"))
    read = run_tool("read_file", path="~/secret.txt")
    assert read.is_error and "no such file" in read.content
    assert run_tool("list_dir", path="~").is_error
    assert not run_tool("write_file", path="~/secret.txt", content="PWNED").is_error
    assert (workspace / "~" / "secret.txt").read_text() == "PWNED"  # inside, literally


def test_glob_and_grep_never_list_or_read_outside(run_tool: RunTool, world: Path) -> None:
    outside = world / "outside"
    for pattern in ["../*", "../outside/*", f"{outside}/*", "/etc/*", "~/*", "../**"]:
        result = run_tool("glob", pattern=pattern)
        assert result.is_error and "outside the workspace" in result.content, pattern
    for pattern in ["**/secret.txt", "*", "**", "to_outside/*", "chain1/*", "sub/**"]:
        listed = run_tool("glob", pattern=pattern).content.splitlines()
        assert not [p for p in listed if p.endswith(("secret.txt", "link.txt"))], pattern
    found = run_tool("grep", pattern="TOP SECRET")
    assert not found.is_error and found.content.startswith("(no matches")


def test_glob_and_grep_do_not_walk_into_symlinked_folders(
    run_tool: RunTool, tmp_path: Path, workspace: Path
) -> None:
    """A small world without a link to "/", so a search that follows links is caught at
    once instead of walking the whole machine."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (workspace / "linked").symlink_to(outside)
    (workspace / "linked.txt").symlink_to(outside / "secret.txt")
    for pattern in ["**/secret.txt", "**", "linked/*"]:
        listed = run_tool("glob", pattern=pattern).content.splitlines()
        assert not [p for p in listed if p.endswith("secret.txt")], pattern
    assert run_tool("grep", pattern="TOP SECRET").content.startswith("(no matches")
    assert run_tool("grep", pattern="TOP", glob="**/*.txt").content.startswith("(no matches")
    # the walk itself, under the recheck that would also drop such names: rg never
    # follows a link, so there is nothing to drop
    walked = run_rg(["--files"], workspace, 100).lines
    assert walked and not [p for p in walked if "secret" in p], walked


def test_symlinks_that_stay_inside_work(run_tool: RunTool, world: Path, workspace: Path) -> None:
    (workspace / "alias.txt").symlink_to("notes.txt")
    (workspace / "lib").symlink_to("sub")
    assert run_tool("read_file", path="alias.txt").content == "1\thello from bosun"
    assert not run_tool("write_file", path="lib/new.txt", content="ok\n").is_error
    assert (workspace / "sub" / "new.txt").read_text() == "ok\n"
    absolute = run_tool("read_file", path=str(workspace / "notes.txt"))
    assert absolute.content == "1\thello from bosun"


def swap_after_check(monkeypatch: pytest.MonkeyPatch, swap) -> None:
    """Run `swap` right after open_in_workspace's path check, before it opens anything:
    the check-then-use race, made deterministic."""
    check = permissions.resolve_in_workspace
    done = []

    def checked_then_swapped(root: Path, path: str) -> Path:
        real = check(root, path)
        if not done:
            done.append(swap())
        return real

    monkeypatch.setattr(permissions, "resolve_in_workspace", checked_then_swapped)


def test_file_swapped_for_symlink_after_check_is_refused(
    run_tool: RunTool, world: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim, secret = workspace / "victim.txt", world / "outside" / "secret.txt"

    def swap() -> None:
        victim.unlink(missing_ok=True)
        victim.symlink_to(secret)

    # (tool, file there before the check): reads and edits race on the read; a write
    # of a new file races on the create, which must not follow the link and truncate.
    for op, existed in [("read_file", True), ("edit_file", True), ("write_file", False)]:
        victim.unlink(missing_ok=True)
        if existed:
            victim.write_text("TOP of a harmless file\n")
        swap_after_check(monkeypatch, swap)
        result = run_tool(op, **OPERATIONS[op]("victim.txt"))
        assert result.is_error and "changed into a symlink" in result.content, (op, result)
        assert "SECRET" not in result.content


def test_folder_swapped_for_symlink_after_check_is_refused(
    run_tool: RunTool, world: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "d").mkdir()

    def swap() -> None:
        (workspace / "d").rename(workspace / "d_moved")
        (workspace / "d").symlink_to(world / "outside")

    swap_after_check(monkeypatch, swap)
    result = run_tool("write_file", path="d/victim.txt", content="PWNED")
    assert result.is_error and "changed into a symlink" in result.content
    assert not (world / "outside" / "victim.txt").exists()
