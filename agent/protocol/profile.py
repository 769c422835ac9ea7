"""ModelProfile: everything model-specific, resolved once per model.

bosun's main job is driving the user's own model, so the prompt it sends is the one
that model was trained on: its own chat template, HF `apply_chat_template` semantics,
its own call markup, reasoning carried back as its template carries it, results in the
template's tool role. A profile is where that knowledge lives, decided once from what
the model file says (most specific first):

1. the chat template embedded in the GGUF (or given): probed for its call markup,
   reasoning markers, whether its generation prompt pre-opens reasoning and its
   end-of-turn marker (`agent.protocol.template_facts`);
2. then the GGUF's architecture and name, against drivers/capabilities.toml, which
   fills in what the template leaves open and can override it explicitly.

The model's own template is used whenever it prints calls in a markup bosun parses.
bosun's shipped templates stand in only where the model's template has no tool support
or cannot render, and every deviation from the model's own protocol is named, with its
reason, in `adaptations`. Nothing downstream re-derives any of this from a model string.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from jinja2 import Template, TemplateError

from agent.history import Message
from agent.parsing.select import ModelOutputParser, parser_for, tool_schemas
from agent.parsing.shapes import SHAPES, write_call
from agent.parsing.wire import canonical_to_wire
from agent.protocol import routing
from agent.protocol.capabilities import DEFAULT_TEMPLATE, match
from agent.protocol.dialect import Dialect, to_template_messages
from agent.protocol.gguf import GGUFInfo, read_gguf
from agent.protocol.jinja_env import compile_template
from agent.protocol.routing import Adaptation
from agent.protocol.template_bounds import TemplateBoundsError, TemplateRenderError, refused
from agent.protocol.template_facts import SAMPLE_ARGUMENTS, SAMPLE_TOOL, template_facts
from agent.resources import template_path
from agent.untrusted import visible
from drivers.bundled import BUNDLED, ready_path

ModelKind = Literal["gguf", "bundled", "scripted", "openai", "name"]
# The call markup of each shipped template.


_LINE = 300  # characters of an error's text in a one-line message


def one_line(exc: BaseException) -> str:
    """`exc` as one line for a terminal: a template's own error text is the model file's
    words, so it is shortened and its control characters are shown, not sent."""
    text = " ".join(str(exc)[: _LINE * 4].split()) or type(exc).__name__
    return visible(text if len(text) <= _LINE else text[: _LINE - 1] + "…")


@dataclass(frozen=True)
class ModelSource:
    """What a --model string and its file say about the model, before any decision."""

    spec: str
    kind: ModelKind
    name: str
    architecture: str = ""
    general_name: str = ""
    chat_template: str | None = None
    template_origin: str = ""  # where chat_template came from, for people
    bos_token: str = ""
    eos_token: str = ""
    gguf: GGUFInfo | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class ModelProfile:
    """How bosun speaks to one model. Frozen: resolved once, handed to everything."""

    model: str
    name: str
    family: str
    template: str = field(repr=False)  # the Jinja source that renders every prompt
    template_origin: str  # "embedded in X.gguf", "templates/chatml.jinja", …
    bos_token: str
    eos_token: str
    tool_format: str  # a name from agent.parsing.FORMATS
    reasoning: tuple[str, str] | None  # (open, close) around reasoning, if the model has any
    reasoning_preopened: bool  # the generation prompt ends inside an open reasoning block
    stop: tuple[str, ...]
    wire_remap: bool  # <tool_call> goes out as [[CALL]] (agent.parsing.wire)
    remap_reason: str
    adaptations: tuple[Adaptation, ...]
    dialect: Dialect = field(repr=False)
    call_example: str = field(default="", repr=False)  # the model's own markup for a call
    rule: str = "default"
    # Changes to bosun's default tools for this family ("+apply_patch", "-edit_file"):
    # the tools it was trained on (capabilities.toml); the user's --tools come after.
    tool_changes: tuple[str, ...] = ()
    source: ModelSource | None = field(default=None, repr=False, compare=False)

    # -- prompts ----------------------------------------------------------------------

    def canonical(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] = (),
        add_generation_prompt: bool = True,
    ) -> str:
        """The prompt in canonical form (history, traces and sessions use this form)."""
        tools = list(tools)
        native = bool(tools) and self.dialect.native_tools
        block = "" if native or not tools else self.tool_block(tools)
        compiled = _compiled(self.template, self.template_origin)
        try:
            return str(
                compiled.render(
                    messages=to_template_messages(messages, self.dialect, block, self._writer),
                    # A fresh copy: the sandbox lets templates mutate what they are given.
                    tools=copy.deepcopy(tools) if native else None,
                    add_generation_prompt=add_generation_prompt,
                    bos_token=self.bos_token,
                    eos_token=self.eos_token,
                    call_example=self.call_example,  # read by bosun's shipped templates
                )
            )
        except TemplateBoundsError as exc:
            raise refused(self.template_origin, self.model, str(exc)) from None
        except Exception as exc:  # any failure inside a template is the template's problem
            raise TemplateRenderError(
                f"chat template {visible(self.template_origin)} failed to render: {one_line(exc)}"
            ) from exc

    @property
    def _writer(self) -> Any:
        if self.tool_format == "hermes" or self.tool_format not in SHAPES:
            return None  # bosun's canonical envelope (agent.protocol.dialect.envelope)
        return functools.partial(write_call, self.tool_format)

    def render(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] = (),
        add_generation_prompt: bool = True,
    ) -> str:
        """Exactly the text the driver is sent (wire-remapped where that applies)."""
        return self.to_wire(self.canonical(messages, tools, add_generation_prompt))

    def to_wire(self, text: str) -> str:
        return canonical_to_wire(text) if self.wire_remap else text

    def tool_block(self, tools: Sequence[dict[str, Any]]) -> str:
        """bosun's tool block (templates/tools.jinja), for a template that does not print
        `tools`: the definitions, and how to call, in the model's own markup where its
        template prints calls."""
        return tool_block(tools, self.call_example)

    def with_template(self, source: str, origin: str) -> ModelProfile:
        """This model, rendered with `source` as given (bosun render --template, tests)."""
        base = self.source or ModelSource(self.model, "name", self.name)
        return _resolve(replace(base, chat_template=source, template_origin=origin), forced=True)

    # -- model output -------------------------------------------------------------------

    def parser(
        self,
        tools: Iterable[Any] | None = None,
        *,
        prompt: str | None = None,
        salvage: bool = True,
    ) -> ModelOutputParser:
        """A stream parser for this model's raw output (`feed`/`finish` -> events).

        `tools`: tool specs (they also type arguments a format carries as text) or names;
        None accepts any name. `prompt`: the prompt that was sent, so a reply that starts
        inside a reasoning block the prompt opened is read as reasoning; without it the
        reply's own text decides (`agent.parsing.lead`). `salvage=False` is the
        evaluation's no-salvage ablation.
        """
        opened: bool | None = None
        if prompt is not None and self.reasoning is not None:
            opened = prompt.rstrip().endswith(self.reasoning[0])
        specs = list(tools) if tools is not None else None
        return parser_for(
            self.tool_format,
            _tool_names(specs),
            reasoning=self.reasoning,
            opened=opened if self.reasoning is not None else False,
            stop=self.stop,
            wire=self.wire_remap,
            salvage=salvage,
            schemas=tool_schemas(specs),
        )

    def grammars(
        self, tools: Sequence[dict[str, Any]], loose: list[str] | None = None
    ) -> tuple[str, str, str] | None:
        """(first call, later call, answer only) GBNF grammars for --constrain, in this
        model's own call format; None where bosun has no shape for the format. Tools
        whose arguments were left free (too large a grammar) are added to `loose`;
        GrammarTooLarge when the whole would be (agent.protocol.grammar)."""
        from agent.protocol.grammar import answer_grammar, tool_call_grammar
        from agent.protocol.grammar_shapes import shape_grammars

        if self.tool_format != "hermes":
            return shape_grammars(self.tool_format, tools, loose=loose)
        open_, close = (
            ("[[CALL]]", "[[/CALL]]") if self.wire_remap else ("<tool_call>", "</tool_call>")
        )
        return (
            tool_call_grammar(
                tools, require_call=True, open_tag=open_, close_tag=close, loose=loose
            ),
            tool_call_grammar(tools, open_tag=open_, close_tag=close, loose=loose),
            answer_grammar(),
        )

    def summary(self) -> dict[str, str]:
        """`bosun models`: one row."""
        src = self.source
        return {
            "model": self.name or self.model,
            "kind": src.kind if src else "",
            "path": str(src.gguf.path) if src and src.gguf else "",
            "architecture": src.architecture if src else "",
            "general.name": src.general_name if src else "",
            "family": self.family,
            "rule": self.rule,
            "template": self.template_origin,
            "tool_format": self.tool_format,
            "reasoning": " … ".join(self.reasoning or ()),
            "reasoning_preopened": "yes" if self.reasoning_preopened else "no",
            "wire_remap": f"yes ({self.remap_reason})" if self.wire_remap else "no",
            "stop": " ".join(self.stop),
            "adaptations": "; ".join(str(a) for a in self.adaptations) or "none",
        }


def _tool_names(tools: Iterable[Any] | None) -> list[str] | None:
    if tools is None:
        return None
    names = []
    for tool in tools:
        if isinstance(tool, str):
            names.append(tool)
        elif isinstance(tool, dict):
            fn = tool.get("function", tool)
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                names.append(fn["name"])
    return names


@lru_cache(maxsize=64)
def _compiled(source: str, origin: str) -> Template:
    try:
        return compile_template(source)
    except TemplateError as exc:
        msg = f"chat template {visible(origin)} does not compile: {one_line(exc)}"
        raise TemplateRenderError(msg) from None


def load_template(template: str | Path | None) -> str:
    """Template source: `template` itself, the file it names, or bosun's chatml."""
    if template is None:
        template = template_path(f"{DEFAULT_TEMPLATE}.jinja")
    if isinstance(template, Path):
        try:
            return template.read_text(encoding="utf-8")
        except OSError as exc:
            raise TemplateRenderError(f"cannot read chat template {template}: {exc}") from None
    return template


def tool_block(tools: Sequence[dict[str, Any]], call_example: str = "") -> str:
    """templates/tools.jinja for `tools`; `call_example` is a call in the model's own
    markup (empty: bosun's canonical <tool_call> envelope)."""
    if not tools:
        return ""
    compiled = _compiled(load_template(template_path("tools.jinja")), "tools.jinja")
    return str(compiled.render(tools=list(tools), call_example=call_example))


# --- identifying the model ------------------------------------------------------------


def bundled_models() -> dict[str, Path | None]:
    """Bundled model names -> their GGUF path, or None when the package is not installed."""
    return {name: ready_path(model) for name, model in BUNDLED.items()}


@lru_cache(maxsize=32)
def describe(model: str) -> ModelSource:
    """What `model` denotes: GGUF metadata is read once per process, never the weights.

    Raises GGUFError (a ValueError) for a .gguf path that exists but is not readable
    GGUF; a path that does not exist is treated as a name, and the driver reports it.
    """
    if model.startswith("scripted:"):
        return ModelSource(model, "scripted", "scripted")
    if model.startswith("openai:"):
        return ModelSource(model, "openai", model.partition("#")[2])
    path: Path | None = None
    kind: ModelKind = "name"
    if model.strip().lower() in BUNDLED:
        # A chunked model is joined here, on first use: the template needs its GGUF's
        # bos/eos and its embedded template, and this answer is cached for the process.
        kind, path = "bundled", ready_path(BUNDLED[model.strip().lower()])
    elif model.lower().endswith(".gguf"):
        kind, path = "gguf", Path(model) if Path(model).is_file() else None
    name = Path(model).stem if kind == "gguf" else model
    info = read_gguf(path) if path is not None else None
    if info is None:
        return ModelSource(model, kind, name)
    return ModelSource(
        model,
        kind,
        name,
        architecture=info.architecture,
        general_name=info.name,
        chat_template=info.chat_template,
        template_origin=f"embedded in {path.name if path else model}",
        bos_token=info.bos_token,
        eos_token=info.eos_token,
        gguf=info,
    )


def profile_for(
    model: str, *, architecture: str | None = None, chat_template: str | None = None
) -> ModelProfile:
    """The profile of `model`: a bundled name, a GGUF path (its metadata is read), an
    `openai:URL#NAME` spec, `scripted:FILE` or a bare name. `architecture` and
    `chat_template` stand in for what a GGUF file would say (tests, served models)."""
    source = describe(model)
    if architecture is not None:
        source = replace(source, architecture=architecture)
    if chat_template is not None:
        source = replace(source, chat_template=chat_template, template_origin="given")
    return _resolve(source)


# --- deciding -------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _resolve(src: ModelSource, forced: bool = False) -> ModelProfile:
    rule = match(src.name, src.architecture, src.general_name)
    own = src.chat_template
    own_facts = template_facts(own, src.bos_token, src.eos_token) if own else None
    if own_facts is not None and own_facts.exceeded:
        raise refused(src.template_origin or "given", src.spec, own_facts.exceeded)
    hint = routing.format_hint(rule, own, own_facts)
    adaptations: list[Adaptation] = []
    shipped = None if forced else routing.shipped_choice(rule, own_facts, hint, adaptations)
    if shipped is None and own is not None and own_facts is not None:
        source, origin, facts = own, src.template_origin or "embedded", own_facts
    else:
        shipped = shipped or DEFAULT_TEMPLATE
        source = load_template(template_path(f"{shipped}.jinja"))
        origin = f"templates/{shipped}.jinja"
        facts = template_facts(source, src.bos_token, src.eos_token)
    tool_format, dialect, why_text = routing.calls(rule, facts, hint, shipped)
    if why_text:
        adaptations.append(Adaptation("calls as text", why_text))
    if shipped is None:
        adaptations += routing.dialect_adaptations(dialect)
    # The model's own reasoning markers hold even where bosun renders for it.
    reasoning = routing.reasoning(rule, own_facts if own_facts is not None else facts)
    # Whose words teach and show the calls: bosun's (a shipped template, or calls it
    # writes itself) or the model's own template.
    bosun_text = shipped is not None or not dialect.native_calls
    remap, remap_reason = routing.remap(src.gguf, tool_format, bosun_text=bosun_text)
    if tool_format == "hermes":
        example = ""  # tools.jinja's own wording, bosun's canonical envelope
    elif dialect.native_calls:
        example = facts.call_markup
    else:
        example = write_call(tool_format, SAMPLE_TOOL, dict(SAMPLE_ARGUMENTS)) or ""
    return ModelProfile(
        model=src.spec,
        name=src.name,
        family=rule.rule if rule.rule != "default" else (src.architecture or tool_format),
        template=source,
        template_origin=origin,
        bos_token=src.bos_token,
        eos_token=src.eos_token,
        tool_format=tool_format,
        reasoning=reasoning,
        reasoning_preopened=reasoning is not None
        and facts.reasoning == reasoning
        and facts.preopens,
        stop=routing.stops(rule, facts, tool_format, src.eos_token),
        wire_remap=remap,
        remap_reason=remap_reason,
        adaptations=tuple(adaptations),
        dialect=dialect,
        call_example=example,
        rule=rule.rule,
        tool_changes=rule.tools,
        source=src,
    )


__all__ = [
    "SAMPLE_TOOL",
    "Adaptation",
    "ModelProfile",
    "ModelSource",
    "TemplateBoundsError",
    "TemplateRenderError",
    "bundled_models",
    "describe",
    "load_template",
    "profile_for",
    "tool_block",
]
