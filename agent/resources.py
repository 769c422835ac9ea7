"""Where bosun's data folders (templates/, contracts/) are, installed or not.

In a source checkout they sit at the repository root; in a wheel they are packed under
agent/_data (see pyproject.toml). Looking in both keeps editable and regular installs
behaving the same.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    for candidate in (_PKG / "_data" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"bosun's {name}/ folder is missing from this installation")


def template_path(name: str) -> Path:
    return data_dir("templates") / name
