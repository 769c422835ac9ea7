"""Read the metadata key/values at the head of a GGUF file, without llama_cpp.

Rendering a prompt must not load a model: `bosun render` and `bosun models` run where
llama-cpp-python is absent or would take seconds to initialise. The metadata section is
a flat little-endian list of typed key/values (GGUF v2/v3), so a short reader over a
memory map suffices. Large arrays (the vocabulary, merges) are skipped, not decoded; only
the two token strings the chat template needs (BOS, EOS) are fetched from the vocabulary.

The file is untrusted: it states its own counts and lengths, and a sparse file backs any
claim with zeros that read as more (empty) values. So every count is checked against the
bytes left before anything is read (each value takes at least a few bytes), values that
must be walked one by one (keys, strings, arrays of arrays) are counted against a budget
far above any real model's, arrays nest at most `MAX_DEPTH` deep and a string longer
than `MAX_STRING` is refused rather than decoded: a hostile file costs milliseconds and
one line naming it, never a RecursionError, minutes of reading or gigabytes of memory.

Why not llama.cpp's own `gguf` package (0.19.0, measured on the bundled SmolLM2, 98 MB,
on this 2-core machine): its `GGUFReader` decodes every array element and every tensor
record into numpy views up front, 8.0 s against this reader's 0.17 s; it needs numpy;
and on a damaged file it fails wherever numpy does (a file cut at 1 MB raised numpy's
"When changing to a larger dtype…" ValueError) rather than with one line naming the
byte. Here every count is checked against the file's size before it is read.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAGIC = b"GGUF"

# GGUF value types -> struct format of one scalar.
_SCALARS: dict[int, str] = {
    0: "B",  # uint8
    1: "b",  # int8
    2: "H",  # uint16
    3: "h",  # int16
    4: "I",  # uint32
    5: "i",  # int32
    6: "f",  # float32
    7: "?",  # bool
    10: "Q",  # uint64
    11: "q",  # int64
    12: "d",  # float64
}
_STRING = 8
_ARRAY = 9
# Arrays longer than this are summarised (vocabularies have 10^4..10^5 entries).
_SMALL_ARRAY = 64
# The fewest bytes a value of each type takes: a string or an array is at least its
# length field, a key/value pair at least an empty key, a type and one byte.
_MIN_SIZE = {t: struct.calcsize("<" + f) for t, f in _SCALARS.items()} | {_STRING: 8, _ARRAY: 12}
_MIN_KV = 8 + 4 + 1

MAX_DEPTH = 8  # arrays of arrays of …: real files have none
MAX_STRING = 16 * 1024 * 1024  # bytes of one string (a chat template is kilobytes)
MAX_KEY = 65_535  # bytes of one key, as the GGUF specification allows
MAX_KEYS = 65_536  # key/value pairs (real files have a few dozen)
MAX_WALKED = 4_000_000  # values read one by one, in all (a 262k vocabulary, its
#                         500k merges and the BOS/EOS lookups are about 1.3 million)


class GGUFError(ValueError):
    """The file is not GGUF, or its metadata is cut short or malformed."""


@dataclass(frozen=True)
class ArrayInfo:
    """A large array left undecoded: its element type, length and where it starts."""

    type: int
    count: int
    offset: int


@dataclass(frozen=True)
class GGUFInfo:
    path: Path
    version: int
    metadata: dict[str, Any] = field(repr=False)
    bos_token: str = ""
    eos_token: str = ""

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    @property
    def name(self) -> str:
        return str(self.metadata.get("general.name", ""))

    @property
    def chat_template(self) -> str | None:
        value = self.metadata.get("tokenizer.chat_template")
        return value if isinstance(value, str) and value else None

    @property
    def bos_token_id(self) -> int | None:
        return _int_or_none(self.metadata.get("tokenizer.ggml.bos_token_id"))

    @property
    def eos_token_id(self) -> int | None:
        return _int_or_none(self.metadata.get("tokenizer.ggml.eos_token_id"))


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Reader:
    """A cursor over the metadata, with the budget of values it may still walk."""

    def __init__(self, buf: mmap.mmap | bytes, path: Path) -> None:
        self.buf = buf
        self.pos = 0
        self.path = path
        self.left = MAX_WALKED

    def fail(self, why: str) -> GGUFError:
        return GGUFError(f"{self.path}: {why}")

    def _take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise self.fail(f"GGUF metadata is truncated at byte {self.pos}")
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def walk(self, count: int, size: int, what: str) -> None:
        """`count` values of at least `size` bytes each are about to be read one by one:
        they must fit in the bytes left and in the budget."""
        if count * size > len(self.buf) - self.pos:
            raise self.fail(
                f"GGUF metadata claims {count:,} {what} at byte {self.pos}, more than the"
                " file holds"
            )
        self.left -= count
        if self.left < 0:
            raise self.fail(f"GGUF metadata has more than {MAX_WALKED:,} values to read")

    def _length(self, limit: int, what: str) -> int:
        n = self._take("<Q")
        if n > len(self.buf) - self.pos:
            raise self.fail(f"GGUF {what} at byte {self.pos} runs past the end of the file")
        if n > limit:
            raise self.fail(
                f"GGUF {what} at byte {self.pos} is {n:,} bytes long (at most {limit:,})"
            )
        return n

    def string(self, limit: int = MAX_STRING, what: str = "string") -> str:
        n = self._length(limit, what)
        raw = self.buf[self.pos : self.pos + n]
        self.pos += n
        return bytes(raw).decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        n = self._take("<Q")
        self.pos += n
        if self.pos > len(self.buf):
            raise self.fail("GGUF string runs past the end of the file")

    def value(self, vtype: int, depth: int = 0) -> Any:
        if vtype in _SCALARS:
            return self._take("<" + _SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            if depth >= MAX_DEPTH:
                raise self.fail(f"GGUF arrays nested deeper than {MAX_DEPTH} at byte {self.pos}")
            etype = self._take("<I")
            count = self._take("<Q")
            if etype not in _MIN_SIZE:
                raise self.fail(f"unknown GGUF value type {etype} at byte {self.pos}")
            if count <= _SMALL_ARRAY:
                self.walk(count, _MIN_SIZE[etype], "array items")
                return [self.value(etype, depth + 1) for _ in range(count)]
            info = ArrayInfo(etype, count, self.pos)
            self.skip_array(etype, count, depth + 1)
            return info
        raise self.fail(f"unknown GGUF value type {vtype} at byte {self.pos}")

    def skip_array(self, etype: int, count: int, depth: int = 0) -> None:
        if etype in _SCALARS:
            end = self.pos + _MIN_SIZE[etype] * count
            if end > len(self.buf):
                raise self.fail("GGUF array runs past the end of the file")
            self.pos = end
            return
        self.walk(count, _MIN_SIZE[etype], "array items")
        if etype == _STRING:
            for _ in range(count):
                self.skip_string()
        else:
            for _ in range(count):
                self.value(etype, depth)


def _token(reader: _Reader, tokens: Any, index: int | None) -> str:
    if index is None or index < 0:
        return ""
    if isinstance(tokens, list):
        return str(tokens[index]) if index < len(tokens) else ""
    if not isinstance(tokens, ArrayInfo) or tokens.type != _STRING or index >= tokens.count:
        return ""
    reader.pos = tokens.offset
    reader.walk(index, 8, "tokens")
    for _ in range(index):
        reader.skip_string()
    return reader.string()


def parse_gguf(buf: mmap.mmap | bytes, path: Path = Path("<bytes>")) -> GGUFInfo:
    """Parse the metadata of GGUF bytes (the tensor data after it is never touched)."""
    reader = _Reader(buf, path)
    if bytes(buf[:4]) != MAGIC:
        raise GGUFError(f"{path}: not a GGUF file (starts with {bytes(buf[:4])!r})")
    reader.pos = 4
    version = reader._take("<I")
    if version not in (2, 3):
        raise GGUFError(f"{path}: GGUF version {version} is not supported (only 2 and 3)")
    reader._take("<Q")  # tensor count
    kv_count = reader._take("<Q")
    if kv_count > MAX_KEYS:
        raise reader.fail(f"GGUF metadata claims {kv_count:,} keys (at most {MAX_KEYS:,})")
    reader.walk(kv_count, _MIN_KV, "keys")
    metadata: dict[str, Any] = {}
    for _ in range(kv_count):
        key = reader.string(MAX_KEY, "key")
        metadata[key] = reader.value(reader._take("<I"))
    tokens = metadata.get("tokenizer.ggml.tokens")
    info = GGUFInfo(path, version, metadata)
    return GGUFInfo(
        path,
        version,
        metadata,
        bos_token=_token(reader, tokens, info.bos_token_id),
        eos_token=_token(reader, tokens, info.eos_token_id),
    )


def read_gguf(path: str | Path) -> GGUFInfo:
    """Metadata of the GGUF file at `path`; raises GGUFError (a ValueError) if unreadable."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            size = path.stat().st_size
            if size < 24:
                raise GGUFError(f"{path}: too short to be a GGUF file ({size} bytes)")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                return parse_gguf(buf, path)
    except OSError as exc:
        raise GGUFError(f"{path}: cannot read GGUF file: {exc.strerror or exc}") from None


def write_gguf(path: str | Path, metadata: dict[str, Any]) -> None:
    """Write a metadata-only GGUF v3 file: for tests and fixtures, not for real models.

    Types follow the Python values: str, bool, int (int64 unless it fits uint32),
    float (float32), and lists of one of those.
    """

    def encode_string(s: str) -> bytes:
        raw = s.encode("utf-8")
        return struct.pack("<Q", len(raw)) + raw

    def type_of(value: Any) -> int:
        if isinstance(value, bool):
            return 7
        if isinstance(value, int):
            return 4 if 0 <= value < 2**32 else 11
        if isinstance(value, float):
            return 6
        if isinstance(value, str):
            return _STRING
        if isinstance(value, list):
            return _ARRAY
        raise TypeError(f"cannot store {type(value).__name__} in GGUF metadata")

    def encode(value: Any) -> bytes:
        vtype = type_of(value)
        if vtype == _STRING:
            return encode_string(value)
        if vtype == _ARRAY:
            etype = type_of(value[0]) if value else _STRING
            body = b"".join(encode(v) for v in value)
            return struct.pack("<IQ", etype, len(value)) + body
        return struct.pack("<" + _SCALARS[vtype], value)

    out = [MAGIC, struct.pack("<IQQ", 3, 0, len(metadata))]
    for key, value in metadata.items():
        out.append(encode_string(key) + struct.pack("<I", type_of(value)) + encode(value))
    Path(path).write_bytes(b"".join(out))


# llama.cpp's token types (tokenizer.ggml.token_type).
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED = 1, 2, 3, 4


def token_type(info: GGUFInfo, text: str) -> int | None:
    """The vocabulary type of the token spelled exactly `text`, or None if there is no
    such single token (or the file cannot be read again). One pass over the vocabulary,
    for the rare question "is this tag one reserved token?"."""
    tokens = info.metadata.get("tokenizer.ggml.tokens")
    types = info.metadata.get("tokenizer.ggml.token_type")
    if not isinstance(tokens, ArrayInfo | list) or not isinstance(types, ArrayInfo | list):
        return None
    if isinstance(tokens, list) and isinstance(types, list):
        index = tokens.index(text) if text in tokens else -1
        return _int_or_none(types[index]) if 0 <= index < len(types) else None
    try:
        with info.path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            if isinstance(tokens, list):
                index = tokens.index(text) if text in tokens else -1
            else:
                index = _index_of(_Reader(buf, info.path), tokens, text)
            if index < 0:
                return None
            if isinstance(types, list):
                return _int_or_none(types[index]) if index < len(types) else None
            if types.type not in (4, 5) or index >= types.count:  # uint32 / int32
                return None
            offset = types.offset + 4 * index
            (value,) = struct.unpack_from("<" + _SCALARS[types.type], buf, offset)
            return int(value)
    except (OSError, ValueError, struct.error):
        return None


def _index_of(reader: _Reader, tokens: ArrayInfo, text: str) -> int:
    """Index of `text` in a string array left undecoded, or -1."""
    if tokens.type != _STRING:
        return -1
    raw = text.encode("utf-8")
    needle = struct.pack("<Q", len(raw)) + raw
    found = reader.buf.find(needle, tokens.offset)
    if found < 0:
        return -1
    reader.pos = tokens.offset
    for index in range(tokens.count):
        if reader.pos == found:
            return index
        if reader.pos > found:  # the bytes sat inside another token: look further on
            found = reader.buf.find(needle, found + 1)
            if found < 0:
                return -1
            if reader.pos == found:
                return index
        reader.skip_string()
    return -1
