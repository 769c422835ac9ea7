"""The decisions behind a model profile, one function each: which template, which call
format, which reasoning markers and stops, whether to remap, and what that costs.

Every function here takes what is known (the family rule, what probing the templates
found) and returns a decision plus, where it deviates from the model's own template, an
`Adaptation` saying why. `agent.protocol.profile` assembles them; nothing here renders anything.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agent.markup import TOOL_CALL_OPEN
from agent.parsing.formats import ENVELOPED, FORMAT_STOPS, REGISTRY, format_of_markup
from agent.parsing.shapes import SHAPES
from agent.protocol.capabilities import DEFAULT_TEMPLATE, GGUF_TEMPLATE, Capabilities
from agent.protocol.dialect import Dialect
from agent.protocol.gguf import TOKEN_CONTROL, TOKEN_USER_DEFINED, GGUFInfo, token_type
from agent.protocol.template_facts import TemplateFacts

# The call markup of each shipped template: Hermes in the generic ones, and a format's
# own in the template its record names (harmony's).
SHIPPED_FORMATS: dict[str, str] = {
    "chatml": "hermes",
    "llama3": "hermes",
    "gemma": "hermes",
    **{f.template: f.name for f in REGISTRY.values() if f.template},
}


@dataclass(frozen=True)
class Adaptation:
    """One way the prompt deviates from what the model's own template would print."""

    what: str
    why: str

    def __str__(self) -> str:
        return f"{self.what}: {self.why}"


def format_hint(rule: Capabilities, own: str | None, facts: TemplateFacts | None) -> str | None:
    """The format the model writes, where its template does not print calls: what the
    rule says, else what the template's own tool instructions show (Granite 3.3's
    system prompt names <|tool_call|>)."""
    if rule.tool_format:
        return rule.tool_format
    if own is None or facts is None or facts.dialect.native_calls:
        return None
    return format_of_markup(own)


def shipped_choice(
    rule: Capabilities, facts: TemplateFacts | None, hint: str | None, notes: list[Adaptation]
) -> str | None:
    """The shipped template to use instead of the model's own, or None for its own."""
    named = rule.template if rule.template != GGUF_TEMPLATE else None
    if rule.override and rule.template is not None:
        if named is not None:
            notes.append(Adaptation(f"shipped template {named}", f"rule {rule.rule} says so"))
        return named
    if facts is None:
        why = "the model file has no chat template"
        notes.append(Adaptation(f"shipped template {named or DEFAULT_TEMPLATE}", why))
        return named or DEFAULT_TEMPLATE
    if facts.tool_support:
        return None
    knows_tools = facts.dialect.native_tools or facts.dialect.native_results
    if facts.usable and named is None and knows_tools and hint and hint in SHAPES:
        return None  # its own template; bosun writes the calls in the model's format
    stand_in = named or facts.style or (DEFAULT_TEMPLATE if facts.error else None)
    if stand_in is None:
        return None  # its own template, with bosun's tool fallbacks (named below)
    why = (
        f"the model's own template {facts.error}"
        if facts.error
        else "the model's own template has no tool support"
    )
    notes.append(Adaptation(f"shipped template {stand_in}", why))
    return stand_in


def calls(
    rule: Capabilities, facts: TemplateFacts, hint: str | None, shipped: str | None
) -> tuple[str, Dialect, str]:
    """(tool format, message shape, why calls are written as text or "")."""
    dialect = facts.dialect
    native = facts.tool_format if facts.tool_support else None
    if (rule.override or shipped is not None) and rule.tool_format:
        fmt = rule.tool_format
    elif native is not None:
        fmt = native
    elif shipped is not None:
        fmt = SHIPPED_FORMATS.get(shipped, "hermes")
    else:
        fmt = hint or "hermes"
    if dialect.native_calls and native == fmt:
        return fmt, dialect, ""
    if fmt not in SHAPES:
        fmt = "hermes"  # what bosun shows and what it parses must be one format
    if not dialect.native_calls:
        if shipped is not None and fmt == SHIPPED_FORMATS.get(shipped):
            return fmt, dialect, ""
        return (
            fmt,
            dialect,
            (
                "the template does not print tool_calls; bosun writes them in the "
                f"model's {fmt} format"
            ),
        )
    if native is None:
        why = "bosun does not parse the template's own call markup; calls are written as " + fmt
    else:
        why = f"the template prints {native} calls but the model writes {fmt}"
    return fmt, replace(dialect, native_calls=False), why


def reasoning(rule: Capabilities, facts: TemplateFacts) -> tuple[str, str] | None:
    if rule.override and rule.think_markers is not None:
        return rule.think_markers or None
    if facts.reasoning is not None:
        return facts.reasoning
    return rule.think_markers or None


def stops(rule: Capabilities, facts: TemplateFacts, tool_format: str, eos: str) -> tuple[str, ...]:
    if rule.stop is not None:
        stops = list(rule.stop)
    elif tool_format in FORMAT_STOPS:
        return FORMAT_STOPS[tool_format]
    else:
        stops = [facts.end_of_turn] if facts.end_of_turn else []
    if eos and eos not in stops and not eos.isalnum():
        stops.append(eos)
    return tuple(stops)


def dialect_adaptations(dialect: Dialect) -> list[Adaptation]:
    """The deviations a message shape makes from the HF convention, with their reason."""
    flags = (
        (not dialect.native_tools, "tool block", "the template does not print `tools`"),
        (
            not dialect.native_results,
            "results as user turns",
            "the template does not print tool messages",
        ),
        (
            not dialect.system_role,
            "folded system",
            "the template refuses a system role or shows it only in the last user turn",
        ),
        (dialect.short_ids, "short ids", "the template wants 9-character alphanumeric ids"),
        (
            dialect.arguments_as_string,
            "string arguments",
            "the template concatenates arguments as text",
        ),
        (dialect.single_call, "one call per message", "the template refuses two tool_calls"),
        (
            dialect.null_content,
            "no content with calls",
            "the template prints calls only when content is None",
        ),
        (
            dialect.split_prose,
            "prose apart from calls",
            "the template drops the calls of a message that also has prose",
        ),
    )
    return [Adaptation(what, why) for on, what, why in flags if on]


def remap(gguf: GGUFInfo | None, tool_format: str, *, bosun_text: bool) -> tuple[bool, str]:
    """The tag remap applies only where bosun writes its own tool protocol and the
    tokenizer holds `<tool_call>` as one reserved token: then bosun's instructions,
    example and past calls would put that token where the model never saw it."""
    if not bosun_text or tool_format not in ENVELOPED or gguf is None:
        return False, ""
    kind = token_type(gguf, TOOL_CALL_OPEN)
    if kind not in (TOKEN_CONTROL, TOKEN_USER_DEFINED):
        return False, ""
    label = "control" if kind == TOKEN_CONTROL else "user-defined"
    return True, (
        f"{TOOL_CALL_OPEN} is one reserved ({label}) token in this vocabulary and bosun "
        "writes its own tool instructions for this model"
    )
