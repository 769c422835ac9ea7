"""What a model needs from bosun: its template, tool-call format, markers and flags.

The facts live in drivers/capabilities.toml as first-match rules, so supporting a new
model family is a data change. The file is audited when loaded: a row that contradicts
itself (harmony calls with a chatml template, a wire remap for a format without
`<tool_call>`) is a harness bug that would silently ruin every turn, so it is rejected
with the rule's id and what to change.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from agent.gguf import GGUFInfo, read_gguf
from agent.resources import template_path
from drivers.bundled import BUNDLED, ready_path

TOOL_FORMATS = ("hermes", "qwen3_xml", "harmony", "llama3_json", "mistral")
TOOL_RESULT_ROLES = ("tool", "user")
GGUF_TEMPLATE = "gguf"  # "use the template embedded in the model file"
DEFAULT_TEMPLATE = "chatml"  # what "gguf" means when there is no model file
# Formats whose calls are wrapped in <tool_call>, the only ones a wire remap can apply to.
_ENVELOPED = ("hermes", "qwen3_xml")
_MATCH_KEYS = ("name", "architecture", "general_name")
_FLAG_KEYS = (
    "template",
    "tool_format",
    "think_markers",
    "reserved_tool_call_token",
    "tool_result_role",
    "stop",
)


class CapabilitiesError(ValueError):
    """drivers/capabilities.toml is malformed or contradicts itself."""


@dataclass(frozen=True)
class Capabilities:
    rule: str = "default"
    template: str = GGUF_TEMPLATE
    tool_format: str = "hermes"
    think_markers: tuple[str, str] | None = None
    reserved_tool_call_token: bool = False
    tool_result_role: str = "tool"
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rule:
    caps: Capabilities
    name: tuple[str, ...] = ()
    architecture: tuple[str, ...] = ()
    general_name: tuple[str, ...] = ()

    def matches(self, name: str, architecture: str, general_name: str) -> bool:
        if not (self.name or self.architecture or self.general_name):
            return True
        pairs = (
            (name, self.name),
            (architecture, self.architecture),
            (general_name, self.general_name),
        )
        return any(
            value and fnmatch.fnmatchcase(value.lower(), glob.lower())
            for value, globs in pairs
            for glob in globs
        )


@dataclass(frozen=True)
class Table:
    rules: tuple[Rule, ...]


def _fail(where: str, message: str) -> CapabilitiesError:
    return CapabilitiesError(f"capabilities.toml, {where}: {message}")


def _globs(where: str, key: str, value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(g, str) and g for g in items):
        raise _fail(where, f"{key} must be a glob or a list of globs")
    return tuple(items)


def _shipped_templates() -> tuple[str, ...]:
    folder = template_path("chatml.jinja").parent
    skip = {"system", "tools"}
    return tuple(sorted(p.stem for p in folder.glob("*.jinja") if p.stem not in skip))


def parse_rule(row: dict[str, Any], index: int) -> Rule:
    """One [[rule]] table -> Rule, or CapabilitiesError saying what to fix."""
    rule_id = row.get("id")
    where = f"rule #{index + 1}" + (f" ({rule_id!r})" if isinstance(rule_id, str) else "")
    if not isinstance(rule_id, str) or not rule_id:
        raise _fail(where, "every rule needs an `id` string")
    unknown = set(row) - {"id", *_MATCH_KEYS, *_FLAG_KEYS}
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(sorted(unknown))}")
    shipped = _shipped_templates()
    template = row.get("template", GGUF_TEMPLATE)
    if template != GGUF_TEMPLATE and template not in shipped:
        choices = ", ".join((GGUF_TEMPLATE, *shipped))
        raise _fail(where, f"template {template!r} is not one of: {choices}")
    tool_format = row.get("tool_format", "hermes")
    if tool_format not in TOOL_FORMATS:
        raise _fail(where, f"tool_format {tool_format!r} is not one of {', '.join(TOOL_FORMATS)}")
    markers = row.get("think_markers", [])
    pair_ok = (
        isinstance(markers, list)
        and len(markers) == 2
        and all(isinstance(m, str) and m for m in markers)
        and markers[0] != markers[1]
    )
    if markers != [] and not pair_ok:
        raise _fail(where, "think_markers must be [] or two different non-empty strings")
    reserved = row.get("reserved_tool_call_token", False)
    if not isinstance(reserved, bool):
        raise _fail(where, "reserved_tool_call_token must be true or false")
    role = row.get("tool_result_role", "tool")
    if role not in TOOL_RESULT_ROLES:
        raise _fail(where, f"tool_result_role {role!r} is not one of {TOOL_RESULT_ROLES}")
    stop = row.get("stop", [])
    if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
        raise _fail(where, "stop must be a list of non-empty strings")

    # The audit: flags that cannot all be true of one model.
    harmony_template = template == "harmony"
    if tool_format == "harmony" and template not in ("harmony", GGUF_TEMPLATE):
        raise _fail(
            where,
            f'tool_format = "harmony" needs template = "harmony" (or "gguf"), '
            f"not {template!r}: only the harmony template has harmony's channels",
        )
    if harmony_template and tool_format != "harmony":
        raise _fail(
            where, f'template = "harmony" needs tool_format = "harmony", not {tool_format!r}'
        )
    if reserved and tool_format not in _ENVELOPED:
        raise _fail(
            where,
            f"reserved_tool_call_token = true remaps <tool_call>, which tool_format "
            f"{tool_format!r} never writes; drop the flag or use hermes/qwen3_xml",
        )
    if tool_format == "harmony" and (markers or role != "tool"):
        raise _fail(
            where,
            'tool_format = "harmony" carries reasoning and results in channels: '
            'think_markers must be [] and tool_result_role "tool"',
        )
    return Rule(
        Capabilities(
            rule=rule_id,
            template=template,
            tool_format=tool_format,
            think_markers=(markers[0], markers[1]) if markers else None,
            reserved_tool_call_token=reserved,
            tool_result_role=role,
            stop=tuple(stop),
        ),
        **{key: _globs(where, key, row[key]) for key in _MATCH_KEYS if key in row},
    )


def parse_table(data: dict[str, Any]) -> Table:
    rows = data.get("rule", [])
    if not isinstance(rows, list) or not rows:
        raise _fail("top level", "needs at least one [[rule]]")
    rules = tuple(parse_rule(row, i) for i, row in enumerate(rows))
    seen: set[str] = set()
    for i, rule in enumerate(rules):
        if rule.caps.rule in seen:
            raise _fail(f"rule #{i + 1}", f"duplicate id {rule.caps.rule!r}")
        seen.add(rule.caps.rule)
        catch_all = not (rule.name or rule.architecture or rule.general_name)
        if catch_all and i != len(rules) - 1:
            raise _fail(
                f"rule #{i + 1} ({rule.caps.rule!r})",
                "has no name/architecture/general_name globs, so it matches every model "
                "and the rules after it could never apply; move it to the end",
            )
    unknown = set(data) - {"rule"}
    if unknown:
        raise _fail("top level", f"unknown table(s) {', '.join(sorted(unknown))}")
    return Table(rules)


def load_table(text: str | None = None) -> Table:
    """Parse capabilities TOML (the shipped file when `text` is None)."""
    if text is None:
        return _shipped_table()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CapabilitiesError(f"capabilities.toml is not valid TOML: {exc}") from None
    return parse_table(data)


@lru_cache(maxsize=1)
def _shipped_table() -> Table:
    text = resources.files("drivers").joinpath("capabilities.toml").read_text(encoding="utf-8")
    return load_table(text)


def match(
    name: str = "", architecture: str = "", general_name: str = "", table: Table | None = None
) -> Capabilities:
    """The first rule that matches; the built-in defaults if none does."""
    for rule in (table or _shipped_table()).rules:
        if rule.matches(name, architecture, general_name):
            return rule.caps
    return Capabilities()


# --- model specs -------------------------------------------------------------------

ModelKind = Literal["gguf", "bundled", "scripted", "openai", "name"]


@dataclass(frozen=True)
class ModelInfo:
    """What a --model string denotes, and the capabilities that apply to it."""

    spec: str
    kind: ModelKind
    name: str
    caps: Capabilities
    gguf: GGUFInfo | None = None

    @property
    def template_label(self) -> str:
        if self.caps.template != GGUF_TEMPLATE:
            return self.caps.template
        if self.gguf is not None and self.gguf.chat_template:
            return "gguf (embedded)"
        return f"{DEFAULT_TEMPLATE} (no embedded template)"

    def summary(self) -> dict[str, str]:
        """One row of `bosun models`."""
        caps = self.caps
        return {
            "model": self.name or self.spec,
            "kind": self.kind,
            "path": str(self.gguf.path) if self.gguf else "",
            "architecture": self.gguf.architecture if self.gguf else "",
            "general.name": self.gguf.name if self.gguf else "",
            "rule": caps.rule,
            "template": self.template_label,
            "tool_format": caps.tool_format,
            "think_markers": " ".join(caps.think_markers or ()),
            "wire_remap": "yes" if caps.reserved_tool_call_token else "no",
            "tool_result_role": caps.tool_result_role,
            "stop": " ".join(caps.stop),
        }


def bundled_models() -> dict[str, Path | None]:
    """Bundled model names -> their GGUF path, or None when the package is not installed."""
    return {name: ready_path(model) for name, model in BUNDLED.items()}


@lru_cache(maxsize=32)
def model_info(model: str) -> ModelInfo:
    """Resolve a --model string; GGUF metadata is read once per process.

    Raises GGUFError (a ValueError) for a .gguf path that exists but is not readable
    GGUF; a path that does not exist is treated as a name, and the driver reports it.
    """
    if model.startswith("scripted:"):
        return ModelInfo(model, "scripted", "scripted", match("scripted"))
    if model.startswith("openai:"):
        name = model.partition("#")[2]
        return ModelInfo(model, "openai", name, match(name))
    path: Path | None = None
    kind: ModelKind = "name"
    if model.strip().lower() in BUNDLED:
        # A chunked model is joined here, on first use, not later: the template needs its
        # GGUF's bos/eos, and this answer is cached for the process.
        kind, path = "bundled", ready_path(BUNDLED[model.strip().lower()])
    elif model.lower().endswith(".gguf"):
        kind, path = "gguf", Path(model) if Path(model).is_file() else None
    name = Path(model).stem if kind == "gguf" else model
    info = read_gguf(path) if path is not None else None
    caps = match(name, info.architecture if info else "", info.name if info else "")
    return ModelInfo(model, kind, name, caps, info)
