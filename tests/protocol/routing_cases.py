"""What every corpus template routes to: its tool format, reasoning markers, and whether
its generation prompt leaves the reply inside a reasoning block.

The expectations were written by reading each template (and the model outputs llama.cpp
feeds its parsers for the same models), independently of bosun's detection; where the
template says nothing, a note says where the answer comes from.
"""

from __future__ import annotations

THINK = ("<think>", "</think>")
APRIEL = ("Here are my reasoning steps:", "[BEGIN FINAL RESPONSE]")

# stem -> (tool format, reasoning markers, generation prompt opens reasoning)
ROUTES: dict[str, tuple[str, tuple[str, str] | None, bool]] = {
    "Apertus-8B-Instruct": ("apertus", ("<|inner_prefix|>", "<|inner_suffix|>"), False),
    "Apriel-1.6-15b-Thinker-fixed": ("apriel", APRIEL, True),
    "Bielik-11B-v3.0-Instruct": ("hermes", THINK, False),
    "ByteDance-Seed-OSS": ("seed_oss", ("<seed:think>", "</seed:think>"), False),
    "Cohere2MoE": ("command_r7b", ("<|START_THINKING|>", "<|END_THINKING|>"), True),
    "CohereForAI-c4ai-command-r-plus-tool_use": ("command_r_plus", None, False),
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use": (
        "command_r7b",
        ("<|START_THINKING|>", "<|END_THINKING|>"),
        False,
    ),
    "GLM-4.6": ("glm45", THINK, False),
    "GLM-4.7-Flash": ("glm45", THINK, True),
    "GigaChat3-10B-A1.8B": ("gigachat3", None, False),
    "GigaChat3.1-10B-A1.8B": ("gigachat3", None, False),
    "HuggingFaceTB-SmolLM3-3B": ("hermes", THINK, False),
    "Kimi-K2-Instruct": ("kimi_k2", None, False),
    "Kimi-K2-Thinking": ("kimi_k2", THINK, False),
    "Kimi-K3": ("kimi_k3", ("<|open|>think<|sep|>", "<|close|>think<|sep|>"), True),
    "LFM2-8B-A1B": ("lfm2", None, False),
    "LFM2.5-8B-A1B": ("lfm2", THINK, False),
    "LFM2.5-Instruct": ("lfm2", THINK, False),
    "MiMo-VL": ("hermes", THINK, False),
    "MiniMax-M1": ("minimax_m1", THINK, False),
    "MiniMax-M2": ("minimax_m2", THINK, True),
    "MiniMax-M3": ("minimax_m3", ("<mm:think>", "</mm:think>"), False),
    "Mistral-Small-3.2-24B-Instruct-2506": ("mistral_v11", None, False),
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ("qwen3_coder_xml", THINK, True),
    "NVIDIA-Nemotron-Nano-v2": ("nemotron_toolcall", THINK, True),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": ("hermes", None, False),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": ("hermes", None, False),
    "Qwen-QwQ-32B": ("hermes", THINK, False),
    "Qwen-Qwen2.5-7B-Instruct": ("hermes", None, False),
    "Qwen-Qwen3-0.6B": ("hermes", THINK, False),
    "Qwen3-Coder": ("qwen3_coder_xml", None, False),
    "Qwen3.5-4B": ("qwen3_coder_xml", THINK, True),
    "Reka-Edge": ("hermes", THINK, False),
    "Spark2.5": ("glm45", THINK, True),
    "StepFun3.5-Flash": ("qwen3_coder_xml", THINK, True),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": ("deepseek_v3_r1", THINK, True),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": ("deepseek_v3_r1", THINK, False),
    "deepseek-ai-DeepSeek-V3.1": ("deepseek_v31", THINK, False),
    "deepseek-ai-DeepSeek-V3.2": ("deepseek_dsml", THINK, False),
    "deepseek-ai-DeepSeek-V4-Flash-0731": ("deepseek_dsml", THINK, False),
    "deepseek-ai-DeepSeek-V4": ("deepseek_dsml", THINK, False),
    "fireworks-ai-llama-3-firefunction-v2": ("firefunction_v2", None, False),
    "google-gemma-2-2b-it": ("hermes", None, False),
    "google-gemma-4-31B-it-interleaved": ("gemma4", ("<|channel>thought", "<channel|>"), False),
    "google-gemma-4-31B-it": ("gemma4", ("<|channel>thought", "<channel|>"), False),
    "ibm-granite-granite-3.3-2B-Instruct": ("granite", THINK, False),
    "ibm-granite-granite-4.0": ("hermes", None, False),
    "ibm-granite-granite-4.1": ("hermes", None, False),
    "inclusionai-ling-3.0-flash": ("glm45", THINK, True),
    "llama-cpp-deepseek-r1": ("deepseek_v3_r1", THINK, True),
    "llama-cpp-rwkv-world": ("hermes", THINK, False),
    "meetkai-functionary-medium-v3.1": ("functionary_v31", None, False),
    "meetkai-functionary-medium-v3.2": ("functionary_v32", None, False),
    "meta-llama-Llama-3.1-8B-Instruct": ("llama3_json", None, False),
    "meta-llama-Llama-3.2-3B-Instruct": ("llama3_json", None, False),
    "meta-llama-Llama-3.3-70B-Instruct": ("llama3_json", None, False),
    "microsoft-Phi-3.5-mini-instruct": ("hermes", None, False),
    "mistralai-Ministral-3-14B-Reasoning-2512": ("mistral_v11", ("[THINK]", "[/THINK]"), False),
    "mistralai-Mistral-Nemo-Instruct-2407": ("mistral_json", None, False),
    "moonshotai-Kimi-K2": ("kimi_k2", None, False),
    "muse-glimmer": ("muse_atem", None, False),
    "openai-gpt-oss-120b": ("gpt_oss_harmony", None, False),
    "openbmb-MiniCPM5-1B": ("minicpm5_xml", THINK, False),
    "poolside-Laguna-S-2.1": ("glm45", THINK, True),
    "poolside-Laguna-XS-2.1": ("glm45", THINK, False),
    "poolside-Laguna-XS.2": ("glm45", THINK, False),
    "tencent-Hy3": ("hy3_xml", ("<think:opensource>", "</think:opensource>"), False),
    "unsloth-Apriel-1.5": ("apriel", APRIEL, False),
    "unsloth-mistral-Devstral-Small-2507": ("mistral_v11", None, False),
    "upstage-Solar-Open-100B": ("solar_open", ("<|think|>", "<|end|>"), False),
}

# Where the template itself says nothing, the answer comes from elsewhere.
NOTES = {
    "HuggingFaceTB-SmolLM3-3B": "its template prints no tools or calls: bosun's chatml and Hermes",
    "google-gemma-2-2b-it": "no tool support: bosun's gemma template and Hermes",
    "llama-cpp-rwkv-world": "no tool support: bosun's fallback blocks and Hermes",
    "microsoft-Phi-3.5-mini-instruct": "no tool support: bosun's fallback blocks and Hermes",
    "LFM2-8B-A1B": "never prints calls: the lfm2 rule (name, architecture lfm2moe)",
    "LFM2.5-Instruct": "never prints calls: the lfm2 rule; </think> is stripped from past turns",
    "fireworks-ai-llama-3-firefunction-v2": "the template cannot render: the firefunction rule",
    "MiMo-VL": "reasons in <think> though its template never says: the mimo rule",
    "MiniMax-M1": "reasons in <think> though its template never says: the minimax-m1 rule",
    "unsloth-Apriel-1.5": "its reasoning sentence is not in the template: the apriel rule",
    "ibm-granite-granite-3.3-2B-Instruct": "never prints calls; its system prompt names the tag",
    "muse-glimmer": "reasoning is a harmony-like message to=self: the muse_atem format carries it",
    "openai-gpt-oss-120b": "reasoning is harmony's analysis channel: the format carries it",
}
