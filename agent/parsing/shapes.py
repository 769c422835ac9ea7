"""How one call looks in each format, as data: what writes a call and what constrains one.

A shape is the text before the arguments (`head`, with `{name}`), how the arguments are
written (a JSON object; key/value pairs between tags; Python keywords; Gemma 4's own
syntax) and the text after (`tail`). The same description renders a call in the model's
own format (`write_call`: the tool block's example, calls written into a template that
never prints them, every parser's round-trip test) and builds the grammar for
constrained decoding (`agent.grammar`), so the two cannot disagree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

ArgsStyle = Literal["json", "kv", "python", "gemma"]


@dataclass(frozen=True)
class Shape:
    head: str  # before the arguments; "{name}" is the tool's name, "{index}" its number
    args: ArgsStyle
    tail: str
    # For "kv": the text around each value; "{key}" is the key, "{type}" its JSON type,
    # "{string}" "true" or "false" (whether the value is written as plain text).
    key_open: str = ""
    key_close: str = ""
    sep: str = ""  # between two key/value pairs (Python, Gemma)
    # Several calls share one section in some formats: its opening, closing and what
    # stands between two calls in it.
    section: tuple[str, str] = ("", "")
    join: str = ""
    # For constrained decoding only: other openings models of the format also write
    # ("{id}": a 9-character call id), other sections, text that may follow the calls,
    # and, where the variants are too many to list, the call's head as raw GBNF.
    alt_heads: tuple[str, ...] = ()
    alt_sections: tuple[tuple[str, str], ...] = ()
    trailer: str = ""
    gbnf_head: str = ""
    gbnf_prefix: str = ""

    def head_for(self, name: str, index: int = 0) -> str:
        return self.head.replace("{name}", name).replace("{index}", str(index))

    def tail_for(self, index: int = 0) -> str:
        return self.tail.replace("{id}", f"{index + 1:09d}")


def _obj(head: str, tail: str, section: tuple[str, str] = ("", ""), **more: Any) -> Shape:
    return Shape(head, "json", tail, section=section, **more)


_DS_SECTION = ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>")
_NAMED = '{"name": "{name}", "arguments": '
SHAPES: dict[str, Shape] = {
    "hermes": _obj("<tool_call>\n" + _NAMED, "}\n</tool_call>"),
    "qwen3_coder_xml": Shape(
        "<tool_call>\n<function={name}>\n",
        "kv",
        "</function>\n</tool_call>",
        "<parameter={key}>\n",
        "\n</parameter>\n",
        alt_heads=("<function={name}>\n",),
    ),
    "seed_oss": Shape(
        "<seed:tool_call>\n<function={name}>\n",
        "kv",
        "</function>\n</seed:tool_call>",
        "<parameter={key}>",
        "</parameter>\n",
    ),
    "glm45": Shape(
        "<tool_call>{name}\n",
        "kv",
        "</tool_call>",
        "<arg_key>{key}</arg_key>\n<arg_value>",
        "</arg_value>\n",
    ),
    "deepseek_v3_r1": _obj(
        "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n",
        "\n```<｜tool▁call▁end｜>",
        section=_DS_SECTION,
    ),
    "deepseek_v31": _obj(
        "<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>", "<｜tool▁call▁end｜>", section=_DS_SECTION
    ),
    "deepseek_dsml": Shape(
        '<｜DSML｜invoke name="{name}">\n',
        "kv",
        "</｜DSML｜invoke>\n",
        '<｜DSML｜parameter name="{key}" string="{string}">',
        "</｜DSML｜parameter>\n",
        section=("<｜DSML｜function_calls>\n", "</｜DSML｜function_calls>"),
        alt_sections=(("<｜DSML｜tool_calls>\n", "</｜DSML｜tool_calls>"),),
    ),
    "kimi_k2": _obj(
        "<|tool_call_begin|>functions.{name}:{index}<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
        section=("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
    ),
    "kimi_k3": Shape(
        '<|open|>call tool="{name}" index="{index}"<|sep|>',
        "kv",
        "<|close|>call<|sep|>",
        '<|open|>argument key="{key}" type="{type}"<|sep|>',
        "<|close|>argument<|sep|>",
        section=("<|open|>tools<|sep|>", "<|close|>tools<|sep|>"),
        trailer="<|close|>message<|sep|>",
    ),
    "gpt_oss_harmony": _obj(
        "<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>",
        "<|call|>",
        join="<|end|>",
        # The recipient before or after the channel, analysis or commentary, with or
        # without a content type, after a reasoning message: all of it is gpt-oss.
        gbnf_head='( "<|start|>" ws "assistant" )? ( ws "to=functions." {name} ws "<|channel|>"'
        ' ws harmony-channel | ws "<|channel|>" ws harmony-channel ws "to=functions." {name} )'
        ' ( ws "<|constrain|>" )? ( ws "json" )? ws "<|message|>" ws',
        gbnf_prefix='( "<|channel|>" ws "analysis" ws "<|message|>" [^<]* "<|end|>" ws'
        ' "<|start|>" ws "assistant" )?',
    ),
    "mistral_v11": _obj(
        "[TOOL_CALLS]{name}[ARGS]", "", alt_heads=("[TOOL_CALLS]{name}[CALL_ID]{id}[ARGS]",)
    ),
    "mistral_json": _obj(_NAMED, ', "id": "{id}"}', section=("[TOOL_CALLS][", "]"), join=", "),
    "llama3_json": _obj('{"name": "{name}", "parameters": ', "}"),
    "pythonic": Shape("{name}(", "python", ")", "{key}=", "", ", ", ("[", "]"), ", "),
    "lfm2": Shape(
        "{name}(",
        "python",
        ")",
        "{key}=",
        "",
        ", ",
        ("<|tool_call_start|>[", "]<|tool_call_end|>"),
        ", ",
    ),
    "gemma4": Shape("<|tool_call>call:{name}{", "gemma", "}<tool_call|>", "{key}:", "", ","),
    "command_r7b": _obj(
        '{"tool_call_id": "{index}", "tool_name": "{name}", "parameters": ',
        "}",
        section=("<|START_ACTION|>[\n    ", "\n]<|END_ACTION|>"),
        join=",\n    ",
    ),
    "command_r_plus": _obj(
        '{"tool_name": "{name}", "parameters": ',
        "}",
        section=("Action:\n```json\n[", "]\n```"),
        join=", ",
    ),
    "minimax_m2": Shape(
        '<invoke name="{name}">\n',
        "kv",
        "</invoke>\n",
        '<parameter name="{key}">',
        "</parameter>\n",
        section=("<minimax:tool_call>\n", "</minimax:tool_call>"),
    ),
    "minimax_m3": Shape(
        ']<]minimax[>[<invoke name="{name}">',
        "kv",
        "]<]minimax[>[</invoke>\n",
        "]<]minimax[>[<{key}>",
        "]<]minimax[>[</{key}>",
        section=("]<]minimax[>[<tool_call>\n", "]<]minimax[>[</tool_call>"),
    ),
    "minimax_m1": _obj(_NAMED, "}", section=("<tool_calls>\n", "\n</tool_calls>"), join="\n"),
    "nemotron_toolcall": _obj(_NAMED, "}", section=("<TOOLCALL>[", "]</TOOLCALL>"), join=", "),
    "apriel": _obj(_NAMED, "}", section=("<tool_calls>[", "]</tool_calls>"), join=", "),
    "apertus": _obj(
        '{"{name}": ', "}", section=("<|tools_prefix|>[", "]<|tools_suffix|>"), join=", "
    ),
    "gigachat3": _obj(
        "<|message_sep|>\n\nfunction call<|role_sep|>\n" + _NAMED,
        "}",
        alt_heads=("function call<|role_sep|>\n" + _NAMED, "<|function_call|>" + _NAMED),
    ),
    "functionary_v31": _obj("<function={name}>", "</function>"),
    "functionary_v32": _obj("{name}\n", "", join=">>>"),
    "firefunction_v2": _obj(_NAMED, "}", section=(" functools[", "]"), join=", "),
    "minicpm5_xml": Shape(
        '<function name="{name}">', "kv", "</function>", '<param name="{key}">', "</param>"
    ),
    "granite": _obj(_NAMED, "}", section=("<|tool_call|>[", "]"), join=", "),
    "solar_open": _obj(
        "<|tool_call:begin|>call0000{index}<|tool_call:name|>{name}<|tool_call:args|>",
        "<|tool_call:end|>",
        section=("<|tool_calls|>", "<|calls|>"),
    ),
    "hy3_xml": Shape(
        "<tool_call:opensource>{name}<tool_sep:opensource>\n",
        "kv",
        "</tool_call:opensource>\n",
        "<arg_key:opensource>{key}</arg_key:opensource>\n<arg_value:opensource>",
        "</arg_value:opensource>\n",
        section=("<tool_calls:opensource>\n", "</tool_calls:opensource>"),
    ),
    "muse_atem": Shape(
        '<atem:invoke name="{name}">\n',
        "kv",
        "</atem:invoke>\n",
        '<atem:parameter name="{key}">',
        "</atem:parameter>\n",
        section=("<atem:function_calls>\n", "</atem:function_calls>"),
    ),
    "phi4_mini": _obj(_NAMED, "}", section=("<|tool_call|>[", "]<|/tool_call|>"), join=", "),
    "xlam": _obj(_NAMED, "}", section=("[", "]"), join=", "),
    "hunyuan": _obj(_NAMED, "}", section=("<tool_calls>[", "]</tool_calls>"), join=", "),
    "jamba": _obj(_NAMED, "}", section=("<tool_calls>[", "]</tool_calls>"), join=", "),
    "internlm2": _obj(
        '<|action_start|><|plugin|>\n{"name": "{name}", "parameters": ', "}<|action_end|>"
    ),
}

_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return _JSON_TYPES.get(type(value), "string")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def python_literal(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(python_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        items = (f"{_json(str(k))}: {python_literal(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    return _json(value)


def gemma_literal(value: Any) -> str:
    if isinstance(value, str):
        return f'<|"|>{value}<|"|>'
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{gemma_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(gemma_literal(v) for v in value) + "]"
    return _json(value)


def _pair(shape: Shape, key: str, value: Any) -> str:
    text = value if isinstance(value, str) else _json(value)
    opener = (
        shape.key_open.replace("{key}", key)
        .replace("{type}", json_type(value))
        .replace("{string}", "true" if isinstance(value, str) else "false")
    )
    return opener + text + shape.key_close.replace("{key}", key)


def write_call(tool_format: str, name: str, arguments: dict[str, Any]) -> str | None:
    """`name(arguments)` written as a model of `tool_format` writes it, or None where
    bosun knows no shape for the format."""
    return write_calls(tool_format, [(name, arguments)])


def write_calls(tool_format: str, calls: list[tuple[str, dict[str, Any]]]) -> str | None:
    """Several calls in one reply, in the format's own section where it has one."""
    shape = SHAPES.get(tool_format)
    if shape is None:
        return None
    body = shape.join.join(_one(shape, name, args, i) for i, (name, args) in enumerate(calls))
    return shape.section[0] + body + shape.section[1]


def _one(shape: Shape, name: str, arguments: dict[str, Any], index: int) -> str:
    if shape.args == "json":
        body = _json(arguments)
    elif shape.args == "kv":
        body = "".join(_pair(shape, k, v) for k, v in arguments.items())
    elif shape.args == "python":
        body = shape.sep.join(f"{k}={python_literal(v)}" for k, v in arguments.items())
    else:
        body = shape.sep.join(f"{k}:{gemma_literal(v)}" for k, v in arguments.items())
    return shape.head_for(name, index) + body + shape.tail_for(index)
