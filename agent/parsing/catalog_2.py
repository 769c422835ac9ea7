"""The format records, second part: Nemotron to InternLM 2, in `FORMATS` order.

`catalog_1` holds the first part, `catalog_3` the formats added since;
`agent.parsing.formats` joins the three in order.
"""

from __future__ import annotations

from typing import Any

from agent.parsing import decoders as d
from agent.parsing import decoders_text as t
from agent.parsing.native import Item, Region, Schemas
from agent.parsing.record import (
    IM_END,
    LLAMA3_END,
    NAMED,
    SAMPLE_NAME,
    Format,
    Shape,
    json_region,
    json_shape,
)


def _functools(body: str, closed: bool, schemas: Schemas) -> list[Item]:
    return d.keyed_list(body.strip().removeprefix("functools"), closed, schemas)


def _json_list(opener: str, closer: str) -> dict[str, Any]:
    """The region and shape of a format that writes `opener[{call}, …]closer`: the two
    are one fact, so they are written from one pair of markers."""
    return {
        "regions": (json_region(opener, closer),),
        "shape": json_shape(NAMED, "}", section=(f"{opener}[", f"]{closer}"), join=", "),
    }


_GIGA_CALL = "function call<|role_sep|>", "<|function_call|>"  # GigaChat 3, 3.1
_FUNCTION = "<function=", "</function>"
_FUNCTOOLS = "functools["
_SOLAR_CALL = "<|tool_call:begin|>", "<|tool_call:end|>"
_SOLAR_CALLS = "<|tool_calls|>", "<|calls|>"
_HY3_CALLS = "<tool_calls:opensource>", "</tool_calls:opensource>"
_ATEM_CALLS = "<atem:function_calls>", "</atem:function_calls>"
_INTERNLM_CALL = "<|action_start|><|plugin|>", "<|action_end|>"

RECORDS: tuple[Format, ...] = (
    Format(
        "nemotron_toolcall",
        signature=(("<TOOLCALL>",),),
        **_json_list("<TOOLCALL>", "</TOOLCALL>"),
    ),
    Format(
        "apriel",
        signature=(("<tool_calls>[",),),
        reasoning=("Here are my reasoning steps:", "[BEGIN FINAL RESPONSE]"),
        strip=("[END FINAL RESPONSE]", "<|end|>"),
        **_json_list("<tool_calls>", "</tool_calls>"),
    ),
    Format(
        "apertus",
        signature=(("<|tools_prefix|>",),),
        reasoning=("<|inner_prefix|>", "<|inner_suffix|>"),
        regions=(json_region("<|tools_prefix|>", "<|tools_suffix|>", d.name_keyed),),
        shape=json_shape(
            '{"{name}": ', "}", section=("<|tools_prefix|>[", "]<|tools_suffix|>"), join=", "
        ),
    ),
    Format(
        "gigachat3",
        signature=tuple((opener,) for opener in _GIGA_CALL),
        regions=tuple(Region(opener, None, d.gigachat3) for opener in _GIGA_CALL),
        strip=("<|message_sep|>",),
        shape=json_shape(
            f"<|message_sep|>\n\n{_GIGA_CALL[0]}\n{NAMED}",
            "}",
            alt_heads=(f"{_GIGA_CALL[0]}\n{NAMED}", f"{_GIGA_CALL[1]}{NAMED}"),
        ),
    ),
    Format(
        "functionary_v31",
        signature=((_FUNCTION[0],),),
        reasoning=None,
        regions=(
            Region(*_FUNCTION, d.functionary_v31, keep_opener=True),
            Region(d.PYTHON_TAG, None, d.python_tag, keep_opener=True),
        ),
        strip=LLAMA3_END,
        shape=json_shape(f"{_FUNCTION[0]}{{name}}>", _FUNCTION[1]),
    ),
    Format(
        "functionary_v32",
        signature=((">>>",),),
        reasoning=None,
        regions=(Region("", None, d.functionary_v32, at_start=True),),
        strip=LLAMA3_END,
        shape=json_shape("{name}\n", "", join=">>>"),
    ),
    Format(
        "firefunction_v2",
        signature=((_FUNCTOOLS,),),
        reasoning=None,
        regions=(
            Region(f" {_FUNCTOOLS}", None, _functools, keep_opener=True),
            Region(_FUNCTOOLS, None, _functools, keep_opener=True, at_start=True),
        ),
        strip=LLAMA3_END,
        shape=json_shape(NAMED, "}", section=(f" {_FUNCTOOLS}", "]"), join=", "),
    ),
    Format(
        "minicpm5_xml",
        signature=(('<function name="',),),
        regions=(Region('<function name="', "</function>", t.minicpm5_xml, keep_opener=True),),
        strip=(IM_END,),
        shape=Shape(
            '<function name="{name}">', "kv", "</function>", '<param name="{key}">', "</param>"
        ),
    ),
    Format(
        "granite",
        signature=(("<|tool_call|>",),),
        # Granite 3.x: `<|tool_call|>` then a JSON list, spaced any way; prose may follow.
        regions=(Region("<|tool_call|>", None, d.keyed_list),),
        shape=json_shape(NAMED, "}", section=("<|tool_call|>[", "]"), join=", "),
    ),
    Format(
        "solar_open",
        signature=((_SOLAR_CALL[0],),),
        reasoning=("<|think|>", "<|end|>"),
        regions=(
            Region(*_SOLAR_CALLS, d.solar_open),
            Region(*_SOLAR_CALL, d.solar_open, keep_opener=True),
        ),
        strip=("<|content|>", "<|end|>", "<|begin|>assistant", "<|flush|>"),
        shape=json_shape(
            f"{_SOLAR_CALL[0]}call0000{{index}}<|tool_call:name|>{{name}}<|tool_call:args|>",
            _SOLAR_CALL[1],
            section=_SOLAR_CALLS,
        ),
    ),
    Format(
        "hy3_xml",
        signature=(("<tool_call:opensource>",),),
        reasoning=("<think:opensource>", "</think:opensource>"),
        regions=(Region(*_HY3_CALLS, t.hy3_xml),),
        strip=("<｜hy_eos:opensource｜>",),
        shape=Shape(
            "<tool_call:opensource>{name}<tool_sep:opensource>\n",
            "kv",
            "</tool_call:opensource>\n",
            "<arg_key:opensource>{key}</arg_key:opensource>\n<arg_value:opensource>",
            "</arg_value:opensource>\n",
            section=(f"{_HY3_CALLS[0]}\n", _HY3_CALLS[1]),
        ),
    ),
    Format(
        "muse_atem",
        signature=(("<atem:invoke",),),
        regions=(Region(*_ATEM_CALLS, t.muse_atem),),
        # Muse's own turn tokens (its markup is harmony-like; the vocabulary is its own).
        strip=("<|message|>", "<|eot|>", "<|eom|>", "<|start|>assistant", "to=user"),
        shape=Shape(
            '<atem:invoke name="{name}">\n',
            "kv",
            "</atem:invoke>\n",
            '<atem:parameter name="{key}">',
            "</atem:parameter>\n",
            section=(f"{_ATEM_CALLS[0]}\n", _ATEM_CALLS[1]),
        ),
    ),
    Format(
        # Phi-4-mini: `<|tool_call|>[…]<|/tool_call|>`, or `functools[…]` as vLLM's
        # template teaches it, or bare objects as that template prints past calls.
        "phi4_mini",
        # Its own template declares tools inside <|tool|>…<|/tool|> and prints no calls.
        signature=(
            ("<|/tool_call|>",),
            ("<|tool|>", "<|/tool|>"),
            ("<|assistant|>", f'{{"name": "{SAMPLE_NAME}", "arguments"'),
        ),
        regions=(
            json_region("<|tool_call|>", "<|/tool_call|>"),
            Region(_FUNCTOOLS, None, _functools, keep_opener=True),
            Region("{", None, d.json_reply, keep_opener=True, at_start=True),
        ),
        strip=("<|end|>",),
        shape=json_shape(
            NAMED,
            "}",
            section=("<|tool_call|>[", "]<|/tool_call|>"),
            join=", ",
            alt_sections=((_FUNCTOOLS, "]"),),
        ),
    ),
    Format(
        "xlam",
        regions=tuple(
            Region(opener, None, d.bare_json, keep_opener=True, at_start=True)
            for opener in ("[", "{", "```")
        ),
        shape=json_shape(NAMED, "}", section=("[", "]"), join=", "),
    ),
    Format("hunyuan", **_json_list("<tool_calls>", "</tool_calls>")),
    Format("jamba", **_json_list("<tool_calls>", "</tool_calls>")),
    Format(
        # InternLM 2 / 2.5: `<|action_start|><|plugin|>\n{"name": …, "parameters": …}`.
        "internlm2",
        aliases=("internlm",),
        signature=((_INTERNLM_CALL[0],),),
        regions=(json_region(*_INTERNLM_CALL),),
        strip=(IM_END,),
        shape=json_shape(
            f'{_INTERNLM_CALL[0]}\n{{"name": "{{name}}", "parameters": ', f"}}{_INTERNLM_CALL[1]}"
        ),
    ),
)
