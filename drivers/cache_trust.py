"""Whose saved prompt states these are: folder and file ownership, and the user's secret.

A saved KV state goes straight into llama.cpp's memory and decides what the model says
next, so a state someone else could write is someone else's words in the model's mouth.
Checksums do not help: anyone can recompute them. Two checks, as ssh does with ~/.ssh:

- the cache folder and every state file must belong to the user (or root) and not be
  writable by group or others; otherwise they are not read (nor written into);
- every state carries an HMAC-SHA256 over its content, keyed by a secret only the user
  holds: 32 random bytes in `prefix-cache.key` in bosun's data folder, mode 0600, made
  on first use (written under a temporary name, then linked into place, so two
  processes starting at once agree on one key and nobody ever reads half of one). A key
  file that is not the user's, not private, a link, or not 32 bytes is refused, never
  replaced: it is the user's to look at.

A refusal is never an error: the session starts cold and llama.cpp's log gets one line
saying why (`refuse`), once per reason per process. This is in drivers/, which imports
nothing of agent, so bosun's data folder is worked out here as agent.session does.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
import threading
from pathlib import Path

from drivers import llama_log

KEY_NAME = "prefix-cache.key"
KEY_BYTES = 32
MAC_BYTES = hashlib.sha256().digest_size
_NOTED: set[str] = set()
_LOCK = threading.Lock()


class Distrusted(Exception):
    """A folder, state file or key file someone other than the user could have written."""


def data_home() -> Path:
    """bosun's data folder: $BOSUN_HOME, else the platform's (as agent.session.bosun_home)."""
    env = os.environ.get("BOSUN_HOME")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("bosun", appauthor=False))


def refuse(message: str) -> None:
    """One line in llama.cpp's log (never the terminal), once per message per process."""
    with _LOCK:
        if message in _NOTED:
            return
        _NOTED.add(message)
    llama_log.note(f"bosun: {message}; starting cold")


def check(info: os.stat_result, what: str, *, private: bool = False) -> None:
    """Distrusted unless `info` is the user's (or root's) and not writable by group or
    others (`private`: not readable by them either, for a secret)."""
    owner = info.st_uid
    if owner not in (os.geteuid(), 0):
        raise Distrusted(f"{what} is owned by uid {owner}, not by you")
    loose = info.st_mode & (0o077 if private else 0o022)
    if loose:
        kind = "readable or writable" if private else "writable"
        mode = oct(stat.S_IMODE(info.st_mode))
        raise Distrusted(f"{what} is {kind} by group or others (mode {mode})")


def check_folder(folder: Path, what: str = "the saved prompt states' folder") -> None:
    """Distrusted for a folder others can write (FileNotFoundError when there is none)."""
    info = folder.stat()  # a link to a folder is fine: the folder it names is checked
    if not stat.S_ISDIR(info.st_mode):
        raise Distrusted(f"{what} {folder} is not a folder")
    check(info, f"{what} {folder}")


def check_fd(fd: int, path: Path) -> None:
    """Distrusted for a state file someone else owns or can write."""
    check(os.fstat(fd), f"saved state {path.name} in {path.parent}")


def _read_key(path: Path) -> bytes:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise Distrusted(f"key file {path} cannot be read ({exc.strerror}; a link?)") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        what = f"key file {path}"
        if not stat.S_ISREG(info.st_mode):
            raise Distrusted(f"{what} is not a regular file")
        check(info, what, private=True)
        key = f.read(KEY_BYTES + 1)
    if len(key) != KEY_BYTES:
        raise Distrusted(f"{what} is not {KEY_BYTES} bytes (delete it: bosun makes a new one)")
    return key


def load_secret(home: Path | None = None) -> bytes:
    """The user's secret, made on first use; Distrusted if the key file or its folder
    could be someone else's (then nothing is saved or loaded)."""
    home = home if home is not None else data_home()
    path = home / KEY_NAME
    try:
        check_folder(home, "bosun's data folder")
        return _read_key(path)
    except FileNotFoundError:
        pass
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        check_folder(home, "bosun's data folder")
        tmp = home / f".{KEY_NAME}.{secrets.token_hex(8)}.part"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(secrets.token_bytes(KEY_BYTES))
                out.flush()
                os.fsync(out.fileno())
            with contextlib.suppress(FileExistsError):  # another process made one first
                os.link(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
    except OSError as exc:
        raise Distrusted(f"no key file: cannot write {path} ({exc.strerror})") from None
    return _read_key(path)


def signer(secret: bytes) -> hmac.HMAC:
    """An HMAC-SHA256 to feed a state file's bytes (all of them before the MAC)."""
    return hmac.new(secret, digestmod=hashlib.sha256)


def same(mac: bytes, expected: bytes) -> bool:
    return hmac.compare_digest(mac, expected)
