"""A model file's metadata is read by bosun before anything else: it must not crash,
hang, fill memory or write to the terminal, whatever the file says.

GGUF metadata is a list of typed values whose counts and lengths the file states: a
file can claim 2^62 keys, a vocabulary of 2^40 strings, a string of gigabytes, or nest
arrays 100,000 deep; in a sparse file every such claim is backed by zeros that read as
more (empty) values. Each is refused with one line naming the file, in well under a
second; names and templates shown by `bosun models` never carry escape sequences to the
terminal. Each hostile read runs in a forked child with a hard timeout and a memory
limit (tests/hostile/contain.py).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.protocol.gguf import write_gguf
from tests.hostile.contain import Outcome, cli, contained

STRING, ARRAY, UINT8, UINT32 = 8, 9, 0, 4
GB = 1024**3


def header(kv_count: int) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, 0, kv_count)


def text(s: str) -> bytes:
    raw = s.encode()
    return struct.pack("<Q", len(raw)) + raw


def sparse(path: Path, head: bytes, size: int) -> Path:
    """`head`, then zeros up to `size` bytes, without writing them (a sparse file)."""
    with path.open("wb") as fh:
        fh.write(head)
        fh.truncate(size)
    return path


def nested(depth: int) -> bytes:
    """An array of an array of … of an empty array, `depth` deep."""
    return (
        struct.pack("<I", ARRAY) + struct.pack("<IQ", ARRAY, 1) * depth + struct.pack("<IQ", 0, 0)
    )


# Each builds a file at the path it is given.
HOSTILE: dict[str, Callable[[Path], Path]] = {
    "arrays-nested-100000-deep": lambda p: _write(
        p, header(1) + text("x.nested") + nested(100_000)
    ),
    "keys-2-pow-62-sparse-64-gb": lambda p: sparse(p, header(2**62), 64 * GB),
    "50-million-keys-that-fit-the-file": lambda p: sparse(p, header(50_000_000), GB),
    "a-vocabulary-of-2-pow-40-strings": lambda p: sparse(
        p,
        header(1) + text("tokenizer.ggml.tokens") + struct.pack("<IIQ", ARRAY, STRING, 2**40),
        64 * GB,
    ),
    "empty-tokens-2-pow-31-bos-the-last": lambda p: sparse(
        p,
        header(2)
        + text("tokenizer.ggml.bos_token_id")
        + struct.pack("<II", UINT32, 2**31 - 1)
        + text("tokenizer.ggml.tokens")
        + struct.pack("<IIQ", ARRAY, STRING, 2**31),
        17 * GB,
    ),
    "empty-arrays-2-pow-40-in-an-array": lambda p: sparse(
        p, header(1) + text("x.arrays") + struct.pack("<IIQ", ARRAY, ARRAY, 2**40), 64 * GB
    ),
    "a-3-gb-string": lambda p: sparse(
        p, header(1) + text("general.name") + struct.pack("<IQ", STRING, 3 * GB), 4 * GB
    ),
    "a-3-gb-key": lambda p: sparse(p, header(1) + struct.pack("<Q", 3 * GB), 4 * GB),
    "a-string-length-past-the-end": lambda p: _write(
        p, header(1) + text("general.name") + struct.pack("<IQ", STRING, 2**63)
    ),
}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def read(path: Path) -> Callable[[], Any]:
    def go() -> str:
        from agent.protocol.gguf import read_gguf

        return repr(read_gguf(path))[:200]

    return go


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_metadata_is_refused_quickly(tmp_path: Path, name: str) -> None:
    path = HOSTILE[name](tmp_path / "evil.gguf")
    out = contained(read(path), seconds=20, memory_mb=512)
    assert not out.timed_out and not out.died, out
    assert out.error == "GGUFError", out
    assert "evil.gguf" in out.message and "\n" not in out.message, out
    assert out.seconds < 2, out
    assert out.grew_mb < 100, out


@pytest.mark.parametrize("name", ["arrays-nested-100000-deep", "keys-2-pow-62-sparse-64-gb"])
def test_every_face_says_one_line(tmp_path: Path, workspace: Path, name: str) -> None:
    path = HOSTILE[name](tmp_path / "evil.gguf")
    for argv in (
        ["models", str(path)],
        ["render", "-m", str(path)],
        ["run", "go", "-m", str(path), "-w", str(workspace), "--output", "jsonl"],
    ):
        out: Outcome = contained(cli(*argv), seconds=20, memory_mb=512)
        assert not out.timed_out and not out.error, (argv, out)
        lines = out.value["stderr"].splitlines()
        assert out.value["code"] == 2 and len(lines) == 1, (argv, out.value)
        assert "evil.gguf" in lines[0] and "internal error" not in lines[0], (argv, lines)


def test_a_real_vocabulary_still_reads(tmp_path: Path) -> None:
    """The caps are far above real files: 300,000 tokens, their scores and types."""
    from agent.protocol.gguf import read_gguf, token_type

    tokens = [f"<t{i}>" for i in range(300_000)]
    path = tmp_path / "big-vocab.gguf"
    write_gguf(
        path,
        {
            "general.architecture": "llama",
            "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.scores": [0.0] * 300_000,
            "tokenizer.ggml.token_type": [1] * 299_999 + [3],
            "tokenizer.ggml.bos_token_id": 0,
            "tokenizer.ggml.eos_token_id": 299_999,
        },
    )
    info = read_gguf(path)
    assert (info.bos_token, info.eos_token) == ("<t0>", "<t299999>")
    assert token_type(info, "<t299999>") == 3


# Cursor movement, window title, screen clear, bell, a right-to-left override.
ESCAPES = "\x1b[1A\x1b[2K\x1b]0;pwned\x07\x1b[2J\u202e\x9b31m"
RAW = ["\x1b", "\x07", "\u202e", "\x9b"]


def test_metadata_never_reaches_the_terminal_raw(tmp_path: Path) -> None:
    path = tmp_path / f"model{ESCAPES[:4]}.gguf"
    template = (
        "{% for m in messages %}<|im_start|>" + ESCAPES + "{{ m.role }}\n{{ m.content }}"
        "<|im_end|>" + ESCAPES + "\n{% endfor %}{% if add_generation_prompt %}<|im_start|>"
        "assistant\n{% endif %}"
    )
    write_gguf(
        path,
        {
            "general.architecture": "llama" + ESCAPES,
            "general.name": "Evil" + ESCAPES,
            "tokenizer.ggml.tokens": ["<s>", "</s>" + ESCAPES],
            "tokenizer.ggml.bos_token_id": 0,
            "tokenizer.ggml.eos_token_id": 1,
            "tokenizer.chat_template": template,
        },
    )
    out = contained(cli("models", str(path)), seconds=20)
    assert not out.timed_out and not out.error and out.value["code"] == 0, out
    shown = out.value["stdout"] + out.value["stderr"]
    assert "Evil" in shown
    for c in RAW:
        assert c not in shown, (c, shown)
    out = contained(cli("models", "--json", str(path)), seconds=20)
    row = json.loads(out.value["stdout"])  # JSON keeps the text, escaped the JSON way
    assert row["general.name"] == "Evil" + ESCAPES


QWEN = Path(__file__).parents[1] / "data" / "chat-templates" / "Qwen-Qwen2.5-7B-Instruct.jinja"


def test_a_template_error_is_one_clean_line(tmp_path: Path, workspace: Path) -> None:
    """A template (one bosun uses as it is) that fails only on a longer conversation:
    `bosun render` of such a history ends with one line, the template's own words
    shown, not run, and no "internal error"."""
    from agent.history import Assistant, System, User, to_json

    path = tmp_path / "fails.gguf"
    template = (
        "{% if messages|length > 3 %}{{ raise_exception('boom" + ESCAPES + "\nsecond') }}"
        "{% endif %}" + QWEN.read_text(encoding="utf-8")
    )
    write_gguf(path, {"general.architecture": "qwen2", "tokenizer.chat_template": template})
    messages = tmp_path / "messages.json"
    messages.write_text(to_json([System("s"), User("u"), Assistant("a"), User("v")]))
    out = contained(cli("render", "-m", str(path), "--messages", str(messages)), seconds=20)
    assert not out.timed_out and not out.error, out
    err = out.value["stderr"]
    assert out.value["code"] in (1, 2) and len(err.splitlines()) == 1, out.value
    assert "boom" in err and "internal error" not in err, err
    for c in RAW:
        assert c not in err, (c, err)
