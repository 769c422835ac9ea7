"""The template environment speaks Hugging Face's Jinja dialect."""

from __future__ import annotations

import pytest

from agent.history import User
from agent.protocol import jinja_env
from agent.protocol.render import TemplateRenderError, render
from tests.protocol.prompt_cases import CANONICAL


def _run(source: str, **context: object) -> str:
    return render([User("hi")], template=source, **context)  # type: ignore[arg-type]


def test_tojson_keeps_key_order_and_non_ascii() -> None:
    source = "{{ {'b': 1, 'a': 'héllo <x>'} | tojson }}"
    assert _run(source) == '{"b": 1, "a": "héllo <x>"}'


def test_tojson_accepts_indent_and_generators() -> None:
    source = "{{ messages | map(attribute='role') | tojson(indent=2) }}"
    assert _run(source) == '[\n  "user"\n]'


def test_raise_exception_becomes_a_one_line_render_error() -> None:
    with pytest.raises(TemplateRenderError, match="roles must alternate"):
        _run("{{ raise_exception('roles must alternate') }}")


def test_strftime_now_is_frozen_for_the_process() -> None:
    source = "{{ strftime_now('%Y-%m-%d %H:%M:%S.%f') }}"
    first = _run(source)
    assert first == _run(source)
    assert first == jinja_env.strftime_now("%Y-%m-%d %H:%M:%S.%f")


def test_generation_blocks_are_transparent() -> None:
    source = (
        "{% for m in messages %}{% generation %}[{{ m.content }}]{% endgeneration %}{% endfor %}"
    )
    assert _run(source) == "[hi]"


def test_loop_controls_and_block_trimming() -> None:
    source = (
        "{% for i in range(5) %}\n"
        "  {% if i == 1 %}{% continue %}{% endif %}\n"
        "  {% if i == 3 %}{% break %}{% endif %}\n"
        "{{ i }}\n"
        "{% endfor %}"
    )
    assert _run(source) == "0\n2\n"


def test_templates_may_build_and_append_to_lists() -> None:
    # Kimi K2 does this; a fully immutable sandbox would refuse it.
    source = (
        "{% set seen = [] %}{% for m in messages %}{% set _ = seen.append(m.role) %}"
        "{% endfor %}{{ seen | join(',') }}"
    )
    assert _run(source) == "user"


def test_sandbox_refuses_python_internals() -> None:
    with pytest.raises(TemplateRenderError):
        _run("{{ ''.__class__.__mro__[1].__subclasses__() }}")


def test_templates_cannot_mutate_the_callers_tools() -> None:
    tools = [{"type": "function", "function": {"name": "t", "description": "d"}}]
    source = (
        "{% for t in tools %}{% set _ = t.function.update({'description': 'mutated'}) %}"
        "{% endfor %}{{ tools | tojson }}"
    )
    assert '"mutated"' in render(CANONICAL, tools, template=source)
    assert tools[0]["function"]["description"] == "d"


def test_templates_are_compiled_once() -> None:
    source = "{{ messages | length }}"
    assert jinja_env.compile_template(source) is jinja_env.compile_template(source)


def test_syntax_errors_are_render_errors() -> None:
    with pytest.raises(TemplateRenderError, match="does not compile"):
        _run("{% for %}")


# Attribute look-ups that chat templates make, on the values they get. The fast path in
# ChatTemplateEnvironment.getattr must answer each exactly as Jinja's sandbox does.
_LOOKUPS = [
    "{{ m.role }}|{{ m.content }}",
    "{{ m.missing is defined }}|{{ m.missing | default('none') }}",
    "{{ m['role'] }}|{{ m.get('role') }}",
    "{% for k, v in m.items() %}{{ k }}={{ v }};{% endfor %}",
    "{{ m.items is defined }}|{{ m.keys is defined }}",  # dict methods win over keys
    "{{ m.tool_calls[0].function.arguments.path }}",
    "{% for x in m.tool_calls %}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
    "{{ loop.length }}{{ loop.revindex }}{{ loop.nextitem is none }}{% endfor %}",
    "{% for x in [1, 2, 3] %}{{ loop.cycle('a', 'b') }}{{ loop.changed(x) }}{% endfor %}",
    "{% set ns = namespace(seen=false) %}{% set ns.seen = true %}{{ ns.seen }}",
    "{{ s.upper() }}|{{ s.missing is defined }}",
]


@pytest.mark.parametrize("source", _LOOKUPS)
def test_attribute_lookups_match_jinjas_sandbox(source: str) -> None:
    from jinja2.sandbox import SandboxedEnvironment

    message = {
        "role": "assistant",
        "content": "x",
        "items": "a key that dict's own method shadows",
        "tool_calls": [{"function": {"name": "read", "arguments": {"path": "a.py"}}}],
    }
    ours = jinja_env.environment().from_string(source).render(m=message, s="abc")
    theirs = SandboxedEnvironment().from_string(source).render(m=message, s="abc")
    assert ours == theirs


@pytest.mark.parametrize(
    "source", ["{{ m.__class__.__mro__ }}", "{% for x in [1] %}{{ loop.__class__ }}{% endfor %}"]
)
def test_fast_lookups_keep_the_sandbox_closed(source: str) -> None:
    from jinja2.exceptions import SecurityError

    rendered = jinja_env.environment().from_string(source)
    try:
        out = rendered.render(m={"role": "user"})
    except SecurityError:
        return
    assert "class" not in out  # the sandbox answers with an empty undefined
