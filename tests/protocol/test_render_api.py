"""render() and its helpers as the runtime and the CLI call them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.history import to_json
from agent.protocol import capabilities, profile
from agent.protocol.gguf import write_gguf
from agent.protocol.render import TemplateRenderError, read_messages_json, render, render_for_model
from tests.protocol.prompt_cases import CANONICAL, CORPUS, SHIPPED, TOOLS

# SmolLM2's embedded template: prints every role the same way, knows nothing of tools.
GENERIC = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _gguf(tmp_path: Path, template: str, arch: str = "mystery") -> str:
    path = tmp_path / f"{arch}-model.gguf"
    write_gguf(
        path,
        {
            "general.architecture": arch,
            "general.name": "Mystery 1B",
            "tokenizer.ggml.tokens": ["<unk>", "<BOS>", "<EOS>"],
            "tokenizer.ggml.bos_token_id": 1,
            "tokenizer.ggml.eos_token_id": 2,
            "tokenizer.chat_template": template,
        },
    )
    return str(path)


def test_template_as_source_or_path() -> None:
    path = SHIPPED / "chatml.jinja"
    assert render(CANONICAL, TOOLS, template=path) == render(
        CANONICAL, TOOLS, template=path.read_text(encoding="utf-8")
    )
    assert render(CANONICAL, TOOLS) == render(CANONICAL, TOOLS, template=path)


def test_generation_prompt_is_optional() -> None:
    with_prompt = render(CANONICAL, TOOLS)
    without = render(CANONICAL, TOOLS, add_generation_prompt=False)
    assert with_prompt == without + "<|im_start|>assistant\n"


def test_missing_template_file_is_a_render_error(tmp_path: Path) -> None:
    with pytest.raises(TemplateRenderError, match="cannot read chat template"):
        render(CANONICAL, template=tmp_path / "nope.jinja")


def test_embedded_template_with_bos_and_eos(tmp_path: Path) -> None:
    model = _gguf(
        tmp_path,
        "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}"
        "{% endfor %}",
    )
    text = render(CANONICAL[:2], [], model=model)
    assert (
        text == "<BOS>[system]You are bosun, a coding agent.<EOS>[user]What is in notes.txt?<EOS>"
    )


def test_embedded_template_without_tool_support_gets_the_fallback(tmp_path: Path) -> None:
    text = render(CANONICAL, TOOLS, model=_gguf(tmp_path, GENERIC))
    assert text.startswith("<|im_start|>system\nYou are bosun, a coding agent.\n\n# Tools\n\n")
    assert '<|im_start|>assistant\n<tool_call>\n{"name": "read_file"' in text
    assert "<|im_start|>user\n<tool_result>\nalpha beta gamma\n</tool_result><|im_end|>" in text
    assert "<|im_start|>tool" not in text


def test_family_rule_beats_the_embedded_template(tmp_path: Path) -> None:
    # A gpt-oss GGUF renders with bosun's harmony template, whatever it embeds.
    text = render(CANONICAL, TOOLS, model=_gguf(tmp_path, GENERIC, arch="gpt-oss"))
    assert text.startswith("<|start|>system<|message|>")


@pytest.fixture
def override_table(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    table = capabilities.load_table(
        '[[rule]]\nid = "forced"\narchitecture = "forced"\ntemplate = "chatml"\n'
        'tool_format = "hermes"\noverride = true\n[[rule]]\nid = "default"\n'
    )
    monkeypatch.setattr(capabilities, "_shipped_table", lambda: table)
    profile._resolve.cache_clear()
    yield
    profile._resolve.cache_clear()


def test_own_template_with_tools_beats_a_family_rule(tmp_path: Path) -> None:
    qwen3 = (CORPUS / "Qwen-Qwen3-0.6B.jinja").read_text(encoding="utf-8")
    # "qwen3*" names a rule, but the model file's own template decides first.
    model = _gguf(tmp_path, qwen3, arch="qwen3")
    assert profile.profile_for(model).template_origin.startswith("embedded in")
    text = render(CANONICAL, TOOLS, model=model)
    assert "<tool_response>\nalpha beta gamma\n</tool_response>" in text
    assert "<tool_result>" not in text and "[[CALL]]" not in text


def test_an_override_rule_beats_the_own_template(tmp_path: Path, override_table: None) -> None:
    qwen3 = (CORPUS / "Qwen-Qwen3-0.6B.jinja").read_text(encoding="utf-8")
    forced = profile.profile_for(_gguf(tmp_path, qwen3, arch="forced"))
    assert forced.template_origin == "templates/chatml.jinja" and forced.rule == "forced"
    assert [a.what for a in forced.adaptations] == ["shipped template chatml"]


def test_render_for_model_with_a_messages_file(tmp_path: Path) -> None:
    path = tmp_path / "messages.json"
    path.write_text(to_json(CANONICAL), encoding="utf-8")
    messages = read_messages_json(path)
    assert messages == CANONICAL
    assert render_for_model("smollm2-135m", messages, TOOLS) == render(CANONICAL, TOOLS)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"kind": "user", "content": "x"}', "expected a JSON list of messages"),
        (json.dumps([{"kind": "user", "content": "x"}, {"kind": "shout"}]), "message 1: unknown"),
        (json.dumps([{"kind": "tool_result"}]), "message 0: malformed"),
    ],
)
def test_bad_messages_files_are_clear_value_errors(tmp_path: Path, content: str, message: str):
    path = tmp_path / "m.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message) as info:
        read_messages_json(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_messages_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read messages file"):
        read_messages_json(tmp_path / "absent.json")
