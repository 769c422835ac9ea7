"""The Jinja environment chat templates run in, compatible with Hugging Face's.

Models are trained on prompts that `transformers.apply_chat_template` produced, so a
template must see the same dialect here: `trim_blocks`/`lstrip_blocks`, loop controls,
`raise_exception`, a `tojson` that keeps key order and non-ASCII, `strftime_now`, and the
`{% generation %}` tag that training templates use to mark assistant spans. Compiled
templates are cached by source, so a render after the first pays only for execution.
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

from agent.resources import data_dir

# One clock reading per process. A template that prints the date (Llama 3.1, gpt-oss,
# Mistral Small) would otherwise change its system block at midnight and invalidate the
# whole KV cache; a session that crosses midnight keeps its start date instead.
_CLOCK = datetime.now()


def strftime_now(fmt: str) -> str:
    """HF's `strftime_now`, read from the per-process clock (see `_CLOCK`)."""
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


def raise_exception(message: str) -> None:
    raise TemplateError(message)


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


class ChatTemplateEnvironment(SandboxedEnvironment):
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


@lru_cache(maxsize=1)
def environment() -> SandboxedEnvironment:
    """The shared environment.

    Sandboxed but not immutable: Kimi's templates `append` to lists they build, which
    minja allows. Everything a template receives is built fresh for that render (see
    `agent.protocol.dialect`), so a template can only mutate its own copies.
    The loader serves bosun's own templates/ only, so shipped templates can share
    `tools.jinja`; corpus and GGUF templates never include anything.
    """
    env = ChatTemplateEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.loopcontrols", GenerationTag],
        loader=FileSystemLoader(str(data_dir("templates"))),
        keep_trailing_newline=False,
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


@lru_cache(maxsize=64)
def compile_template(source: str) -> Template:
    """Compile once per distinct source; raises jinja2.TemplateError on bad syntax."""
    return environment().from_string(source)
