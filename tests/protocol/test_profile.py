"""ModelProfile as everything else uses it: resolved once, rendering exactly what the
driver is sent, parsing the model's raw output, naming every adaptation."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from agent.history import (
    AssistantToolUse,
    Reasoning,
    System,
    ToolCall,
    ToolResult,
    User,
)
from agent.parsing import FORMATS
from agent.protocol.gguf import write_gguf
from agent.protocol.profile import ModelProfile, profile_for
from tests.helpers import make_agent, tool_call
from tests.protocol.prompt_cases import CANONICAL, CORPUS, TOOLS


def _source(stem: str) -> str:
    return (CORPUS / f"{stem}.jinja").read_text(encoding="utf-8")


def test_profiles_are_frozen_and_resolved_once() -> None:
    first = profile_for("smollm2-135m")
    assert first is profile_for("smollm2-135m")
    assert isinstance(first, ModelProfile) and first.tool_format in FORMATS
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.tool_format = "mistral_v11"  # type: ignore[misc]


def test_the_bundled_models_keep_the_prompts_they_had() -> None:
    """SmolLM2's own template knows no tools: bosun's chatml speaks for it, byte for byte
    as before, so its benchmarks and its KV reuse stand."""
    smol = profile_for("smollm2-135m")
    assert smol.template_origin == "templates/chatml.jinja" and not smol.wire_remap
    assert smol.stop[0] == "<|im_end|>"
    text = smol.render(CANONICAL, TOOLS)
    assert text.startswith("<|im_start|>system\nYou are bosun, a coding agent.\n\n# Tools\n")
    assert "To call a tool, write exactly this" in text  # the canonical wording
    assert [a.what for a in smol.adaptations] == ["shipped template chatml"]


def test_render_is_exactly_what_the_driver_is_sent(workspace: Path) -> None:
    agent, driver, _ = make_agent([tool_call("read_file", path="a.txt"), "Done."], workspace)
    (workspace / "a.txt").write_text("hello", encoding="utf-8")
    agent.run("Read a.txt")
    profile = profile_for(driver.model)
    assert driver.prompts[0] == profile.render(agent.history[:2], agent.tools.specs())
    assert driver.prompts[1] == profile.render(agent.history[:4], agent.tools.specs())


def test_results_go_back_in_the_templates_own_tool_role() -> None:
    qwen = profile_for("Qwen2.5-7B-Instruct", chat_template=_source("Qwen-Qwen2.5-7B-Instruct"))
    text = qwen.render(CANONICAL, TOOLS)
    assert "<|im_start|>user\n<tool_response>\nalpha beta gamma\n</tool_response>" in text
    assert "<tool_result>" not in text and qwen.adaptations == ()


def test_qwen3_reasoning_comes_back_so_the_cache_covers_the_whole_reply() -> None:
    """What the model generated in turn 1 (reasoning and call) is, byte for byte, the
    continuation of turn 1's prompt in turn 2's prompt: the KV cache covers all of it."""
    qwen3 = profile_for("Qwen3-8B", chat_template=_source("Qwen-Qwen3-0.6B"))
    call = ToolCall("call_1", "read_file", {"path": "notes.txt"})
    turn1 = [System("You are bosun."), User("What is in notes.txt?")]
    prompt1 = qwen3.render(turn1, TOOLS)
    completion = (
        "<think>\nThe user wants notes.txt, so I read it.\n</think>\n\n<tool_call>\n"
        + json.dumps({"name": call.name, "arguments": call.arguments})
        + "\n</tool_call>"
    )
    parser = qwen3.parser(TOOLS, prompt=prompt1)
    events = parser.feed(completion) + parser.finish()
    reasoning = "".join(e.text for e in events if e.kind == "reasoning").strip()
    assert [e.call.name for e in events if e.call is not None] == ["read_file"]
    turn2 = [*turn1, Reasoning(reasoning), AssistantToolUse(call), ToolResult("call_1", "A")]
    prompt2 = qwen3.render(turn2, TOOLS)
    assert prompt2.startswith(prompt1 + completion)


def test_a_stop_token_fed_or_not_gives_the_same_events() -> None:
    smol = profile_for("smollm2-135m")
    text = "Let me look.\n" + tool_call("read_file", path="a")

    def events(chunks: list[str]) -> list[tuple[str, str]]:
        parser = smol.parser(TOOLS)
        out = [e for c in chunks for e in parser.feed(c)] + parser.finish()
        return [(e.kind, e.text or (e.call.name if e.call else "")) for e in out]

    plain = events([text])
    assert plain == events([text, "<|im_end|>"]) == events([text + "<|im_e", "nd|>"])
    assert ("tool_call", "read_file") in plain


def test_harmony_reads_its_call_token_fed_or_not() -> None:
    oss = profile_for("gpt-oss-20b")
    call = '<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{"path": "a"}'

    def calls(chunks: list[str]) -> list[str]:
        parser = oss.parser(TOOLS)
        out = [e for c in chunks for e in parser.feed(c)] + parser.finish()
        return [e.call.name for e in out if e.call is not None]

    assert calls([call, "<|call|>"]) == calls([call + "<|call|>"]) == ["read_file"]
    assert calls([call]) == ["read_file"]  # the driver stopped on it and swallowed it


def _gguf(tmp_path: Path, template: str) -> Path:
    path = tmp_path / "Mystery-7B-Q4_K_M.gguf"
    write_gguf(
        path,
        {
            "general.architecture": "mystery",
            "general.name": "Mystery 7B",
            "tokenizer.ggml.tokens": ["<unk>", "<s>", "</s>"],
            "tokenizer.ggml.bos_token_id": 1,
            "tokenizer.ggml.eos_token_id": 2,
            "tokenizer.chat_template": template,
        },
    )
    return path


def test_bosun_models_prints_the_resolved_profile(tmp_path: Path) -> None:
    from tests.cli.test_cli import bosun

    model = _gguf(tmp_path, _source("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B"))
    proc = bosun("models", str(model))
    assert proc.returncode == 0, proc.stderr
    fields = dict(line.split(None, 1) for line in proc.stdout.splitlines() if line.strip())
    assert fields["template"] == f"embedded in {model.name}"
    assert fields["tool_format"] == "deepseek_v3_r1"
    assert fields["reasoning"] == "<think> … </think>"
    assert fields["wire_remap"] == "no"
    assert fields["adaptations"].startswith("tool block: the template does not print `tools`")
    as_json = json.loads(bosun("models", str(model), "--json").stdout)
    assert as_json["tool_format"] == "deepseek_v3_r1" and as_json["path"] == str(model)


def test_a_template_that_does_not_compile_is_replaced_and_says_why(tmp_path: Path) -> None:
    profile = profile_for(str(_gguf(tmp_path, "{% for m in messages %}{{ m.content }")))
    assert profile.template_origin == "templates/chatml.jinja"
    (adaptation,) = profile.adaptations
    assert "does not compile" in adaptation.why
    assert profile.render([System("S"), User("hi")]).endswith("<|im_start|>assistant\n")
