"""The saved-state file format and folder (drivers/prefix_cache.py), without a model.

A state file is untrusted input: whatever is wrong with one (flipped bytes, a cut-off
end, a foreign magic, another model's key, a link, a half-finished write), it is never
handed out, and the next save replaces it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import struct
import time
from pathlib import Path

import pytest

from drivers.base import UsageError
from drivers.cache_trust import MAC_BYTES, load_secret
from drivers.prefix_cache import (
    DEFAULT_MAX_BYTES,
    MAGIC,
    STALE_PART_S,
    PrefixCache,
    cache_dir,
    clear,
    entries,
    evict,
    max_bytes,
    parse_size,
    read_header,
)

KEY = {"model": "/models/a.gguf", "model_bytes": 1000, "n_ctx": 8192}
TOKENS = list(range(100, 140))
STATE = bytes(range(256)) * 64  # 16 kB


@pytest.fixture
def cache(tmp_path: Path) -> PrefixCache:
    return PrefixCache(KEY, label="tiny", folder=tmp_path / "prefix", limit=10**8)


def saved(cache: PrefixCache, tokens: list[int] = TOKENS, state: bytes = STATE) -> Path:
    path = cache.store(tokens, state)
    assert path is not None and path.is_file()
    return path


def test_a_state_comes_back_for_a_prompt_that_begins_with_its_tokens(cache) -> None:
    path = saved(cache)
    hit = cache.find([*TOKENS, 7, 8, 9])
    assert hit is not None
    assert (hit.tokens, bytes(hit.state), hit.path) == (TOKENS, STATE, path)
    assert cache.find([*TOKENS[:-1], 0, 1, 2]) is None  # differs inside the head
    assert cache.find(TOKENS[:10]) is None  # the prompt is shorter than the head


def test_the_longest_matching_state_wins(cache) -> None:
    saved(cache, TOKENS[:20], b"short" * 100)
    saved(cache, TOKENS, b"long" * 100)
    saved(cache, [*TOKENS[:20], 1, 2, 3], b"other" * 100)
    hit = cache.find([*TOKENS, 5])
    assert hit is not None and bytes(hit.state) == b"long" * 100
    hit = cache.find([*TOKENS[:25], 5])
    assert hit is not None and bytes(hit.state) == b"short" * 100


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def _rewrite_header(path: Path, **changes: object) -> None:
    data = path.read_bytes()
    length = struct.unpack("<I", data[12:16])[0]
    meta = json.loads(data[16 : 16 + length])
    meta.update(changes)
    header = json.dumps(meta).encode()
    path.write_bytes(data[:12] + struct.pack("<I", len(header)) + header + data[16 + length :])


DAMAGE = {
    "a flipped state byte": lambda p: _flip(p, p.stat().st_size - 100),
    "a flipped token byte": lambda p: _flip(p, p.stat().st_size - len(STATE) - 3),
    "a flipped header byte": lambda p: _flip(p, 20),
    "a cut-off end": lambda p: p.write_bytes(p.read_bytes()[:-1000]),
    "a cut-off header": lambda p: p.write_bytes(p.read_bytes()[:30]),
    "an empty file": lambda p: p.write_bytes(b""),
    "a wrong magic": lambda p: p.write_bytes(b"PICKLE!\0" + p.read_bytes()[8:]),
    "a newer version": lambda p: p.write_bytes(MAGIC + struct.pack("<I", 99) + p.read_bytes()[12:]),
    "another model's key": lambda p: _rewrite_header(p, key={**KEY, "model_bytes": 2000}),
    "a header that is not an object": lambda p: p.write_bytes(
        p.read_bytes()[:12] + struct.pack("<I", 2) + b"[]"
    ),
    "a lying state length": lambda p: _rewrite_header(p, state_bytes=len(STATE) + 1),
    "a huge header length": lambda p: p.write_bytes(
        p.read_bytes()[:12] + struct.pack("<I", 2**31) + p.read_bytes()[16:]
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_or_foreign_file_is_never_loaded_and_the_next_save_replaces_it(
    cache, damage: str
) -> None:
    path = saved(cache)
    DAMAGE[damage](path)
    assert cache.find([*TOKENS, 1]) is None
    assert not path.exists()  # deleted, so it is not read again
    assert saved(cache) == path
    hit = cache.find([*TOKENS, 1])
    assert hit is not None and bytes(hit.state) == STATE


def _sign_again(path: Path) -> None:
    """Sign the file's content as it is now with the user's own key (drivers/
    cache_trust.py), as if it had been damaged before bosun signed it."""
    data = path.read_bytes()[:-MAC_BYTES]
    mac = hmac.new(load_secret(), data, hashlib.sha256).digest()
    path.write_bytes(data + mac)


def test_a_flipped_state_byte_is_never_loaded(cache) -> None:
    """The state's checksum is the last line of defence against damage: its header,
    tokens and signature are intact, only the bytes llama.cpp would read changed."""
    path = saved(cache)
    _flip(path, path.stat().st_size - MAC_BYTES - 1)
    _sign_again(path)
    assert cache.find([*TOKENS, 1]) is None
    assert not path.exists()


def test_a_file_under_another_keys_name_is_not_loaded(cache, tmp_path: Path) -> None:
    """The file name is only a digest; the header's full key must match too."""
    other = PrefixCache({**KEY, "n_ctx": 4096}, folder=cache.folder, limit=10**8)
    theirs = saved(other)
    planted = cache.path_for(TOKENS)
    planted.write_bytes(theirs.read_bytes())  # renamed into this key's name space
    assert cache.find([*TOKENS, 1]) is None
    assert not planted.exists()
    hit = other.find([*TOKENS, 1])
    assert hit is not None and bytes(hit.state) == STATE  # theirs is untouched


def test_a_crashed_write_is_never_loaded_and_is_swept_once_old(cache) -> None:
    """A write dies between creating its `.part` file and the rename: the half file,
    even a complete one, is never read, and an old one is removed by the next save."""
    complete = saved(cache)
    part = cache.folder / f".{complete.name}.x1y2z3.part"
    os.rename(complete, part)
    assert cache.find([*TOKENS, 1]) is None
    assert part.exists()  # it may be another process's write in progress
    old = time.time() - STALE_PART_S - 60
    os.utime(part, (old, old))
    saved(cache, TOKENS[:20])
    assert not part.exists()


def test_links_and_fifos_are_not_read(cache, tmp_path: Path) -> None:
    real = saved(cache)
    elsewhere = tmp_path / "elsewhere.kv"
    os.rename(real, elsewhere)
    real.symlink_to(elsewhere)
    assert cache.find([*TOKENS, 1]) is None
    assert not real.is_symlink() and elsewhere.exists()  # the link went, not its target
    os.mkfifo(real)
    assert cache.find([*TOKENS, 1]) is None  # a FIFO would hang a plain open()


def test_the_cap_evicts_the_least_recently_used(tmp_path: Path) -> None:
    state = b"x" * 10_000
    cache = PrefixCache(KEY, folder=tmp_path / "p", limit=35_000)
    a = saved(cache, [1] * 40, state)
    b = saved(cache, [2] * 40, state)
    c = saved(cache, [3] * 40, state)
    for age, path in ((300, a), (200, b), (100, c)):
        os.utime(path, (time.time() - age, time.time() - age))
    assert cache.find([1] * 41) is not None  # a is now the most recently used
    d = saved(cache, [4] * 40, state)
    assert [p.exists() for p in (a, b, c, d)] == [True, False, True, True]


def test_a_state_larger_than_the_cap_is_neither_saved_nor_read(tmp_path: Path) -> None:
    """A planted file claiming gigabytes is not read into memory."""
    cache = PrefixCache(KEY, folder=tmp_path / "p", limit=1000)
    assert cache.store(TOKENS, STATE) is None
    assert not list((tmp_path / "p").glob("*"))
    big = saved(PrefixCache(KEY, folder=tmp_path / "p", limit=10**8))
    assert cache.find([*TOKENS, 1]) is None
    assert not big.exists()


def test_a_cap_of_zero_turns_the_cache_off(tmp_path: Path) -> None:
    cache = PrefixCache(KEY, folder=tmp_path / "p", limit=0)
    assert not cache.enabled
    assert cache.store(TOKENS, STATE) is None and cache.find([*TOKENS, 1]) is None


def test_an_unwritable_folder_is_not_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = PrefixCache(KEY, folder=blocker / "prefix", limit=10**8)
    assert cache.store(TOKENS, STATE) is None
    assert cache.find([*TOKENS, 1]) is None


def test_entries_and_clear_touch_only_state_files(cache) -> None:
    path = saved(cache)
    (cache.folder / "notes.txt").write_text("mine")
    broken = cache.folder / ("0" * 16 + "-" + "1" * 16 + ".kv")
    broken.write_bytes(b"garbage")
    found = entries(cache.folder)
    assert {e.path for e in found} == {path, broken}
    good = next(e for e in found if e.path == path)
    assert good.header == read_header(path)
    assert good.header.label == "tiny" and good.header.tokens == TOKENS
    assert good.size == path.stat().st_size
    assert next(e for e in found if e.path == broken).header is None
    assert clear(cache.folder) == (2, good.size + len(b"garbage"))
    assert [p.name for p in cache.folder.iterdir()] == ["notes.txt"]


def test_evict_keeps_everything_under_the_cap(cache) -> None:
    saved(cache)
    assert evict(cache.folder, 10**8) == 0
    assert len(entries(cache.folder)) == 1


def test_sizes_and_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert [parse_size(s) for s in ("0", "1024", "2G", "512m", "1.5k", "3GiB")] == [
        0,
        1024,
        2 * 1024**3,
        512 * 1024**2,
        1536,
        3 * 1024**3,
    ]
    with pytest.raises(ValueError):
        parse_size("lots")
    monkeypatch.delenv("BOSUN_PREFIX_CACHE_MAX", raising=False)
    assert max_bytes() == DEFAULT_MAX_BYTES == 2 * 1024**3
    monkeypatch.setenv("BOSUN_PREFIX_CACHE_MAX", "500M")
    assert max_bytes() == 500 * 1024**2
    monkeypatch.setenv("BOSUN_PREFIX_CACHE_MAX", "a lot")
    with pytest.raises(UsageError, match="BOSUN_PREFIX_CACHE_MAX"):
        max_bytes()
    monkeypatch.delenv("BOSUN_PREFIX_CACHE")
    monkeypatch.setenv("BOSUN_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c" / "prefix"
    monkeypatch.setenv("BOSUN_PREFIX_CACHE", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
