"""Settings from files: `config.toml` in the data dir, then `.bosun.toml` in the workspace.

Later sources win (defaults < user file < workspace file < command-line flags), with
one exception: a workspace file can make approval and bash's sandbox stricter but never
looser than the user's own setting. A repository someone cloned must not be able to
switch on `approve = "auto"` and have its shell commands run unasked, or turn the
sandbox off, open its network or show it a folder of the user's home. Nor may it lower
`checkpoint_max_mb` (only raise it): a tiny cap would leave every file out of the
snapshots, so that `/undo` could not bring back what its commands deleted.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
import re
import stat
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agent.errors import UsageError
from agent.loop.repomap import MAX_TOKENS as MAX_MAP
from agent.mcp.servers import Origin, merge, parse_servers, read_mcp_json
from agent.run.settings import Settings, config_keys
from agent.session import bosun_home
from agent.tools import parse_tool_changes
from agent.tools.checks import CheckCmd, merge_lint, parse_lint_cmd, parse_test_cmd
from agent.tools.hooks import parse_hooks, read_claude_settings
from agent.tools.permissions import APPROVE_MODES
from agent.tools.sandbox import SANDBOX_MODES, SandboxPolicy, resolve_sandbox
from agent.untrusted import TooDeep, check_depth
from drivers.bundled import BUNDLED
from drivers.llama_speculate import SPECULATE_MODES

CONSTRAIN_MODES = ("auto", "always", "never")
WORKSPACE_FILE = ".bosun.toml"
# Least to most permissive: what a workspace file (or a tasks-file line) may only move down.
_PERMISSIVENESS = {"read-only": 0, "ask": 1, "auto-edit": 2, "auto": 3}
_SANDBOX_LOOSENESS = {"on": 0, "auto": 1, "off": 2}
MAX_CONFIG_BYTES = 64 * 1024


# The config files' record is the settings record: every key is a `Settings` field,
# marked there (agent.run.settings.key), so no second list of them can drift.
Config = Settings
_USER_ONLY = tuple(k for k, f in config_keys().items() if f.metadata["scope"] == "user")


def user_config_path() -> Path:
    return bosun_home() / "config.toml"


def read_config_file(path: Path) -> str:
    """A config file's text: a regular file (a FIFO is not waited on) of at most
    MAX_CONFIG_BYTES, so a file planted in a repository cannot hang or bloat a start."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{path} is not a regular file")
        if info.st_size > MAX_CONFIG_BYTES:
            raise UsageError(f"{path} is {info.st_size} bytes; a config file has at most 64 kB")
        data = os.read(fd, MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not valid UTF-8: {exc.reason} at byte {exc.start}") from None


def parse_config_file(path: Path, origin: Origin = "user") -> dict[str, Any]:
    """The settings in one file, checked, with errors that name the file and the key."""
    text = read_config_file(path)
    try:
        check_depth(text)  # tomllib recurses once per nested array or table
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, TooDeep) as exc:
        raise UsageError(f"{path} is not valid TOML: {exc}") from None
    known = set(config_keys())
    out: dict[str, Any] = {}
    for key, value in data.items():
        where = f"{path}: {key}"
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(sorted(known))}"
            raise UsageError(f"{path}: unknown setting {key!r} ({hint})")
        if key == "model" and not (isinstance(value, str) and value.strip()):
            raise UsageError(f"{where} must be a model name or path")
        if key == "approve" and value not in APPROVE_MODES:
            raise UsageError(f"{where} must be one of {', '.join(APPROVE_MODES)}")
        if key == "constrain" and value not in CONSTRAIN_MODES:
            raise UsageError(f"{where} must be one of {', '.join(CONSTRAIN_MODES)}")
        if key == "speculate" and value not in SPECULATE_MODES:
            raise UsageError(f"{where} must be one of {', '.join(SPECULATE_MODES)}")
        if key == "context_size" and (
            isinstance(value, bool) or not isinstance(value, int) or value < 256
        ):
            raise UsageError(f"{where} must be a whole number of tokens (at least 256)")
        if key == "compact_at" and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not 0.3 <= value <= 0.95
        ):
            raise UsageError(f"{where} must be a fraction of the context between 0.3 and 0.95")
        if key == "sandbox" and value not in SANDBOX_MODES:
            raise UsageError(f"{where} must be one of {', '.join(SANDBOX_MODES)}")
        if key in (
            "allow_net",
            "allow_git_writes",
            "auto_lint",
            "auto_test",
            "otel",
            "otel_content",
        ) and not isinstance(value, bool):
            raise UsageError(f"{where} must be true or false")
        if key == "sandbox_read":
            if not isinstance(value, list) or not all(
                isinstance(v, str) and os.path.isabs(os.path.expanduser(v)) for v in value
            ):
                raise UsageError(f"{where} must be a list of absolute folder paths")
            value = tuple(value)
        if key == "mcp_servers":
            value = parse_servers(value, str(path), origin)
        if key == "tools":
            if not isinstance(value, str):
                raise UsageError(f'{where} must be a string such as "+apply_patch,-edit_file"')
            value = parse_tool_changes(value, where)
        if key == "lint_cmd":
            value = parse_lint_cmd(value, where, origin)
        if key == "test_cmd":
            value = parse_test_cmd(value, where, origin)
        if key in _CHECK_LIMITS and (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not _CHECK_LIMITS[key][0] <= value <= _CHECK_LIMITS[key][1]
        ):
            low, high = _CHECK_LIMITS[key]
            raise UsageError(f"{where} must be a whole number from {low} to {high}")
        if key == "checkpoint_max_mb" and (
            isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1024
        ):
            raise UsageError(f"{where} must be a size in MB (above 0, at most 1024)")
        if key == "hooks":
            value = parse_hooks(value, str(path), origin)
        if key == "repo_map_tokens" and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MAP
        ):
            raise UsageError(f"{where} must be a whole number of tokens from 0 (off) to {MAX_MAP}")
        out[key] = value
    return out


_CHECK_LIMITS = {"test_rounds": (0, 10), "test_timeout": (1, 3600)}


def load_config(workspace: Path | None = None, *, user_file: Path | None = None) -> Settings:
    """Defaults, overridden by the user's config.toml, then by the workspace's file."""
    return layered(workspace, user_file=user_file)[0]


Sources = dict[str, str]  # config key -> "default" | "user" | "workspace" | "flag"


def _fields(found: Mapping[str, Any]) -> dict[str, Any]:
    """A file's keys as `Settings` field names (`sandbox` is `sandbox_mode`)."""
    keys = config_keys()
    return {keys[k].name if k in keys else k: v for k, v in found.items()}


def layered(
    workspace: Path | None = None, *, user_file: Path | None = None
) -> tuple[Settings, Sources]:
    """The files' settings and where each key's value came from: defaults < the user's
    config.toml < the workspace's .bosun.toml (which may only make things stricter)."""
    config = Settings()
    sources: Sources = dict.fromkeys(config_keys(), "default")
    user = user_file if user_file is not None else user_config_path()
    if user.is_file():
        found = parse_config_file(user)
        config = replace(config, **_fields(found))
        sources.update(dict.fromkeys(found, "user"))
    local = workspace / WORKSPACE_FILE if workspace is not None else None
    servers = config.mcp_servers
    if local is not None and (local.exists() or local.is_symlink()):
        settings = _stricter_only(parse_config_file(local, "workspace"), config, local, user)
        servers = merge(servers, settings.pop("mcp_servers", ()), warn=_warn)
        sources.update(dict.fromkeys((k for k in settings if k != "workspace_model"), "workspace"))
        config = replace(config, **_fields(settings))
    if workspace is not None:
        servers = merge(servers, read_mcp_json(workspace, read_config_file), warn=_warn)
        claude = read_claude_settings(workspace, read_config_file, _warn)
        config = replace(config, hooks=config.hooks + claude)
    return replace(config, mcp_servers=servers), sources


def _stricter_only(
    settings: dict[str, Any], config: Settings, local: Path, user: Path
) -> dict[str, Any]:
    """A workspace file's settings, less what it may not set (told on stderr, one line
    each): telemetry, a model elsewhere than here, looser approval or sandbox, a smaller
    checkpoint cap. Its lint commands join the user's, its hooks follow the user's."""
    for key in [k for k in _USER_ONLY if k in settings and k != "sandbox_read"]:
        sys.stderr.write(
            f"bosun: ignoring {key} = {settings.pop(key)!r} in {local}: only the user's"
            f" own config ({user}) or OTEL_* variables turn on telemetry\n"
        )
    model = settings.get("model")
    if model is not None and not _model_a_workspace_may_choose(model):
        sys.stderr.write(
            f"bosun: ignoring model = {model!r} in {local}: a workspace file may only"
            " name a bundled model or a server on this machine (set it in"
            f" {user} or pass --model)\n"
        )
        del settings["model"]
    elif model is not None:
        settings["workspace_model"] = model
    wanted = settings.get("approve")
    if wanted is not None and looser_approval(wanted, config.approve):
        sys.stderr.write(
            f"bosun: ignoring approve = {wanted!r} in {local}: a workspace file may not"
            f" loosen approval beyond {config.approve!r} (set it in {user} or pass"
            " --approve)\n"
        )
        del settings["approve"]
    for key in _looser_sandbox(settings, config):
        sys.stderr.write(
            f"bosun: ignoring {key} = {settings.pop(key)!r} in {local}: a workspace file"
            f" may only make the sandbox stricter (set it in {user} or pass a flag)\n"
        )
    cap = settings.get("checkpoint_max_mb")
    if cap is not None and cap < config.checkpoint_max_mb:
        sys.stderr.write(
            f"bosun: ignoring checkpoint_max_mb = {settings.pop('checkpoint_max_mb')!r} in"
            f" {local}: a workspace file may only raise it above"
            f" {config.checkpoint_max_mb:g} MB, so that /undo covers more files, never"
            f" fewer (set it in {user})\n"
        )
    if "lint_cmd" in settings:  # by extension: the user's others stay
        settings["lint_cmd"] = merge_lint(config.lint_cmd, settings["lint_cmd"])
    if "hooks" in settings:
        settings["hooks"] = config.hooks + settings["hooks"]  # both files' run
    return settings


def looser_approval(wanted: str, ceiling: str) -> bool:
    """Whether approve mode `wanted` lets more run unasked than `ceiling`: what a file
    the user did not write (a workspace's, a tasks file's line) may not ask for."""
    return _PERMISSIVENESS[wanted] > _PERMISSIVENESS[ceiling]


def _warn(line: str) -> None:
    sys.stderr.write(f"bosun: {line}\n")


def _looser_sandbox(settings: dict[str, Any], config: Settings) -> list[str]:
    """The sandbox settings of a workspace file that would loosen the user's."""
    looser = []
    wanted = settings.get("sandbox")
    if wanted is not None and _SANDBOX_LOOSENESS[wanted] > _SANDBOX_LOOSENESS[config.sandbox_mode]:
        looser.append("sandbox")
    looser += [k for k in ("allow_net", "allow_git_writes") if settings.get(k) is True]
    if settings.get("sandbox_read"):
        looser.append("sandbox_read")
    return looser


def _model_a_workspace_may_choose(model: str) -> bool:
    """A cloned repository must not send your conversation to its own server, or load a
    GGUF file it ships (a parser attack surface): bundled models and loopback servers."""
    if model.strip().lower() in BUNDLED:
        return True
    if not model.startswith("openai:"):
        return False
    return is_loopback_url(model.removeprefix("openai:").split("#", 1)[0])


# What a URL's authority may hold to be read the same by every parser on the way (ours,
# the openai client's httpx): no userinfo, no escapes, no backslash.
_PLAIN_AUTHORITY = re.compile(r"[A-Za-z0-9.:\[\]-]+")


def is_loopback_url(url: str) -> bool:
    """Whether `url` names this machine by an address, not by a name that merely starts
    like one (`127.attacker.example`): an IP literal in 127.0.0.0/8, ::1, or exactly
    `localhost`. Nothing is resolved: a name is trusted only if it is `localhost`."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not _PLAIN_AUTHORITY.fullmatch(parts.netloc):
        return False
    if host == "localhost":  # hostname is lower-cased
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # a name: 127.attacker.example, 0x7f000001, localhost.
        return False
    return address.is_loopback and not getattr(address, "ipv4_mapped", None)


def settings_for(
    workspace: Path | None,
    flags: Mapping[str, Any] | None = None,
    *,
    face: Mapping[str, Any] | None = None,
) -> Settings:
    """The settings every face runs on, from one place: `face`'s own defaults (mcp
    serve's approve mode) < the config files for `workspace` < `flags`, the values the
    user gave (None: not given; keys are `Settings` fields, `sandbox_mode` the mode).
    The sandbox policy is resolved last, from the mode and its knobs in force."""
    return resolved(workspace, flags, face=face)[0]


def resolved(
    workspace: Path | None,
    flags: Mapping[str, Any] | None = None,
    *,
    face: Mapping[str, Any] | None = None,
) -> tuple[Settings, Sources]:
    """`settings_for`, with the source of each config key's value (`bosun config`)."""
    root = workspace if workspace is not None else Path.cwd()
    config, sources = layered(root if root.is_dir() else None)
    for name, value in (face or {}).items():
        key = _key_of(name)
        if key is None or sources.get(key) == "default":
            config = replace(config, **{name: value})
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    lint = given.pop("lint_cmd", ())
    if isinstance(given.get("test_cmd"), str):
        given["test_cmd"] = CheckCmd(given["test_cmd"].strip(), "flag")
    config = replace(config, **given)
    if lint:
        config = replace(config, lint_cmd=merge_lint(config.lint_cmd, lint))
    if "model" in given:  # the user's own choice, even where it names the same server
        config = replace(config, workspace_model=None)
    for name in (*given, *(("lint_cmd",) if lint else ())):
        key = _key_of(name)
        if key is not None:
            sources[key] = "flag"
    policy = given.get("sandbox") if "sandbox" in given else config_sandbox(config)
    return replace(config, workspace=root, sandbox=policy), sources


def _key_of(name: str) -> str | None:
    """The config key a `Settings` field is set by, if any."""
    return next((k for k, f in config_keys().items() if f.name == name), None)


def resolve(workspace: Path | None, **flags: Any) -> Settings:
    """`settings_for` with the flags as keyword arguments (`sandbox`: the mode)."""
    if "sandbox" in flags:
        flags["sandbox_mode"] = flags.pop("sandbox")
    return settings_for(workspace, flags)


def config_sandbox(config: Settings) -> SandboxPolicy | None:
    """The sandbox a resolved config asks for: its mode, network, .git writes and
    read-only folders, in one place for every face that starts from a config."""
    return resolve_sandbox(
        config.sandbox_mode,
        allow_net=config.allow_net,
        allow_git_writes=config.allow_git_writes,
        read_only=config.sandbox_read,
    )
