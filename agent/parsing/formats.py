"""The tool-call formats bosun knows by name, and how to recognise each from its markup.

The names are the ones llama.cpp's parser tests use for the same formats (the shared
corpus of model outputs is keyed by them), so a case, a profile and a parser agree on
what "glm45" means. The model profile (`agent.profile`) picks a format by rendering a
sample call through the model's own template and matching the markup it prints against
`SIGNATURES`, most specific first.
"""

from __future__ import annotations

FORMATS: tuple[str, ...] = (
    "hermes",  # <tool_call>{"name": …, "arguments": …}</tool_call>
    "qwen3_coder_xml",  # <tool_call><function=N><parameter=K>V</parameter></function>
    "seed_oss",  # <seed:tool_call><function=N><parameter=K>V</parameter>…
    "glm45",  # <tool_call>N<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>
    "deepseek_v3_r1",  # <｜tool▁call▁begin｜>function<｜tool▁sep｜>N ```json …```
    "deepseek_v31",  # <｜tool▁call▁begin｜>N<｜tool▁sep｜>{…}<｜tool▁call▁end｜>
    "deepseek_dsml",  # <｜DSML｜function_calls><｜DSML｜invoke name="N">…
    "kimi_k2",  # <|tool_call_begin|>functions.N:0<|tool_call_argument_begin|>{…}
    "kimi_k3",
    "gpt_oss_harmony",  # <|channel|>commentary to=functions.N … <|call|>
    "mistral_v11",  # [TOOL_CALLS]N[ARGS]{…}
    "mistral_json",  # [TOOL_CALLS][{"name": …, "arguments": …, "id": …}]
    "llama3_json",  # {"name": …, "parameters": …} bare, or after <|python_tag|>
    "pythonic",  # [f(a=1), g(b="x")]
    "lfm2",  # <|tool_call_start|>[f(a=1)]<|tool_call_end|>
    "gemma4",  # <|tool_call>call:N{k:<|"|>v<|"|>}<tool_call|>
    "command_r7b",  # <|START_ACTION|>[{"tool_call_id", "tool_name", "parameters"}]
    "command_r_plus",  # Action: ```json [{"tool_name": …, "parameters": …}] ```
    "minimax_m2",  # <minimax:tool_call><invoke name="N"><parameter name="K">V…
    "minimax_m3",
    "minimax_m1",  # <tool_calls>\n{"name": …, "arguments": …}\n</tool_calls>
    "nemotron_toolcall",  # <TOOLCALL>[{"name": …, "arguments": …}]</TOOLCALL>
    "apriel",  # <tool_calls>[{"name": …, "arguments": …}]</tool_calls>
    "apertus",  # <|tools_prefix|>[{"N": {…}}]<|tools_suffix|>
    "gigachat3",
    "functionary_v31",  # <function=N>{…}</function>
    "functionary_v32",  # >>>N\n{…}
    "firefunction_v2",  #  functools[{"name": …, "arguments": …}]
    "minicpm5_xml",
    "granite",  # <|tool_call|>[{"name": …, "arguments": …}]
    "solar_open",  # <|tool_call:begin|>ID<|tool_call:name|>N<|tool_call:args|>{…}
    "hy3_xml",  # <tool_call:opensource>N<tool_sep:opensource><arg_key:opensource>K…
    "muse_atem",  # <atem:function_calls><atem:invoke name="N"><atem:parameter name="K">V
    "phi4_mini",  # <|tool_call|>[{"name": …, "arguments": …}]<|/tool_call|>
    "xlam",  # a bare JSON list of {"name": …, "arguments": …}
    "hunyuan",  # <tool_calls>[{"name": …, "arguments": …}]</tool_calls>
    "jamba",  # <tool_calls>[{"name": …, "arguments": …}]</tool_calls>
    "internlm2",  # <|action_start|><|plugin|>{"name": …, "parameters": …}<|action_end|>
)

# Older or peer names for the same formats.
ALIASES: dict[str, str] = {
    "harmony": "gpt_oss_harmony",
    "qwen3_xml": "qwen3_coder_xml",
    "qwen3_coder": "qwen3_coder_xml",
    "glm": "glm45",
    "mistral": "mistral_v11",
    "deepseek_r1": "deepseek_v3_r1",
    "deepseek_v3": "deepseek_v3_r1",
    "llama3": "llama3_json",
}

# Formats whose calls are wrapped in <tool_call>…</tool_call>: the only ones the tag
# remap (agent.wire) can apply to.
ENVELOPED = frozenset({"hermes", "qwen3_coder_xml"})

# Formats whose end-of-message tokens the parser itself reads (a harmony call exists
# only once "<|call|>" closes it), with the stop strings that end such a reply.
FORMAT_STOPS: dict[str, tuple[str, ...]] = {
    "gpt_oss_harmony": ("<|call|>", "<|return|>"),
}

# What the markup of one call contains, most specific first. Every marker listed for a
# format must occur.
SIGNATURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("muse_atem", ("<atem:invoke",)),
    ("gpt_oss_harmony", ("<|channel|>",)),
    ("gpt_oss_harmony", ("to=functions.",)),
    ("seed_oss", ("<seed:tool_call>",)),
    ("minimax_m2", ("<minimax:tool_call>",)),
    ("deepseek_dsml", ("｜DSML｜",)),
    ("deepseek_v3_r1", ("<｜tool▁call▁begin｜>function<｜tool▁sep｜>",)),
    ("deepseek_v31", ("<｜tool▁call▁begin｜>",)),
    ("kimi_k2", ("<|tool_call_begin|>",)),
    ("gemma4", ("<|tool_call>",)),
    ("mistral_v11", ("[TOOL_CALLS]", "[ARGS]")),
    ("mistral_json", ("[TOOL_CALLS]",)),
    ("command_r7b", ("<|START_ACTION|>",)),
    ("nemotron_toolcall", ("<TOOLCALL>",)),
    ("apertus", ("<|tools_prefix|>",)),
    ("lfm2", ("<|tool_call_start|>",)),
    ("solar_open", ("<|tool_call:begin|>",)),
    ("hy3_xml", ("<tool_call:opensource>",)),
    ("kimi_k3", ("<|open|>call tool=",)),
    ("minimax_m3", ("]<]minimax[>[",)),
    ("gigachat3", ("function call<|role_sep|>",)),
    ("gigachat3", ("<|function_call|>",)),
    ("minicpm5_xml", ('<function name="',)),
    ("glm45", ("<arg_key>",)),
    ("qwen3_coder_xml", ("<tool_call>", "<function=", "<parameter=")),
    ("functionary_v31", ("<function=",)),
    ("functionary_v32", (">>>",)),
    ("firefunction_v2", ("functools[",)),
    ("granite", ("<|tool_call|>",)),
    ("apriel", ("<tool_calls>[",)),
    ("minimax_m1", ("<tool_calls>",)),
    ("hermes", ("<tool_call>",)),
    ("command_r_plus", ("Action:", "tool_name")),
    ("llama3_json", ('"parameters"',)),
)

# Reasoning markers models use, (open, close). Order only matters for a template that
# names several; the first listed wins.
REASONING_PAIRS: tuple[tuple[str, str], ...] = (
    ("<seed:think>", "</seed:think>"),
    ("<think:opensource>", "</think:opensource>"),  # Hunyuan 3
    ("<mm:think>", "</mm:think>"),  # MiniMax-M3
    ("<think>", "</think>"),
    ("[THINK]", "[/THINK]"),  # Magistral, Ministral 3
    ("◁think▷", "◁/think▷"),  # Kimi VL
    ("<|START_THINKING|>", "<|END_THINKING|>"),  # Command R7B
    ("<|channel>thought", "<channel|>"),  # Gemma 4
    ("<|inner_prefix|>", "<|inner_suffix|>"),  # Apertus
    ("<|open|>think<|sep|>", "<|close|>think<|sep|>"),  # Kimi K3
    ("Here are my reasoning steps:", "[BEGIN FINAL RESPONSE]"),  # Apriel
    ("<|think|>", "<|end|>"),  # Solar Open
)


THINK_PAIR = ("<think>", "</think>")
# The reasoning markers a format's models use where no template says otherwise (a parse
# without a profile); the profile's own markers win.
FORMAT_REASONING: dict[str, tuple[str, str] | None] = {
    "seed_oss": ("<seed:think>", "</seed:think>"),
    "hy3_xml": ("<think:opensource>", "</think:opensource>"),
    "minimax_m3": ("<mm:think>", "</mm:think>"),
    "mistral_v11": ("[THINK]", "[/THINK]"),
    "command_r7b": ("<|START_THINKING|>", "<|END_THINKING|>"),
    "gemma4": ("<|channel>thought", "<channel|>"),
    "apertus": ("<|inner_prefix|>", "<|inner_suffix|>"),
    "kimi_k3": ("<|open|>think<|sep|>", "<|close|>think<|sep|>"),
    "apriel": ("Here are my reasoning steps:", "[BEGIN FINAL RESPONSE]"),
    "solar_open": ("<|think|>", "<|end|>"),
    "gpt_oss_harmony": None,
    "mistral_json": None,
    "functionary_v31": None,
    "functionary_v32": None,
    "firefunction_v2": None,
    "llama3_json": None,
    "pythonic": None,
}


def canonical_format(name: str) -> str:
    """The FORMATS name for `name` or one of its aliases; ValueError if unknown."""
    if name in FORMATS:
        return name
    if name in ALIASES:
        return ALIASES[name]
    raise ValueError(f"unknown tool-call format {name!r}; known: {', '.join(FORMATS)}")


def format_of_markup(markup: str) -> str | None:
    """The format whose signature `markup` (one rendered call) carries, if any."""
    for name, markers in SIGNATURES:
        if all(m in markup for m in markers):
            return name
    return None
