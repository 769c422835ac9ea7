"""drivers/capabilities.toml: first-match rules, and an audit that rejects contradictions."""

from __future__ import annotations

import pytest

from agent.protocol.capabilities import CapabilitiesError, load_table, match

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
        ("Qwen3-8B-Q4_K_M", "", "", "qwen3", None),
        ("Qwen3-Coder-30B-A3B", "qwen3moe", "", "qwen3-coder", None),
        ("gpt-oss-20b", "", "", "gpt-oss", "harmony"),
        ("x", "gpt-oss", "", "gpt-oss", "harmony"),
        ("Meta-Llama-3.1-8B-Instruct", "llama", "", "llama3", "llama3"),
        ("mistral-7b", "llama", "Mistral 7B", "default", None),
        ("gemma-3-4b-it", "", "", "gemma", "gemma"),
        ("", "", "", "default", None),
    ],
)
def test_first_match(name: str, architecture: str, general_name: str, rule: str, template):
    caps = match(name, architecture, general_name)
    assert (caps.rule, caps.template) == (rule, template)


def test_rules_leave_unset_what_they_do_not_say() -> None:
    qwen3 = match("qwen3-8b")
    assert qwen3.think_markers == ("<think>", "</think>")
    assert qwen3.template is None and qwen3.tool_format is None and qwen3.stop is None
    oss = match("gpt-oss-20b")
    assert oss.tool_format == "gpt_oss_harmony" and not oss.override
    assert match("nothing-known").think_markers is None


def test_aliases_and_explicit_no_reasoning() -> None:
    table = load_table(_table(_rule("x", 'tool_format = "qwen3_xml"\nthink_markers = []')))
    caps = match("x-1", table=table)
    assert caps.tool_format == "qwen3_coder_xml"
    assert caps.think_markers == ()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ('template = "chatml"\ntool_format = "harmony"', 'needs template = "harmony"'),
        ('template = "harmony"\ntool_format = "hermes"', 'needs tool_format = "harmony"'),
        ('tool_format = "harmony"\nthink_markers = ["<think>", "</think>"]', "channels"),
        ('think_markers = ["<think>"]', "think_markers"),
        ('think_markers = ["<t>", "<t>"]', "think_markers"),
        ('template = "vicuna"', "template 'vicuna'"),
        ('tool_format = "xml"', "tool_format 'xml'"),
        ("tool_format = 3", "tool_format 3"),
        ("stop = [1]", "stop"),
        ("override = 1", "true or false"),
        ('temperature = "0.2"', "unknown key(s) temperature"),
        ("reserved_tool_call_token = true", "unknown key(s) reserved_tool_call_token"),
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
