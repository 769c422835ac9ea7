"""Settings from files: `config.toml` in the data dir, then `.bosun.toml` in the workspace.

Later sources win (defaults < user file < workspace file < command-line flags), with
one exception: a workspace file can make approval stricter but never looser than the
user's own setting. A repository someone cloned must not be able to switch on
`approve = "auto"` and have its shell commands run unasked.
"""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from agent.permissions import APPROVE_MODES
from agent.session import bosun_home
from drivers.base import UsageError
from drivers.bundled import DEFAULT_MODEL

CONSTRAIN_MODES = ("auto", "always", "never")
WORKSPACE_FILE = ".bosun.toml"
# Least to most permissive: what a workspace file may only move down.
_PERMISSIVENESS = {"read-only": 0, "ask": 1, "auto-edit": 2, "auto": 3}


@dataclass(frozen=True)
class Config:
    model: str = DEFAULT_MODEL
    approve: str = "ask"
    constrain: str = "auto"
    context_size: int | None = None  # None: the driver's default for the model


def user_config_path() -> Path:
    return bosun_home() / "config.toml"


def _parse(path: Path) -> dict[str, Any]:
    """The settings in one file, checked, with errors that name the file and the key."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not valid TOML: {exc}") from None
    known = {f.name for f in fields(Config)}
    out: dict[str, Any] = {}
    for key, value in data.items():
        where = f"{path}: {key}"
        if key not in known:
            raise UsageError(f"{path}: unknown setting {key!r} (known: {', '.join(sorted(known))})")
        if key == "model" and not (isinstance(value, str) and value.strip()):
            raise UsageError(f"{where} must be a model name or path")
        if key == "approve" and value not in APPROVE_MODES:
            raise UsageError(f"{where} must be one of {', '.join(APPROVE_MODES)}")
        if key == "constrain" and value not in CONSTRAIN_MODES:
            raise UsageError(f"{where} must be one of {', '.join(CONSTRAIN_MODES)}")
        if key == "context_size" and (
            isinstance(value, bool) or not isinstance(value, int) or value < 256
        ):
            raise UsageError(f"{where} must be a whole number of tokens (at least 256)")
        out[key] = value
    return out


def load_config(workspace: Path | None = None, *, user_file: Path | None = None) -> Config:
    """Defaults, overridden by the user's config.toml, then by the workspace's file."""
    config = Config()
    user = user_file if user_file is not None else user_config_path()
    if user.is_file():
        config = replace(config, **_parse(user))
    local = workspace / WORKSPACE_FILE if workspace is not None else None
    if local is not None and local.is_file():
        settings = _parse(local)
        wanted = settings.get("approve")
        if wanted is not None and _PERMISSIVENESS[wanted] > _PERMISSIVENESS[config.approve]:
            sys.stderr.write(
                f"bosun: ignoring approve = {wanted!r} in {local}: a workspace file may not"
                f" loosen approval beyond {config.approve!r} (set it in {user} or pass"
                " --approve)\n"
            )
            del settings["approve"]
        config = replace(config, **settings)
    return config


def resolve(
    workspace: Path | None,
    *,
    model: str | None = None,
    approve: str | None = None,
    constrain: str | None = None,
    context_size: int | None = None,
) -> Config:
    """The settings for a run: the files' values with every flag the user gave on top."""
    config = load_config(workspace)
    flags: dict[str, Any] = {
        "model": model,
        "approve": approve,
        "constrain": constrain,
        "context_size": context_size,
    }
    return replace(config, **{k: v for k, v in flags.items() if v is not None})
