"""The Jinja environment chat templates run in, compatible with Hugging Face's.

Models are trained on prompts that `transformers.apply_chat_template` produced, so a
template must see the same dialect here: `trim_blocks`/`lstrip_blocks`, loop controls,
`raise_exception`, a `tojson` that keeps key order and non-ASCII, `strftime_now`, and the
`{% generation %}` tag that training templates use to mark assistant spans. Compiled
templates are cached by source, so a render after the first pays only for execution.
A template is code from the model file: every render is bounded in time and size
(`agent.protocol.bounded_jinja`, `agent.protocol.template_bounds`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any

from jinja2 import FileSystemLoader, Template, TemplateError, nodes
from jinja2.ext import Extension
from jinja2.parser import Parser
from jinja2.runtime import LoopContext
from jinja2.sandbox import SandboxedEnvironment

from agent.protocol.bounded_jinja import BoundedEnvironment, bounded_filter
from agent.protocol.template_bounds import active
from agent.resources import data_dir

# One clock reading per process. A template that prints the date (Llama 3.1, gpt-oss,
# Mistral Small) would otherwise change its system block at midnight and invalidate the
# whole KV cache; a session that crosses midnight keeps its start date instead.
_CLOCK = datetime.now()


_MAX_DATE_FORMAT = 1000  # characters: "%c" a million times would print 24 MB


def strftime_now(fmt: str) -> str:
    """HF's `strftime_now`, read from the per-process clock (see `_CLOCK`)."""
    if isinstance(fmt, str) and len(fmt) > _MAX_DATE_FORMAT:
        active().fail(f"a date format of more than {_MAX_DATE_FORMAT} characters")
    return _CLOCK.strftime(fmt)


def _json_default(value: Any) -> Any:
    # `tools | map(attribute="function") | tojson` hands json a generator; minja and
    # llama.cpp serialise it as a list, so templates written against them rely on that.
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Iterable) and not isinstance(value, str | bytes):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def tojson(
    value: Any,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
    ensure_ascii: bool = False,
) -> str:
    """HF's `tojson`: key order and non-ASCII kept (Jinja's own sorts keys, escapes "<")."""
    return json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=separators,
        sort_keys=sort_keys,
        default=_json_default,
    )


_MAX_MESSAGE = 2000  # characters of a template's own error message that are kept


def raise_exception(message: str) -> None:
    """HF's `raise_exception`. The message is the template's text: a list that prints
    to gigabytes is not printed, and only the head of a long one is kept."""
    if not isinstance(message, str):
        active().weigh(message, what="an error message")
        message = str(message)
    raise TemplateError(message[:_MAX_MESSAGE])


def lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    """Jinja's `lipsum` global, with its counts capped: `lipsum(10**7)` would write for
    minutes."""
    from jinja2.utils import generate_lorem_ipsum

    for value in (n, min, max):
        if not isinstance(value, int) or value > 1000:
            active().fail("lipsum() of more than 1000 paragraphs or words")
    return str(generate_lorem_ipsum(n=n, html=html, min=min, max=max))


class GenerationTag(Extension):
    """`{% generation %}…{% endgeneration %}` renders its body unchanged.

    HF uses the tag to compute an assistant-token mask for training; for inference it is
    transparent, and a template that uses it must not fail to compile.
    """

    tags = {"generation"}  # noqa: RUF012 - Jinja reads this class attribute

    def parse(self, parser: Parser) -> list[nodes.Node]:
        next(parser.stream)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


# Every attribute a plain dict has; `message.role` on a dict looks up anything else as a key.
_DICT_ATTRIBUTES = frozenset(dir(dict))
# `loop.first`, `loop.index0`, …: the loop object's public surface, all of it harmless.
_LOOP_ATTRIBUTES = frozenset(a for a in dir(LoopContext) if not a.startswith("_"))


class _DictAttributes(SandboxedEnvironment):
    """The sandbox, with `message.role` on a plain dict answered without an exception.

    Jinja resolves `obj.name` by trying `getattr(obj, "name")` first and falling back to
    `obj["name"]`. Templates read message dicts this way thousands of times per render,
    and each miss raises and catches an AttributeError: that was half of a 50-turn
    render. For a plain dict the outcome is known in advance: a name that is not one of
    dict's own attributes can only be a key. Same result, same sandbox rules (item
    access on a dict is not checked by the sandbox either). The loop variable's public
    attributes, which templates read as often, skip the sandbox's safety check for the
    same reason: the answer for them is fixed.
    """

    def getattr(self, obj: Any, attribute: str) -> Any:
        kind = type(obj)
        if kind is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        if kind is LoopContext and attribute in _LOOP_ATTRIBUTES:
            return getattr(obj, attribute)
        return super().getattr(obj, attribute)


class ChatTemplateEnvironment(_DictAttributes, BoundedEnvironment):
    """The metered sandbox a model's chat template runs in (agent.protocol.bounded_jinja)."""


class ShippedTemplateEnvironment(_DictAttributes):
    """The same sandbox, unmetered, for bosun's own templates (templates/*.jinja): code
    bosun ships cannot loop or blow up, so it runs as fast as Jinja runs it."""


def _configured(env: SandboxedEnvironment, metered: bool) -> SandboxedEnvironment:
    env.filters["tojson"] = bounded_filter("tojson", tojson) if metered else tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    if metered:
        env.globals["lipsum"] = lipsum
    return env


_OPTIONS: dict[str, Any] = {
    "trim_blocks": True,
    "lstrip_blocks": True,
    "extensions": ["jinja2.ext.loopcontrols", GenerationTag],
    "keep_trailing_newline": False,
}


@lru_cache(maxsize=1)
def environment() -> SandboxedEnvironment:
    """The shared environment for chat templates from model files (metered).

    Sandboxed but not immutable: Kimi's templates `append` to lists they build, which
    minja allows. Everything a template receives is built fresh for that render (see
    `agent.protocol.dialect`), so a template can only mutate its own copies.
    The loader serves bosun's own templates/ only, so shipped templates can share
    `tools.jinja`; corpus and GGUF templates never include anything.
    """
    loader = FileSystemLoader(str(data_dir("templates")))
    return _configured(ChatTemplateEnvironment(loader=loader, **_OPTIONS), metered=True)


@lru_cache(maxsize=1)
def shipped_environment() -> SandboxedEnvironment:
    """The environment bosun's own templates run in: the same, without the meter."""
    loader = FileSystemLoader(str(data_dir("templates")))
    return _configured(ShippedTemplateEnvironment(loader=loader, **_OPTIONS), metered=False)


@lru_cache(maxsize=1)
def shipped_sources() -> frozenset[str]:
    """The text of every template bosun ships: a source that is one of them is bosun's
    own code, wherever it came from (a GGUF may embed bosun's chatml, too)."""
    folder = data_dir("templates")
    return frozenset(p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.jinja")))


@lru_cache(maxsize=64)
def compile_template(source: str) -> Template:
    """Compile once per distinct source; raises jinja2.TemplateError on bad syntax. A
    template bosun ships runs as it is; any other is metered."""
    if source in shipped_sources():
        return shipped_environment().from_string(source)
    return environment().from_string(source)
