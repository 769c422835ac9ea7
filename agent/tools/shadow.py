"""A shadow git repository per workspace: snapshots that cover what bash changed too.

The file tools' checkpoints (agent.tools.checkpoints) see only what bosun's own writes
touch, and a shell command can change anything. So before a request that may write or
run bash, and after it, the workspace's tracked and untracked-but-not-ignored files are
snapshotted into a repository of bosun's own under BOSUN_HOME/checkpoints/, one per
workspace (keyed by its real path). git does the work because it is fast at exactly
this: a stat cache makes an unchanged tree cost one scan, and blobs dedupe across
snapshots, so an unchanged workspace adds nothing.

The user's repository is never read or written: GIT_DIR names the shadow, GIT_WORK_TREE
the workspace, and the user's GIT_* variables are dropped. git skips any `.git` on its
own and honours the workspace's .gitignore files. Each session has its own index file,
so two chats on one workspace do not race. Files over the size cap are not stored (and
said); nested repositories are left out. Snapshots are refs
`refs/bosun/SESSION/N/{before,after}` (N: the request's number in its conversation),
pruned by count and age.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 10 * 1024 * 1024  # a bigger file is not snapshotted (and says so)
KEEP = 100  # requests kept per workspace, newest first
KEEP_DAYS = 14
_TIMEOUT = 120  # seconds one git command may take
_SESSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")
ABSENT_MODE = "000000"


class SnapshotError(Exception):
    """git failed or timed out: said once as a diagnostic; the request goes on."""


@dataclass(frozen=True)
class Shot:
    commit: str
    tree: str
    skipped: tuple[str, ...] = ()  # over the size cap: not stored


@dataclass(frozen=True)
class Entry:
    """One path in a snapshot: its git mode ("100644", "100755", "120000"; ABSENT_MODE
    when it is not there) and blob id."""

    mode: str = ABSENT_MODE
    blob: str = ""


def git_available() -> bool:
    return shutil.which("git") is not None


def blob_id(data: bytes) -> str:
    """The id git gives these bytes as a blob (what a restore checks files against)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def shadow_dir(workspace: Path) -> Path:
    from agent.session import bosun_home

    key = hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:20]
    return bosun_home() / "checkpoints" / key


class ShadowRepo:
    def __init__(self, workspace: Path, session: str, *, max_bytes: int = MAX_FILE_BYTES) -> None:
        if not _SESSION.match(session):
            raise SnapshotError(f"session id {session!r} cannot name a snapshot")
        self.root = workspace.resolve()
        self.session = session
        self.max_bytes = max_bytes
        self.dir = shadow_dir(workspace)
        self.git_dir = self.dir / "git"
        self._index = self.git_dir / f"index-{session}"

    # --- plumbing ------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        who = {"NAME": "bosun", "EMAIL": "bosun@localhost"}
        env.update({f"GIT_{r}_{k}": v for r in ("AUTHOR", "COMMITTER") for k, v in who.items()})
        env.update(
            GIT_DIR=str(self.git_dir),
            GIT_WORK_TREE=str(self.root),
            GIT_INDEX_FILE=str(self._index),
            GIT_TERMINAL_PROMPT="0",
            GIT_OPTIONAL_LOCKS="0",
        )
        return env

    def git(self, *args: str, stdin: bytes | None = None) -> bytes:
        try:
            done = subprocess.run(
                ["git", *args],
                input=stdin,
                capture_output=True,
                env=self._env(),
                cwd=self.root,
                timeout=_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SnapshotError(f"git {args[0]}: {exc}") from None
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise SnapshotError(f"git {args[0]} failed: {why[-1] if why else done.returncode}")
        return done.stdout

    def ensure(self) -> None:
        """Create the shadow repository on first use (plain git, nothing shared)."""
        if (self.git_dir / "HEAD").is_file():
            return
        try:
            self.git_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SnapshotError(f"cannot create {self.git_dir}: {exc.strerror}") from None
        self.git("init", "-q")
        for key, value in (
            ("core.autocrlf", "false"),
            ("core.fsmonitor", "false"),
            ("core.symlinks", "true"),
            ("gc.auto", "0"),
            ("bosun.workspace", str(self.root)),  # unread by git: says whose shadow it is
        ):
            self.git("config", key, value)
        exclude = [".git", ".*.bosun-undo-*"]
        with contextlib.suppress(ValueError):  # bosun's own folder inside the workspace
            exclude.append("/" + str(self.dir.resolve().relative_to(self.root)))
        (self.git_dir / "info").mkdir(exist_ok=True)
        (self.git_dir / "info" / "exclude").write_text("\n".join(exclude) + "\n")

    # --- snapshots -----------------------------------------------------------------

    def tree(self) -> tuple[str, tuple[str, ...]]:
        """The workspace as a tree now (stored), and the files skipped as too big.

        Each path git lists is looked at without following a link on its way: one that
        is gone, a folder now (a file was swapped for one: its files are listed on their
        own), or below a link or a file now (a folder was swapped for one) leaves the
        index, first, so adding what took its place meets no file/folder conflict; git
        refuses such paths outright ("beyond a symbolic link", "Unable to process
        path"), and one refusal would cost the whole snapshot."""
        self.ensure()
        listed = self.git("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        paths = sorted({p for p in listed.decode("utf-8", "surrogateescape").split("\0") if p})
        keep: list[str] = []
        gone: list[str] = []
        big: list[str] = []
        folders: dict[str, bool] = {}  # a folder on the way: a real folder (not a link)?
        for path in paths:
            if path.endswith("/"):  # a nested repository: its own business
                continue
            info = self._lstat(path, folders)
            if info is None or stat.S_ISDIR(info.st_mode):
                gone.append(path)
            elif stat.S_ISLNK(info.st_mode):
                keep.append(path)
            elif not stat.S_ISREG(info.st_mode) or info.st_size > self.max_bytes:
                big.append(path)  # a FIFO or a socket git cannot store: not covered either
            else:
                keep.append(path)
        if gone or big:
            self.git("update-index", "-z", "--force-remove", "--stdin", stdin=_z(gone + big))
        self.git("update-index", "-z", "--add", "--remove", "--replace", "--stdin", stdin=_z(keep))
        return self.git("write-tree").decode().strip(), tuple(big)

    def _lstat(self, path: str, folders: dict[str, bool]) -> os.stat_result | None:
        """`path`'s own lstat, or None where it is gone or a folder on its way is not a
        real folder now (a link, a file): git sees no such path."""
        parts = path.split("/")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if folder not in folders:
                try:
                    folders[folder] = stat.S_ISDIR(os.lstat(self.root / folder).st_mode)
                except OSError:
                    folders[folder] = False
            if not folders[folder]:
                return None
        try:
            return os.lstat(self.root / path)
        except OSError:
            return None

    def snapshot(self, number: int, which: str, mark: dict[str, object] | None = None) -> Shot:
        """Snapshot the workspace as request `number`'s `which` ("before"/"after"); an
        unchanged tree reuses the previous commit."""
        tree, big = self.tree()
        parent = self.ref(number, "before") if which == "after" else self.latest()
        if parent is not None and self.tree_of(parent) == tree and not big:
            commit = parent
        else:
            note = json.dumps({**(mark or {}), "skipped": list(big)})
            title = f"bosun {self.session} request {number} {which}"
            args = ["commit-tree", tree, "-m", title, "-m", note]
            if parent is not None:
                args += ["-p", parent]
            commit = self.git(*args).decode().strip()
        self.git("update-ref", self._ref(number, which), commit)
        return Shot(commit, tree, big)

    def _ref(self, number: int, which: str) -> str:
        return f"refs/bosun/{self.session}/{number}/{which}"

    def ref(self, number: int, which: str) -> str | None:
        try:
            out = self.git("rev-parse", "--verify", "-q", self._ref(number, which) + "^{commit}")
        except SnapshotError:
            return None
        return out.decode().strip() or None

    def numbers(self) -> list[int]:
        """This session's request numbers that have a snapshot, in order."""
        if not (self.git_dir / "HEAD").is_file():
            return []
        out = self.git("for-each-ref", "--format=%(refname)", f"refs/bosun/{self.session}/")
        found = {int(m.group(1)) for m in re.finditer(rb"/(\d+)/before$", out, re.M)}
        return sorted(found)

    def latest(self) -> str | None:
        numbers = self.numbers()
        for number in reversed(numbers):
            for which in ("after", "before"):
                if commit := self.ref(number, which):
                    return commit
        return None

    def tree_of(self, commit: str) -> str:
        return self.git("rev-parse", commit + "^{tree}").decode().strip()

    def note(self, commit: str) -> dict[str, object]:
        """What a snapshot's message recorded (prompt, skipped files), and its time."""
        raw = self.git("log", "-1", "--format=%ct%n%b", commit).decode("utf-8", "replace")
        when, _, body = raw.partition("\n")
        try:
            data = json.loads(body.strip().splitlines()[-1]) if body.strip() else {}
        except (ValueError, IndexError):
            data = {}
        data = data if isinstance(data, dict) else {}
        data["time"] = int(when) if when.strip().isdigit() else 0
        return data

    def listing(self, tree: str) -> dict[str, Entry]:
        out = self.git("ls-tree", "-r", "-z", "--full-tree", tree)
        entries = {}
        for record in out.split(b"\0"):
            if not record:
                continue
            head, _, path = record.partition(b"\t")
            mode, _kind, blob = head.decode().split()
            entries[path.decode("utf-8", "surrogateescape")] = Entry(mode, blob)
        return entries

    def diff(self, a: str, b: str) -> dict[str, tuple[Entry, Entry]]:
        """The paths that differ between two trees or commits, each as (in a, in b)."""
        out = self.git("diff-tree", "-r", "-z", "--no-renames", a, b).split(b"\0")
        changes = {}
        for head, path in zip(out[0::2], out[1::2], strict=False):
            if not head.startswith(b":"):
                continue
            old_mode, new_mode, old, new, _ = head[1:].decode().split()
            changes[path.decode("utf-8", "surrogateescape")] = (
                _entry(old_mode, old),
                _entry(new_mode, new),
            )
        return changes

    def blob(self, blob: str) -> bytes:
        return self.git("cat-file", "blob", blob)

    def drop_from(self, number: int) -> None:
        """Forget this session's snapshots of request `number` and later (undone)."""
        lines = [
            f"delete {self._ref(n, w)}\n"
            for n in self.numbers()
            if n >= number
            for w in ("before", "after")
            if self.ref(n, w)
        ]
        if lines:
            self.git("update-ref", "--stdin", stdin="".join(lines).encode())

    def prune(self, keep: int = KEEP, days: float = KEEP_DAYS) -> int:
        """Drop all but the newest `keep` requests of this workspace and any older than
        `days`; a gc at most once a day when something went. The number dropped."""
        if not (self.git_dir / "HEAD").is_file():
            return 0
        out = self.git("for-each-ref", "--format=%(committerdate:unix) %(refname)", "refs/bosun/")
        requests: dict[str, int] = {}
        refs: dict[str, list[str]] = {}
        for line in out.decode().splitlines():
            when, _, name = line.partition(" ")
            key = name.rsplit("/", 1)[0]
            requests[key] = max(requests.get(key, 0), int(when or 0))
            refs.setdefault(key, []).append(name)
        cutoff = time.time() - days * 86400
        newest = sorted(requests, key=lambda k: requests[k], reverse=True)
        gone = [k for i, k in enumerate(newest) if i >= keep or requests[k] < cutoff]
        if not gone:
            return 0
        doomed = "".join(f"delete {r}\n" for k in gone for r in refs[k])
        self.git("update-ref", "--stdin", stdin=doomed.encode())
        stamp = self.git_dir / "bosun-gc"
        with contextlib.suppress(OSError):
            if not stamp.exists() or stamp.stat().st_mtime < time.time() - 86400:
                stamp.touch()
                self.git("gc", "-q", "--prune=now")
        return len(gone)


def _entry(mode: str, blob: str) -> Entry:
    return Entry() if mode == ABSENT_MODE else Entry(mode, blob)


def _z(paths: list[str]) -> bytes:
    return b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
