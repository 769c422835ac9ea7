"""An independent HF `apply_chat_template` renderer: the oracle the profiles are held to.

Written from transformers' documented semantics, sharing no code with bosun's own
Jinja environment: an immutable sandbox with trim_blocks/lstrip_blocks and loop
controls, a transparent `{% generation %}` tag, `tojson` as json.dumps with
ensure_ascii=False (no generator support: HF has none), `raise_exception`, and
`strftime_now` on the clock it is given (the same instant bosun's renders read, so a
template's date line cannot differ by a midnight). Messages are plain OpenAI-form dicts.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class _Generation(Extension):
    tags = {"generation"}  # noqa: RUF012 - Jinja reads this class attribute

    def parse(self, parser: Any) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_keep", []), [], [], body).set_lineno(lineno)

    def _keep(self, caller: Any) -> str:
        return str(caller())


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def hf_render(
    source: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool = True,
    bos_token: str = "",
    eos_token: str = "",
    now: datetime | None = None,
) -> str:
    clock = now or datetime.now()
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = clock.strftime
    return env.from_string(source).render(
        messages=messages,
        tools=tools,
        add_generation_prompt=add_generation_prompt,
        bos_token=bos_token,
        eos_token=eos_token,
    )
