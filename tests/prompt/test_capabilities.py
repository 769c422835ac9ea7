"""drivers/capabilities.toml: first-match rules, and an audit that rejects contradictions."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.capabilities import CapabilitiesError, bundled_models, load_table, match, model_info
from agent.gguf import write_gguf

RULE = '[[rule]]\nid = "{id}"\nname = ["{id}*"]\n{flags}\n'


def _table(*rows: str) -> str:
    return "\n".join(rows) + '\n[[rule]]\nid = "default"\n'


def _rule(rule_id: str, flags: str) -> str:
    return RULE.format(id=rule_id, flags=flags)


def test_the_shipped_table_loads() -> None:
    table = load_table()
    ids = [rule.caps.rule for rule in table.rules]
    assert ids[-1] == "default"
    assert {"smollm2", "qwen3", "gpt-oss", "llama3", "gemma"} <= set(ids)


@pytest.mark.parametrize(
    ("name", "architecture", "general_name", "rule", "template"),
    [
        ("smollm2-135m", "", "", "smollm2", "chatml"),
        ("model", "llama", "Smollm2 135M 8k Lc100K Mix1 Ep2", "smollm2", "chatml"),
        ("Qwen3-8B-Q4_K_M", "", "", "qwen3", "chatml"),
        ("my-finetune", "qwen3moe", "", "qwen3", "chatml"),
        ("Qwen3-Coder-30B-A3B", "qwen3moe", "", "qwen3-coder", "gguf"),
        ("gpt-oss-20b", "", "", "gpt-oss", "harmony"),
        ("x", "gpt-oss", "", "gpt-oss", "harmony"),
        ("Meta-Llama-3.1-8B-Instruct", "llama", "", "llama3", "llama3"),
        ("mistral-7b", "llama", "Mistral 7B", "default", "gguf"),
        ("gemma-3-4b-it", "", "", "gemma", "gemma"),
        ("", "", "", "default", "gguf"),
    ],
)
def test_first_match(name: str, architecture: str, general_name: str, rule: str, template: str):
    caps = match(name, architecture, general_name)
    assert (caps.rule, caps.template) == (rule, template)


def test_flags_of_the_families() -> None:
    qwen3 = match("qwen3-8b")
    assert qwen3.reserved_tool_call_token and qwen3.think_markers == ("<think>", "</think>")
    assert "<|im_end|>" in qwen3.stop
    oss = match("gpt-oss-20b")
    assert oss.tool_format == "harmony" and not oss.reserved_tool_call_token
    assert not match("smollm2-135m").reserved_tool_call_token


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ('template = "chatml"\ntool_format = "harmony"', 'needs template = "harmony"'),
        ('template = "harmony"\ntool_format = "hermes"', 'needs tool_format = "harmony"'),
        (
            'template = "harmony"\ntool_format = "harmony"\nreserved_tool_call_token = true',
            "never writes",
        ),
        ('tool_format = "harmony"\nthink_markers = ["<think>", "</think>"]', "channels"),
        ('think_markers = ["<think>"]', "think_markers"),
        ('think_markers = ["<t>", "<t>"]', "think_markers"),
        ('tool_result_role = "ipython"', "tool_result_role"),
        ('template = "vicuna"', "template 'vicuna'"),
        ('tool_format = "xml"', "tool_format 'xml'"),
        ("stop = [1]", "stop"),
        ("reserved_tool_call_token = 1", "true or false"),
        ('temperature = "0.2"', "unknown key(s) temperature"),
    ],
)
def test_contradictory_rows_are_rejected(flags: str, message: str) -> None:
    with pytest.raises(CapabilitiesError, match="rule #1 \\('bad'\\)") as info:
        load_table(_table(_rule("bad", flags)))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_table_level_mistakes_are_rejected() -> None:
    with pytest.raises(CapabilitiesError, match="move it to the end"):
        load_table('[[rule]]\nid = "all"\n' + _rule("late", ""))
    with pytest.raises(CapabilitiesError, match="duplicate id"):
        load_table(_table(_rule("twice", ""), _rule("twice", "")))
    with pytest.raises(CapabilitiesError, match="needs an `id`"):
        load_table('[[rule]]\nname = "x"\n')
    with pytest.raises(CapabilitiesError, match="not valid TOML"):
        load_table("[[rule]\n")
    with pytest.raises(CapabilitiesError, match="at least one"):
        load_table("")


def test_a_valid_custom_table() -> None:
    table = load_table(_table(_rule("oss", 'template = "harmony"\ntool_format = "harmony"')))
    assert match("oss-1", table=table).template == "harmony"
    assert match("other", table=table).rule == "default"


def test_model_specs() -> None:
    assert model_info("scripted:replay.jsonl").caps.rule == "default"
    assert model_info("scripted:replay.jsonl").template_label.startswith("chatml")
    served = model_info("openai:http://localhost:8080/v1#gpt-oss-20b")
    assert (served.kind, served.name, served.caps.rule) == ("openai", "gpt-oss-20b", "gpt-oss")
    missing = model_info("/nowhere/Qwen3-4B-Q8_0.gguf")
    assert (missing.kind, missing.name, missing.gguf) == ("gguf", "Qwen3-4B-Q8_0", None)
    assert missing.caps.rule == "qwen3"


def test_gguf_metadata_decides_when_the_name_does_not(tmp_path: Path) -> None:
    path = tmp_path / "model-q4.gguf"
    write_gguf(path, {"general.architecture": "gpt-oss", "general.name": "Some Finetune"})
    info = model_info(str(path))
    assert info.caps.rule == "gpt-oss"
    row = info.summary()
    assert row["architecture"] == "gpt-oss" and row["template"] == "harmony"
    assert set(row) >= {"model", "rule", "tool_format", "wire_remap", "stop", "think_markers"}


def test_bundled_models_are_listed() -> None:
    assert "smollm2-135m" in bundled_models()
    info = model_info("smollm2-135m")
    assert (info.kind, info.caps.rule) == ("bundled", "smollm2")
