"""drivers/capabilities.toml: explicit per-family facts, for where a model file is silent.

A model's own chat template says most of what bosun needs (`agent.protocol.template_facts`), so
these rules are not where routing starts. They fill in what the template leaves open
(a served model has no template; SmolLM2's and Gemma's templates know no tools, so a
shipped template speaks for them) and, with `override = true`, correct a template that
is wrong. The file is audited when loaded: a rule that contradicts itself (harmony
calls with a chatml template) is a harness bug that would silently ruin every turn, so
it is rejected with the rule's id and what to change.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from agent.parsing.formats import FORMATS, canonical_format
from agent.resources import template_path

GGUF_TEMPLATE = "gguf"  # "the template embedded in the model file"
DEFAULT_TEMPLATE = "chatml"  # what a model with no usable template of its own gets
_MATCH_KEYS = ("name", "architecture", "general_name")
_FLAG_KEYS = ("template", "tool_format", "think_markers", "stop", "override", "tools")
_TOOL_CHANGE = re.compile(r"[+-][a-z_]+")


class CapabilitiesError(ValueError):
    """drivers/capabilities.toml is malformed or contradicts itself."""


@dataclass(frozen=True)
class Capabilities:
    """One rule's flags; None where the rule says nothing (the template decides)."""

    rule: str = "default"
    template: str | None = None
    tool_format: str | None = None
    # () says "this family does not reason"; None leaves it to the template.
    think_markers: tuple[str, str] | tuple[()] | None = None
    stop: tuple[str, ...] | None = None
    override: bool = False  # the flags win over what the model's own template says
    # Changes to bosun's default tool set, as --tools takes them ("+apply_patch"): the
    # tools this family was trained to call (agent.tools.tool_set applies them).
    tools: tuple[str, ...] = ()


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


def shipped_templates() -> tuple[str, ...]:
    """The chat templates bosun ships (templates/*.jinja, less its partials)."""
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
    shipped = shipped_templates()
    template = row.get("template")
    if template is not None and template != GGUF_TEMPLATE and template not in shipped:
        choices = ", ".join((GGUF_TEMPLATE, *shipped))
        raise _fail(where, f"template {template!r} is not one of: {choices}")
    tool_format = row.get("tool_format")
    if tool_format is not None:
        try:
            tool_format = canonical_format(tool_format)
        except (ValueError, TypeError):
            raise _fail(
                where, f"tool_format {tool_format!r} is not one of {', '.join(FORMATS)}"
            ) from None
    markers = row.get("think_markers")
    pair_ok = (
        isinstance(markers, list)
        and len(markers) == 2
        and all(isinstance(m, str) and m for m in markers)
        and markers[0] != markers[1]
    )
    if markers is not None and markers != [] and not pair_ok:
        raise _fail(where, "think_markers must be [] or two different non-empty strings")
    stop = row.get("stop")
    if stop is not None and (
        not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop)
    ):
        raise _fail(where, "stop must be a list of non-empty strings")
    override = row.get("override", False)
    if not isinstance(override, bool):
        raise _fail(where, "override must be true or false")
    tools = row.get("tools", [])
    if not isinstance(tools, list) or not all(
        isinstance(t, str) and _TOOL_CHANGE.fullmatch(t) for t in tools
    ):
        raise _fail(where, 'tools must be a list of "+NAME" / "-NAME" changes')

    # The audit: flags that cannot all be true of one model.
    harmony = tool_format == "gpt_oss_harmony"
    if harmony and template not in (None, "harmony", GGUF_TEMPLATE):
        raise _fail(
            where,
            f'tool_format = "harmony" needs template = "harmony" (or "gguf"), '
            f"not {template!r}: only the harmony template has harmony's channels",
        )
    if template == "harmony" and not harmony:
        raise _fail(
            where, f'template = "harmony" needs tool_format = "harmony", not {tool_format!r}'
        )
    if harmony and markers:
        raise _fail(
            where,
            'tool_format = "harmony" carries reasoning in channels: think_markers must be []',
        )
    think: tuple[str, str] | tuple[()] | None = None
    if markers is not None:
        think = (markers[0], markers[1]) if markers else ()
    return Rule(
        Capabilities(
            rule=rule_id,
            template=template,
            tool_format=tool_format,
            think_markers=think,
            stop=tuple(stop) if stop is not None else None,
            override=override,
            tools=tuple(tools),
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
    """The first rule that matches; a rule that says nothing if none does."""
    for rule in (table or _shipped_table()).rules:
        if rule.matches(name, architecture, general_name):
            return rule.caps
    return Capabilities()
