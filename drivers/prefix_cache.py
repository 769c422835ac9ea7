"""Saved KV states of prompt heads, so that a fresh session starts warm.

Every session's first prompt begins with the same head (the system prompt and the tool
specs, about 1,000 tokens); evaluating it costs seconds on a CPU and gives the same KV
state every time for the same model file, context settings and tokens. The in-process
driver saves that state here once, and a later session (another `bosun run`, the next
`bosun chat`, the first task of a batch) loads it and evaluates only what follows.

A state file is untrusted input: anyone who can write the folder can plant one, and a
crash can leave half of one. So the format is bosun's own, never pickle (unpickling a
planted file runs its code), and every field is checked before llama.cpp sees a byte:

    "BOSUNKV\\0" | version u32 | header length u32 | header (JSON) | tokens (u32 each) | state
      | HMAC-SHA256 of everything before it, keyed by the user's secret

The header holds the key (model file, context settings, llama-cpp-python version), the
number of tokens, the state's length and the sha256 of tokens and state. A file whose
magic, version, key, lengths, checksums or HMAC are off is deleted, never loaded, and
the next save writes it again. Checksums catch damage; only the HMAC tells the user's
own states from planted ones (anyone can recompute a checksum), and a folder or file
others can write or own is not used at all (drivers/cache_trust.py): a cold start and
one line in llama.cpp's log. A write goes to a hidden `.part` file that is fsynced, then
renamed over the name readers look for, so a crashed write is never read (old `.part`
files are swept, drivers/prefix_folder.py). The folder is capped (2 GiB unless
$BOSUN_PREFIX_CACHE_MAX says otherwise): the least recently used states go first.

The cache is an optimisation, so no fault of it fails a call: a state that cannot be
written (a full disk, a read-only folder) or read (damaged, unreadable) costs a cold
start, and the fault is kept in `faults` for the driver to pass on as one warning.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import stat
import struct
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drivers import cache_trust
from drivers.base import UsageError
from drivers.bundled import cache_root
from drivers.cache_trust import MAC_BYTES, Distrusted
from drivers.prefix_folder import _NAME, _PART, _drop, _files, _fsync_folder, evict
from drivers.prefix_folder import STALE_PART_S as STALE_PART_S  # re-exported: the folder's rules

MAGIC = b"BOSUNKV\0"
VERSION = 2  # 2: signed (an HMAC after the state)
_FIXED = struct.Struct("<8sII")  # magic, version, header length
MAX_HEADER = 64 * 1024
MAX_TOKENS = 1 << 24
DEFAULT_MAX_BYTES = 2 * 1024**3
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def cache_dir() -> Path:
    """$BOSUN_PREFIX_CACHE, else `prefix/` in bosun's cache folder ($BOSUN_CACHE)."""
    env = os.environ.get("BOSUN_PREFIX_CACHE")
    return Path(env).expanduser() if env else cache_root() / "prefix"


def parse_size(text: str) -> int:
    """ "2G", "512M", "1.5g", "0", "123456" -> bytes (binary units); ValueError otherwise."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text.lower())
    if match is None:
        raise ValueError(text)
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def max_bytes() -> int:
    """The cap on the folder: $BOSUN_PREFIX_CACHE_MAX (e.g. 2G, 500M; 0 turns saving and
    loading off), else 2 GiB."""
    env = os.environ.get("BOSUN_PREFIX_CACHE_MAX")
    if env is None or not env.strip():
        return DEFAULT_MAX_BYTES
    try:
        return parse_size(env)
    except ValueError:
        raise UsageError(
            f"BOSUN_PREFIX_CACHE_MAX={env!r} is not a size; use e.g. 2G, 500M or 0 (off)"
        ) from None


def _digest(data: bytes | bytearray | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def _token_bytes(tokens: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(tokens)}I", *tokens)


def key_id(key: Mapping[str, Any]) -> str:
    return _digest(json.dumps(key, sort_keys=True).encode("utf-8"))[:16]


def _why(exc: BaseException) -> str:
    """A fault's reason in a person's words."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _write_parts(fd: int, parts: Iterable[bytes | bytearray | memoryview]) -> None:
    """Every byte of `parts` onto the disk behind `fd`, durably: the one place a state's
    bytes are written, so a full disk (ENOSPC, here or at the fsync) fails here."""
    for part in parts:
        view = memoryview(part).cast("B")
        while view:
            view = view[os.write(fd, view) :]
    os.fsync(fd)


@dataclass(frozen=True)
class Header:
    """What a state file says about itself, checked for shape but not yet for content."""

    key: dict[str, Any]
    label: str  # the model's name, for people
    tokens: list[int]
    state_bytes: int
    state_sha256: str
    created: float
    offset: int  # where the state starts


@dataclass(frozen=True)
class Saved:
    """A state that matched and passed every check, ready for llama.cpp."""

    tokens: list[int]
    state: bytearray
    path: Path


@dataclass(frozen=True)
class Entry:
    """One file of the folder, for `bosun cache info`."""

    path: Path
    size: int
    used: float  # last saved or loaded (the file's mtime: the LRU order)
    header: Header | None  # None: damaged (it will be deleted when next met)


def _open_regular(path: Path) -> int:
    """A file descriptor for `path` only if it is a regular file, not a link or a FIFO
    someone planted (which could redirect or hang a read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return fd


def _read_exact(f: Any, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ValueError("truncated")
    return data


def _parse_header(f: Any, size: int) -> Header:
    """Read and check the fixed part, the JSON header and the tokens; ValueError if any
    field is missing, mistyped, out of bounds or inconsistent with the file's size."""
    magic, version, length = _FIXED.unpack(_read_exact(f, _FIXED.size))
    if magic != MAGIC or version != VERSION or not 0 < length <= MAX_HEADER:
        raise ValueError("not a bosun state file of this version")
    meta = json.loads(_read_exact(f, length).decode("utf-8"))
    if not isinstance(meta, dict):
        raise ValueError("header is not an object")
    key, label, n = meta.get("key"), meta.get("model"), meta.get("tokens")
    state_bytes, state_sha, token_sha = (
        meta.get("state_bytes"),
        meta.get("state_sha256"),
        meta.get("tokens_sha256"),
    )
    created = meta.get("created")
    if not (
        isinstance(key, dict)
        and isinstance(label, str)
        and isinstance(n, int)
        and 0 < n <= MAX_TOKENS
        and isinstance(state_bytes, int)
        and state_bytes > 0
        and isinstance(state_sha, str)
        and isinstance(token_sha, str)
        and isinstance(created, int | float)
    ):
        raise ValueError("header fields")
    offset = _FIXED.size + length + 4 * n
    if size != offset + state_bytes + MAC_BYTES:
        raise ValueError("size does not match the header")
    raw = _read_exact(f, 4 * n)
    if _digest(raw) != token_sha:
        raise ValueError("tokens checksum")
    tokens = list(struct.unpack(f"<{n}I", raw))
    return Header(key, label, tokens, state_bytes, state_sha, float(created), offset)


def read_header(path: Path) -> Header:
    """The checked header of one state file (OSError, ValueError when it is damaged)."""
    fd = _open_regular(path)
    with os.fdopen(fd, "rb") as f:
        return _parse_header(f, os.fstat(f.fileno()).st_size)


def read_state(
    path: Path, key: Mapping[str, Any], secret: bytes | None = None
) -> tuple[list[int], bytearray]:
    """Tokens and state of one file, every check passed: OSError, ValueError if not,
    Distrusted for a file others can write or own or one not signed with `secret` (the
    user's, from bosun's data folder, when None)."""
    secret = secret if secret is not None else cache_trust.load_secret()
    fd = _open_regular(path)
    with os.fdopen(fd, "rb") as f:
        cache_trust.check_fd(f.fileno(), path)
        header = _parse_header(f, os.fstat(f.fileno()).st_size)
        if header.key != dict(key):
            raise ValueError("saved for another model or other settings")
        f.seek(0)
        mac = cache_trust.signer(secret)
        mac.update(_read_exact(f, header.offset))
        state = bytearray(header.state_bytes)
        if f.readinto(state) != header.state_bytes:
            raise ValueError("truncated")
        mac.update(state)
        signed = _read_exact(f, MAC_BYTES)
    if _digest(state) != header.state_sha256:
        raise ValueError("state checksum")
    if not cache_trust.same(signed, mac.digest()):
        raise Distrusted(f"saved state {path.name} in {path.parent} is not signed with your key")
    return header.tokens, state


class PrefixCache:
    """The saved states of one model under one set of context settings (`key`).

    Files of every key share one folder and one cap; a key only ever reads its own
    (the key's digest starts the file name, and the header's full key must match).
    """

    def __init__(
        self,
        key: Mapping[str, Any],
        *,
        label: str = "",
        folder: Path | None = None,
        limit: int | None = None,
        secret: bytes | None = None,
    ) -> None:
        self.key = dict(key)
        self.key_id = key_id(self.key)
        self.label = label
        self.folder = folder if folder is not None else cache_dir()
        self.limit = max_bytes() if limit is None else limit
        self._secret = secret  # None: the user's, read (or made) on first use
        # (kind, message): what went wrong and was worked around, for the driver to say
        # once per kind ("save", "load"); it takes them with take_faults().
        self.faults: list[tuple[str, str]] = []

    def _fault(self, kind: str, message: str) -> None:
        if len(self.faults) < 16:  # a driver drains them every call; never unbounded
            self.faults.append((kind, f"prompt cache: {message}"))

    def take_faults(self) -> list[tuple[str, str]]:
        faults, self.faults = self.faults, []
        return faults

    def _trusted(self) -> bytes | None:
        """The user's secret when the folder and the key file can be trusted; None (and
        one line in llama.cpp's log) when not, and then nothing is read or written."""
        try:
            cache_trust.check_folder(self.folder)
            if self._secret is None:
                self._secret = cache_trust.load_secret()
        except Distrusted as exc:
            cache_trust.refuse(str(exc))
            return None
        except FileNotFoundError:  # no folder yet: nothing saved
            return None
        except OSError as exc:  # one that cannot be looked at
            self._fault("load", f"{self.folder} cannot be read ({_why(exc)}); starting cold")
            return None
        return self._secret

    def _unusable(self, path: Path, exc: BaseException) -> None:
        """A state file that failed a check or a read: deleted (the next save writes it
        whole again), and said."""
        _drop(path)
        self._fault(
            "load",
            f"a saved state in {self.folder} could not be used ({_why(exc)}) and was"
            " deleted; the head is evaluated instead and saved again",
        )

    @property
    def enabled(self) -> bool:
        return self.limit > 0

    def path_for(self, tokens: Sequence[int]) -> Path:
        return self.folder / f"{self.key_id}-{_digest(_token_bytes(tokens))[:16]}.kv"

    def find(self, tokens: Sequence[int]) -> Saved | None:
        """The longest saved state whose tokens begin `tokens`. A file that fails any
        check is deleted and the next longest is tried; nothing matching is None."""
        if not self.enabled:
            return None
        secret = self._trusted()
        if secret is None:
            return None
        try:
            paths = [p for p in self.folder.glob(f"{self.key_id}-*.kv") if _NAME.match(p.name)]
        except OSError as exc:
            self._fault("load", f"{self.folder} cannot be listed ({_why(exc)}); starting cold")
            return None
        candidates: list[tuple[int, Path]] = []
        for path in paths:
            try:
                header = read_header(path)
            except FileNotFoundError:
                continue  # evicted or replaced meanwhile
            except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
                self._unusable(path, exc)
                continue
            n = len(header.tokens)
            if header.key != self.key or header.state_bytes > self.limit:
                _drop(path)  # a digest collision or a planted file: never ours to load
            elif n <= len(tokens) and list(tokens[:n]) == header.tokens:
                candidates.append((n, path))
        for _, path in sorted(candidates, reverse=True):
            try:
                saved, state = read_state(path, self.key, secret)
            except FileNotFoundError:
                continue
            except Distrusted as exc:  # planted, or another user's: never ours to load
                cache_trust.refuse(str(exc))
                _drop(path)
                continue
            except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
                self._unusable(path, exc)
                continue
            with contextlib.suppress(OSError):
                os.utime(path)  # most recently used
            return Saved(saved, state, path)
        return None

    def store(self, tokens: Sequence[int], state: bytes | bytearray | memoryview) -> Path | None:
        """Save `state` (the KV state after exactly `tokens`) atomically, then evict down
        to the cap. A cache that cannot be written is not an error: None, and a fault
        (a full disk leaves no `.part` behind either). Writers racing on one head each
        write their own `.part` and rename it over the name: the last one stands, whole."""
        size = len(state)
        if not self.enabled or not tokens or not size:
            return None
        raw = _token_bytes(tokens)
        meta = {
            "key": self.key,
            "model": self.label,
            "tokens": len(tokens),
            "tokens_sha256": _digest(raw),
            "state_bytes": size,
            "state_sha256": _digest(state),
            "created": time.time(),
        }
        header = json.dumps(meta, sort_keys=True).encode("utf-8")
        total = _FIXED.size + len(header) + len(raw) + size
        if total > self.limit or len(header) > MAX_HEADER:
            return None
        target = self.path_for(tokens)
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            self._cannot_save(exc)
            return None
        secret = self._trusted()
        if secret is None:
            return None
        mac = cache_trust.signer(secret)
        parts = (_FIXED.pack(MAGIC, VERSION, len(header)), header, raw, state)
        for part in parts:
            mac.update(part)
        tmp: str | None = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=self.folder)
            try:
                _write_parts(fd, (*parts, mac.digest()))
            finally:
                os.close(fd)
            os.replace(tmp, target)  # readers see the old file, or the whole new one
            tmp = None
            _fsync_folder(self.folder)
        except OSError as exc:
            self._cannot_save(exc)
            return None
        finally:
            if tmp is not None:
                _drop(Path(tmp))
        evict(self.folder, self.limit, keep=target)
        return target

    def _cannot_save(self, exc: OSError) -> None:
        self._fault(
            "save",
            f"the prompt's head could not be saved in {self.folder} ({_why(exc)}); this"
            " session goes on, and later ones start cold until it can be (free space, or"
            " set BOSUN_PREFIX_CACHE to another folder)",
        )


def entries(folder: Path | None = None) -> list[Entry]:
    """Every state file, most recently used first; a damaged one has no header."""
    folder = folder if folder is not None else cache_dir()
    out = []
    for path, info in _files(folder):
        if _PART.match(path.name):
            continue
        try:
            header: Header | None = read_header(path)
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            header = None
        out.append(Entry(path, info.st_size, info.st_mtime, header))
    return sorted(out, key=lambda e: e.used, reverse=True)


def clear(folder: Path | None = None) -> tuple[int, int]:
    """Delete every state file and leftover `.part` file (nothing else in the folder);
    returns (files, bytes) deleted."""
    folder = folder if folder is not None else cache_dir()
    files = size = 0
    for path, info in _files(folder):
        try:
            path.unlink()
        except OSError:
            continue
        files += 1
        size += info.st_size
    return files, size
