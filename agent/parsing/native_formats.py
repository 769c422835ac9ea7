"""Where each native format writes its calls: the regions the stream parser looks for.

One entry per FORMATS name read by `NativeStreamParser` (Hermes keeps its own parser,
with fences and salvage; harmony has its own). Openers and closers are the markup the
models really write, including the variants peers accept: Qwen3-Coder XML without its
`<tool_call>`, DeepSeek calls without the section tags, Kimi K2 calls without a section.
"""

from __future__ import annotations

from agent.parsing import decoders as d
from agent.parsing import decoders_text as t
from agent.parsing.native import Decoder, Item, NativeFormat, Prose, Region, Schemas


def _or_prose(decode: Decoder) -> Decoder:
    """At the start of a reply, text that does not read as calls is prose."""

    def read(body: str, closed: bool, schemas: Schemas) -> list[Item]:
        items = decode(body, closed, schemas)
        if any(isinstance(it, str) for it in items) or not items:
            return [Prose(body)]
        return items

    return read


def _functools(body: str, closed: bool, schemas: Schemas) -> list[Item]:
    return d.keyed_list(body.strip().removeprefix("functools"), closed, schemas)


def _python_tag(body: str, closed: bool, schemas: Schemas) -> list[Item]:
    """Functionary v3.1 / Llama 3.1: code after <|python_tag|> is a call to `python`."""
    code = body.removeprefix("<|python_tag|>")
    if code.lstrip().startswith("{"):
        return d.bare_json(body, closed, schemas)
    return [("python", {"code": code})]


_DS_CALL = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"
_DS_CALLS = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
_EOS_DS = ("<｜end▁of▁sentence｜>",)
_LLAMA_END = ("<|eom_id|>", "<|eot_id|>")


def _json_region(opener: str, closer: str | None, decode: Decoder = d.json_calls) -> Region:
    return Region(opener, closer, decode, json=closer is not None)


NATIVE: dict[str, NativeFormat] = {
    f.name: f
    for f in (
        NativeFormat(
            "qwen3_coder_xml",
            (
                Region("<tool_call>", "</tool_call>", t.qwen3_xml),
                Region("<function=", "</function>", t.qwen3_xml_calls, keep_opener=True),
            ),
            strip=("</tool_call>",),
        ),
        NativeFormat("seed_oss", (Region("<seed:tool_call>", "</seed:tool_call>", t.seed_calls),)),
        NativeFormat("glm45", (Region("<tool_call>", "</tool_call>", t.glm45),)),
        NativeFormat(
            "deepseek_v3_r1",
            (Region(*_DS_CALLS, d.deepseek_v3), Region(*_DS_CALL, d.deepseek_v3, keep_opener=True)),
            strip=_EOS_DS,
        ),
        NativeFormat(
            "deepseek_v31",
            (
                Region(*_DS_CALLS, d.deepseek_v31),
                Region(*_DS_CALL, d.deepseek_v31, keep_opener=True),
            ),
            strip=_EOS_DS,
        ),
        NativeFormat(
            "deepseek_dsml",
            (
                Region("<｜DSML｜function_calls>", "</｜DSML｜function_calls>", t.deepseek_dsml),
                Region("<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>", t.deepseek_dsml),  # V4
            ),
            strip=_EOS_DS,
        ),
        NativeFormat(
            "kimi_k2",
            (
                Region("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", d.kimi_k2),
                Region("<|tool_call_begin|>", "<|tool_call_end|>", d.kimi_k2, keep_opener=True),
            ),
            strip=("<|im_end|>",),
        ),
        NativeFormat(
            "kimi_k3",
            (Region("<|open|>tools<|sep|>", "<|close|>tools<|sep|>", t.kimi_k3),),
            strip=(
                "<|open|>response<|sep|>",
                "<|close|>response<|sep|>",
                "<|close|>message<|sep|>",
                "<|end_of_msg|>",
            ),
        ),
        NativeFormat(
            "mistral_v11", (Region("[TOOL_CALLS]", None, d.mistral_v11),), strip=("</s>",)
        ),
        NativeFormat(
            "mistral_json", (Region("[TOOL_CALLS]", None, d.keyed_list),), strip=("</s>",)
        ),
        NativeFormat(
            "llama3_json",
            (
                Region("<|python_tag|>", None, _python_tag, keep_opener=True),
                Region("{", None, d.bare_json, keep_opener=True, at_start=True),
            ),
            strip=_LLAMA_END,
        ),
        NativeFormat(
            "pythonic",
            (Region("[", None, _or_prose(t.pythonic), keep_opener=True, at_start=True),),
            strip=_LLAMA_END,
        ),
        NativeFormat("lfm2", (Region("<|tool_call_start|>", "<|tool_call_end|>", t.pythonic),)),
        NativeFormat(
            "gemma4",
            (Region("<|tool_call>", "<tool_call|>", t.gemma4),),
            strip=("<turn|>", "<|tool_response>"),
        ),
        NativeFormat(
            "command_r7b",
            (
                _json_region(
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
        ),
        NativeFormat(
            "command_r_plus",
            (Region("Action:", None, d.keyed_calls("tool_name", "parameters")),),
            strip=("<|END_OF_TURN_TOKEN|>",),
        ),
        NativeFormat(
            "minimax_m2", (Region("<minimax:tool_call>", "</minimax:tool_call>", t.minimax_m2),)
        ),
        NativeFormat(
            "minimax_m3",
            (Region("]<]minimax[>[<tool_call>", "]<]minimax[>[</tool_call>", t.minimax_m3),),
        ),
        NativeFormat("minimax_m1", (_json_region("<tool_calls>", "</tool_calls>", d.json_lines),)),
        NativeFormat("nemotron_toolcall", (_json_region("<TOOLCALL>", "</TOOLCALL>"),)),
        NativeFormat(
            "apriel",
            (_json_region("<tool_calls>", "</tool_calls>"),),
            strip=("[END FINAL RESPONSE]", "<|end|>"),
        ),
        NativeFormat(
            "apertus", (_json_region("<|tools_prefix|>", "<|tools_suffix|>", d.name_keyed),)
        ),
        NativeFormat(
            "gigachat3",
            (
                Region("function call<|role_sep|>", None, d.gigachat3),
                Region("<|function_call|>", None, d.gigachat3),
            ),
            strip=("<|message_sep|>",),
        ),
        NativeFormat(
            "functionary_v31",
            (
                Region("<function=", "</function>", d.functionary_v31, keep_opener=True),
                Region("<|python_tag|>", None, _python_tag, keep_opener=True),
            ),
            strip=_LLAMA_END,
        ),
        NativeFormat(
            "functionary_v32",
            (Region("", None, d.functionary_v32, at_start=True),),
            strip=_LLAMA_END,
        ),
        NativeFormat(
            "firefunction_v2",
            (
                Region(" functools[", None, _functools, keep_opener=True),
                Region("functools[", None, _functools, keep_opener=True, at_start=True),
            ),
            strip=_LLAMA_END,
        ),
        NativeFormat("granite", (Region("<|tool_call|>", None, d.json_calls),)),
        NativeFormat("phi4_mini", (_json_region("<|tool_call|>", "<|/tool_call|>"),)),
        NativeFormat(
            "xlam",
            (
                Region("[", None, d.bare_json, keep_opener=True, at_start=True),
                Region("{", None, d.bare_json, keep_opener=True, at_start=True),
                Region("```", None, d.bare_json, keep_opener=True, at_start=True),
            ),
        ),
        NativeFormat("hunyuan", (_json_region("<tool_calls>", "</tool_calls>"),)),
        NativeFormat("jamba", (_json_region("<tool_calls>", "</tool_calls>"),)),
        NativeFormat(
            "internlm2",
            (_json_region("<|action_start|><|plugin|>", "<|action_end|>"),),
            strip=("<|im_end|>",),
        ),
        NativeFormat(
            "solar_open",
            (
                Region("<|tool_calls|>", "<|calls|>", d.solar_open),
                Region("<|tool_call:begin|>", "<|tool_call:end|>", d.solar_open, keep_opener=True),
            ),
            strip=("<|content|>", "<|end|>", "<|begin|>assistant", "<|flush|>"),
        ),
        NativeFormat(
            "hy3_xml",
            (Region("<tool_calls:opensource>", "</tool_calls:opensource>", t.hy3_xml),),
            strip=("<｜hy_eos:opensource｜>",),
        ),
        NativeFormat(
            "muse_atem",
            (Region("<atem:function_calls>", "</atem:function_calls>", t.muse_atem),),
            strip=("<|message|>", "<|eot|>", "<|eom|>", "<|start|>assistant", "to=user"),
        ),
        NativeFormat(
            "minicpm5_xml",
            (Region('<function name="', "</function>", t.minicpm5_xml, keep_opener=True),),
            strip=("<|im_end|>",),
        ),
    )
}
