"""The format records, first part: Hermes to MiniMax-M1, in `FORMATS` order.

Each record is one format's whole vocabulary (see `agent.parsing.record`). The catalogue
is cut in parts only to keep each file readable; `catalog_2` and `catalog_3` go on where
this one stops, and `agent.parsing.formats` joins them in this order. Region openers and
closers are the markup models really write, including the variants peers accept:
Qwen3-Coder XML without its `<tool_call>`, DeepSeek calls without the section tags, Kimi
K2 calls without a section. Harmony's record lives beside its own parser (`agent.parsing.harmony`).
"""

from __future__ import annotations

from agent.markup import TOOL_CALL_CLOSE, TOOL_CALL_OPEN
from agent.parsing import decoders as d
from agent.parsing import decoders_python as p
from agent.parsing import decoders_text as t
from agent.parsing.harmony_format import HARMONY
from agent.parsing.native import Region
from agent.parsing.record import (
    IM_END,
    LLAMA3_END,
    LLAMA4_END,
    NAMED,
    SAMPLE_NAME,
    Format,
    Shape,
    json_region,
    json_shape,
)

_DS_CALL = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"
_DS_CALLS = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
_DS_SEP = "<｜tool▁sep｜>"
_DS_EOS = ("<｜end▁of▁sentence｜>",)
_KIMI_CALL = "<|tool_call_begin|>", "<|tool_call_end|>"
_MISTRAL = "[TOOL_CALLS]"
_MM3 = "]<]minimax[>["  # MiniMax-M3 prefixes every tag with it
_LFM2 = "<|tool_call_start|>", "<|tool_call_end|>"
_PY_START = "<|python_start|>", "<|python_end|>"  # Llama 4

RECORDS: tuple[Format, ...] = (
    Format(
        "hermes",
        signature=((TOOL_CALL_OPEN,),),
        shape=json_shape(f"{TOOL_CALL_OPEN}\n{NAMED}", f"}}\n{TOOL_CALL_CLOSE}"),
        enveloped=True,
    ),
    Format(
        "qwen3_coder_xml",
        aliases=("qwen3_xml", "qwen3_coder"),
        signature=((TOOL_CALL_OPEN, "<function=", "<parameter="),),
        regions=(
            Region(TOOL_CALL_OPEN, TOOL_CALL_CLOSE, t.qwen3_xml),
            Region("<function=", "</function>", t.qwen3_xml_calls, keep_opener=True),
        ),
        strip=(TOOL_CALL_CLOSE,),
        shape=Shape(
            f"{TOOL_CALL_OPEN}\n<function={{name}}>\n",
            "kv",
            f"</function>\n{TOOL_CALL_CLOSE}",
            "<parameter={key}>\n",
            "\n</parameter>\n",
            alt_heads=("<function={name}>\n",),
        ),
        enveloped=True,
    ),
    Format(
        "seed_oss",
        signature=(("<seed:tool_call>",),),
        reasoning=("<seed:think>", "</seed:think>"),
        regions=(Region("<seed:tool_call>", "</seed:tool_call>", t.seed_calls),),
        shape=Shape(
            "<seed:tool_call>\n<function={name}>\n",
            "kv",
            "</function>\n</seed:tool_call>",
            "<parameter={key}>",
            "</parameter>\n",
        ),
    ),
    Format(
        "glm45",
        aliases=("glm",),
        signature=(("<arg_key>",),),
        regions=(Region(TOOL_CALL_OPEN, TOOL_CALL_CLOSE, t.glm45),),
        shape=Shape(
            f"{TOOL_CALL_OPEN}{{name}}\n",
            "kv",
            TOOL_CALL_CLOSE,
            "<arg_key>{key}</arg_key>\n<arg_value>",
            "</arg_value>\n",
        ),
    ),
    Format(
        "deepseek_v3_r1",
        aliases=("deepseek_r1", "deepseek_v3"),
        signature=((f"{_DS_CALL[0]}function{_DS_SEP}",),),
        regions=(
            Region(*_DS_CALLS, d.deepseek_v3),
            Region(*_DS_CALL, d.deepseek_v3, keep_opener=True),
        ),
        strip=_DS_EOS,
        shape=json_shape(
            f"{_DS_CALL[0]}function{_DS_SEP}{{name}}\n```json\n",
            f"\n```{_DS_CALL[1]}",
            section=_DS_CALLS,
        ),
    ),
    Format(
        "deepseek_v31",
        signature=((_DS_CALL[0],),),
        regions=(
            Region(*_DS_CALLS, d.deepseek_v31),
            Region(*_DS_CALL, d.deepseek_v31, keep_opener=True),
        ),
        strip=_DS_EOS,
        shape=json_shape(f"{_DS_CALL[0]}{{name}}{_DS_SEP}", _DS_CALL[1], section=_DS_CALLS),
    ),
    Format(
        "deepseek_dsml",
        signature=(("｜DSML｜",),),
        regions=(
            Region("<｜DSML｜function_calls>", "</｜DSML｜function_calls>", t.deepseek_dsml),
            Region("<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>", t.deepseek_dsml),  # V4
        ),
        strip=_DS_EOS,
        shape=Shape(
            '<｜DSML｜invoke name="{name}">\n',
            "kv",
            "</｜DSML｜invoke>\n",
            '<｜DSML｜parameter name="{key}" string="{string}">',
            "</｜DSML｜parameter>\n",
            section=("<｜DSML｜function_calls>\n", "</｜DSML｜function_calls>"),
            alt_sections=(("<｜DSML｜tool_calls>\n", "</｜DSML｜tool_calls>"),),
        ),
    ),
    Format(
        "kimi_k2",
        signature=((_KIMI_CALL[0],),),
        regions=(
            Region("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", d.kimi_k2),
            Region(*_KIMI_CALL, d.kimi_k2, keep_opener=True),
        ),
        strip=(IM_END,),
        shape=json_shape(
            f"{_KIMI_CALL[0]}functions.{{name}}:{{index}}<|tool_call_argument_begin|>",
            _KIMI_CALL[1],
            section=("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
        ),
    ),
    Format(
        "kimi_k3",
        signature=(("<|open|>call tool=",),),
        reasoning=("<|open|>think<|sep|>", "<|close|>think<|sep|>"),
        regions=(Region("<|open|>tools<|sep|>", "<|close|>tools<|sep|>", t.kimi_k3),),
        strip=(
            "<|open|>response<|sep|>",
            "<|close|>response<|sep|>",
            "<|close|>message<|sep|>",
            "<|end_of_msg|>",
        ),
        shape=Shape(
            '<|open|>call tool="{name}" index="{index}"<|sep|>',
            "kv",
            "<|close|>call<|sep|>",
            '<|open|>argument key="{key}" type="{type}"<|sep|>',
            "<|close|>argument<|sep|>",
            section=("<|open|>tools<|sep|>", "<|close|>tools<|sep|>"),
            trailer="<|close|>message<|sep|>",
        ),
    ),
    HARMONY,
    Format(
        "mistral_v11",
        aliases=("mistral",),
        signature=((_MISTRAL, "[ARGS]"),),
        reasoning=("[THINK]", "[/THINK]"),
        regions=(Region(_MISTRAL, None, d.mistral_v11),),
        strip=("</s>",),
        shape=json_shape(
            f"{_MISTRAL}{{name}}[ARGS]",
            "",
            alt_heads=(f"{_MISTRAL}{{name}}[CALL_ID]{{id}}[ARGS]",),
        ),
    ),
    Format(
        "mistral_json",
        signature=((_MISTRAL,),),
        reasoning=None,
        regions=(Region(_MISTRAL, None, d.keyed_list),),
        strip=("</s>",),
        shape=json_shape(NAMED, ', "id": "{id}"}', section=(f"{_MISTRAL}[", "]"), join=", "),
    ),
    Format(
        "llama3_json",
        aliases=("llama3",),
        signature=(('"parameters"',),),
        reasoning=None,
        regions=(
            Region(d.PYTHON_TAG, None, d.python_tag, keep_opener=True),
            Region("{", None, d.json_reply, keep_opener=True, at_start=True),
            # Llama 3.x also writes its call after a sentence of prose.
            Region("{", None, d.json_reply, keep_opener=True, follow=d.json_head),
        ),
        strip=LLAMA3_END,
        shape=json_shape('{"name": "{name}", "parameters": ', "}"),
    ),
    Format(
        # Llama 3.2 and Llama 4 under vLLM's pythonic templates: `[f(a='x'), g(b=1)]`,
        # Llama 4 also inside <|python_start|>…<|python_end|>; prose may come before.
        "pythonic",
        aliases=("llama4_pythonic", "llama3_pythonic"),
        signature=((f"[{SAMPLE_NAME}(",),),
        reasoning=None,
        regions=(
            Region(_PY_START[0], _PY_START[1], p.pythonic),
            Region("[", None, p.pythonic_reply, keep_opener=True, follow=p.call_head),
        ),
        strip=(*LLAMA3_END, *LLAMA4_END, _PY_START[1]),
        shape=Shape(
            "{name}(",
            "python",
            ")",
            "{key}=",
            "",
            ", ",
            ("[", "]"),
            ", ",
            alt_sections=((f"{_PY_START[0]}[", f"]{_PY_START[1]}"),),
        ),
    ),
    Format(
        "lfm2",
        signature=((_LFM2[0],),),
        regions=(Region(*_LFM2, p.pythonic),),
        shape=Shape(
            "{name}(",
            "python",
            ")",
            "{key}=",
            "",
            ", ",
            (f"{_LFM2[0]}[", f"]{_LFM2[1]}"),
            ", ",
        ),
    ),
    Format(
        "gemma4",
        signature=(("<|tool_call>",),),
        reasoning=("<|channel>thought", "<channel|>"),
        regions=(Region("<|tool_call>", "<tool_call|>", t.gemma4),),
        strip=("<turn|>", "<|tool_response>"),
        shape=Shape("<|tool_call>call:{name}{", "gemma", "}<tool_call|>", "{key}:", "", ","),
    ),
    Format(
        "command_r7b",
        signature=(("<|START_ACTION|>",),),
        reasoning=("<|START_THINKING|>", "<|END_THINKING|>"),
        regions=(
            json_region(
                "<|START_ACTION|>", "<|END_ACTION|>", d.keyed_calls("tool_name", "parameters")
            ),
        ),
        strip=(
            "<|START_RESPONSE|>",
            "<|END_RESPONSE|>",
            "<|START_TEXT|>",
            "<|END_TEXT|>",
            "<|END_OF_TURN_TOKEN|>",
        ),
        shape=json_shape(
            '{"tool_call_id": "{index}", "tool_name": "{name}", "parameters": ',
            "}",
            section=("<|START_ACTION|>[\n    ", "\n]<|END_ACTION|>"),
            join=",\n    ",
        ),
    ),
    Format(
        "command_r_plus",
        signature=(("Action:", "tool_name"),),
        regions=(Region("Action:", None, d.keyed_calls("tool_name", "parameters")),),
        strip=("<|END_OF_TURN_TOKEN|>",),
        shape=json_shape(
            '{"tool_name": "{name}", "parameters": ',
            "}",
            section=("Action:\n```json\n[", "]\n```"),
            join=", ",
        ),
    ),
    Format(
        "minimax_m2",
        signature=(("<minimax:tool_call>",),),
        regions=(Region("<minimax:tool_call>", "</minimax:tool_call>", t.minimax_m2),),
        shape=Shape(
            '<invoke name="{name}">\n',
            "kv",
            "</invoke>\n",
            '<parameter name="{key}">',
            "</parameter>\n",
            section=("<minimax:tool_call>\n", "</minimax:tool_call>"),
        ),
    ),
    Format(
        "minimax_m3",
        signature=((_MM3,),),
        reasoning=("<mm:think>", "</mm:think>"),
        regions=(Region(f"{_MM3}<tool_call>", f"{_MM3}</tool_call>", t.minimax_m3),),
        shape=Shape(
            f'{_MM3}<invoke name="{{name}}">',
            "kv",
            f"{_MM3}</invoke>\n",
            f"{_MM3}<{{key}}>",
            f"{_MM3}</{{key}}>",
            section=(f"{_MM3}<tool_call>\n", f"{_MM3}</tool_call>"),
        ),
    ),
    Format(
        "minimax_m1",
        signature=(("<tool_calls>",),),
        regions=(json_region("<tool_calls>", "</tool_calls>", d.json_lines),),
        shape=json_shape(NAMED, "}", section=("<tool_calls>\n", "\n</tool_calls>"), join="\n"),
    ),
)
