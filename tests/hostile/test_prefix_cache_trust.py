"""Saved prompt states planted by someone else: a cache folder or state file another user
can write (or owns), a state whose checksums were recomputed after it was changed, a
state signed with another secret, and a secret key file that is not private. Each is a
cold start with one line in llama.cpp's log, never an error and never a loaded state."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from drivers import llama_log
from drivers.prefix_cache import PrefixCache

KEY = {"model": "/models/a.gguf", "model_bytes": 1000, "n_ctx": 8192}
TOKENS = list(range(100, 140))
STATE = bytes(range(256)) * 64
STRANGER = 4321  # a uid that is neither the user's nor root's


@pytest.fixture
def log(tmp_path: Path) -> Iterator[Path]:
    """llama.cpp's log file, where a refusal leaves its one line."""
    path = tmp_path / "llama.log"
    llama_log.send_to(path)
    yield path
    llama_log.send_to(None)


def lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "prefix"


def cache(folder: Path) -> PrefixCache:
    return PrefixCache(KEY, label="tiny", folder=folder, limit=10**8)


def saved(folder: Path) -> Path:
    path = cache(folder).store(TOKENS, STATE)
    assert path is not None
    assert cache(folder).find([*TOKENS, 1]) is not None  # loadable as it was written
    return path


def key_file() -> Path:
    return Path(os.environ["BOSUN_HOME"]) / "prefix-cache.key"


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777, 0o722], ids=oct)
def test_a_folder_others_can_write_is_never_read(folder: Path, log: Path, mode: int) -> None:
    path = saved(folder)
    folder.chmod(mode)
    assert cache(folder).find([*TOKENS, 1]) is None
    assert cache(folder).store(TOKENS[:20], STATE) is None  # nor written into
    assert path.exists()  # and nothing in it touched
    [line] = [x for x in lines(log) if str(folder) in x]
    assert "writable" in line
    folder.chmod(0o700)
    assert cache(folder).find([*TOKENS, 1]) is not None  # a private folder again: warm


def test_a_folder_owned_by_someone_else_is_never_read(folder: Path, log: Path) -> None:
    saved(folder)
    os.chown(folder, STRANGER, STRANGER)
    assert cache(folder).find([*TOKENS, 1]) is None
    assert any("owned by" in x for x in lines(log))


@pytest.mark.parametrize("how", ["group-writable", "world-writable", "not-yours"])
def test_a_state_file_others_can_write_or_own_is_never_loaded(
    folder: Path, log: Path, how: str
) -> None:
    path = saved(folder)
    if how == "not-yours":
        os.chown(path, STRANGER, STRANGER)
    else:
        path.chmod(0o620 if how == "group-writable" else 0o602)
    assert cache(folder).find([*TOKENS, 1]) is None
    assert any(path.name in x for x in lines(log))


def _plant(path: Path) -> None:
    """Change the state and recompute every checksum the header holds: what someone who
    knows the format (it is open source) writes into a folder they can reach."""
    data = path.read_bytes()
    length = struct.unpack("<I", data[12:16])[0]
    meta = json.loads(data[16 : 16 + length])
    start = 16 + length + 4 * meta["tokens"]
    end = start + meta["state_bytes"]
    state = bytes(b ^ 0x5A for b in data[start:end])
    meta["state_sha256"] = hashlib.sha256(state).hexdigest()
    header = json.dumps(meta).encode()
    tail = data[end:]  # whatever bosun keeps after the state (its signature) stays as it was
    path.write_bytes(
        data[:12]
        + struct.pack("<I", len(header))
        + header
        + data[16 + length : start]
        + state
        + tail
    )


def test_a_state_with_recomputed_checksums_is_never_loaded(folder: Path, log: Path) -> None:
    path = saved(folder)
    _plant(path)
    assert cache(folder).find([*TOKENS, 1]) is None
    assert any(path.name in x for x in lines(log))


def test_a_state_signed_with_another_users_secret_is_never_loaded(
    folder: Path, log: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Another user's bosun writes a perfectly valid state, with their own key; copied
    into this user's folder (bytes and all), it is not this user's."""
    theirs = tmp_path / "their-home"
    theirs.mkdir(mode=0o700)
    with monkeypatch.context() as m:
        m.setenv("BOSUN_HOME", str(theirs))
        path = saved(folder)
    assert key_file() != theirs / "prefix-cache.key"
    assert cache(folder).find([*TOKENS, 1]) is None
    assert not path.exists()  # in the user's own folder: tidied, the next save replaces it
    assert cache(folder).store(TOKENS, STATE) == path
    assert cache(folder).find([*TOKENS, 1]) is not None


def test_the_key_is_made_once_private_and_atomically(folder: Path) -> None:
    assert not key_file().exists()
    saved(folder)
    info = key_file().stat()
    assert info.st_mode & 0o777 == 0o600 and info.st_size == 32
    secret = key_file().read_bytes()
    saved(folder)
    assert key_file().read_bytes() == secret  # kept, not made again
    assert [p.name for p in key_file().parent.iterdir() if "key" in p.name] == [
        "prefix-cache.key"
    ]  # no half-written temporary left beside it


@pytest.mark.parametrize("how", ["others-can-read", "a-link", "not-yours", "short"])
def test_a_key_file_that_is_not_private_turns_the_cache_off(
    folder: Path, log: Path, how: str, tmp_path: Path
) -> None:
    saved(folder)
    key = key_file()
    secret = key.read_bytes()
    if how == "others-can-read":
        key.chmod(0o644)
    elif how == "a-link":
        elsewhere = tmp_path / "elsewhere.key"
        key.rename(elsewhere)
        key.symlink_to(elsewhere)
    elif how == "not-yours":
        os.chown(key, STRANGER, STRANGER)
    else:
        key.write_bytes(b"short")
    assert cache(folder).find([*TOKENS, 1]) is None
    assert cache(folder).store(TOKENS[:20], STATE) is None
    assert any("prefix-cache.key" in x for x in lines(log))
    if how != "short":
        assert key.read_bytes() == secret  # the user's file: reported, never replaced


def test_a_refusal_is_one_line_and_never_an_error(folder: Path, log: Path) -> None:
    saved(folder)
    folder.chmod(0o777)
    for _ in range(3):
        assert cache(folder).find([*TOKENS, 1]) is None
    assert len([x for x in lines(log) if str(folder) in x]) == 1
