"""Chat templates are code from whoever made the model file: bounded in time and size.

A template that loops for ever, grows exponentially with the conversation or doubles a
string until memory runs out is refused with one line naming the model file, by every
face (`bosun models`, `render`, `run`, `chat`); a run that meets the bound mid-way ends
with its result, status "error". Each hostile call runs in a forked child with a hard
timeout and a memory limit (tests/hostile/contain.py), so a regression fails the test
instead of hanging or killing the suite.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.history import AssistantToolUse, System, ToolCall, ToolResult, User
from agent.protocol.gguf import write_gguf
from tests.helpers import tool_call
from tests.hostile.contain import Outcome, cli, contained

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# The caps the tests run under (the defaults are larger; one test uses them).
SECONDS = 1.0
CHARS = 200_000


@pytest.fixture(autouse=True)
def tight(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        from agent.protocol import template_bounds
    except ImportError:  # before bounds existed: the child's own limits catch it
        return
    monkeypatch.setattr(
        template_bounds,
        "LIMITS",
        template_bounds.Limits(seconds=SECONDS, chars=CHARS, items=50_000, allocated=4_000_000),
    )


def gguf(folder: Path, template: str, name: str = "evil.gguf") -> Path:
    path = folder / name
    write_gguf(
        path,
        {
            "general.architecture": "llama",
            "general.name": "Evil",
            "tokenizer.ggml.tokens": ["<s>", "</s>"],
            "tokenizer.ggml.bos_token_id": 0,
            "tokenizer.ggml.eos_token_id": 1,
            "tokenizer.chat_template": template,
        },
    )
    return path


def resolve(path: Path) -> Any:
    def go() -> str:
        from agent.protocol.profile import profile_for

        return profile_for(str(path)).template_origin

    return go


def refused(out: Outcome, name: str = "evil.gguf", seconds: float = SECONDS) -> None:
    """Refused as a usage error naming the file, within the time bound (plus start-up)."""
    assert not out.timed_out and not out.died, out
    assert out.failed_with("UsageError"), out
    assert name in out.message and "\n" not in out.message, out
    assert out.seconds < seconds + 3, out
    assert out.grew_mb < 300, out


# Each refused while the profile is resolved: the probes bosun renders hit the bound.
HOSTILE = {
    "nested-ranges-no-output": (  # range() called once: only the loops themselves check
        "{% set r = range(100000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}"
    ),
    "nested-ranges-printing": (
        "{% for i in range(100000) %}{% for j in range(100000) %}xy{% endfor %}{% endfor %}"
    ),
    "loop-over-a-growing-list": (
        "{% set l = [0] %}{% for x in l %}{% set _ = l.append(x) %}{% endfor %}"
    ),
    "recursive-loop-two-children-each": (
        "{% for x in [0, 0] recursive %}{{ loop([0, 0]) if loop.depth < 90 }}{% endfor %}"
    ),
    "macro-calling-itself-twice": (
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(90) }}"
    ),
    "macro-doubling-its-output": (
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% else %}x{% endif %}"
        "{% endmacro %}{{ f(60) }}"
    ),
    "doubling-with-tilde": (
        "{% set ns = namespace(s='x') %}{% for i in range(80) %}"
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}"
    ),
    "doubling-with-plus": (
        "{% set ns = namespace(s='x') %}{% for i in range(80) %}"
        "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}"
    ),
    "doubling-in-a-block-set": (
        "{% set ns = namespace(s='x') %}{% for i in range(80) %}"
        "{% set ns.s %}{{ ns.s }}{{ ns.s }}{% endset %}{% endfor %}{{ ns.s|length }}"
    ),
    "doubling-through-a-macro-argument": (
        "{% macro f(s, n) %}{% if n %}{{ f(s ~ s, n - 1) }}{% else %}{{ s|length }}"
        "{% endif %}{% endmacro %}{{ f('x', 80) }}"
    ),
    "doubling-a-list": (
        "{% set ns = namespace(l=[0]) %}{% for i in range(80) %}"
        "{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}"
    ),
    "extending-a-list-with-itself": (
        "{% set l = [0] %}{% for i in range(80) %}{% set _ = l.extend(l) %}{% endfor %}"
    ),
    "string-times-a-huge-number": "{{ 'x' * 10 ** 12 }}",
    "list-times-a-huge-number": "{{ ([0] * 10 ** 12)|length }}",
    "a-number-of-billions-of-digits": "{{ 9 ** (9 ** 9) }}",
    "a-huge-percent-width": "{{ '%1000000000000s' % 'x' }}",
    "a-huge-format-width": "{{ '%1000000000000s'|format('x') }}",
    "a-huge-str-format-width": "{{ '{:>1000000000000}'.format('x') }}",
    "a-huge-center": "{{ 'x'|center(10 ** 12) }}",
    "a-huge-ljust": "{{ 'x'.ljust(10 ** 12) }}",
    "a-huge-indent": "{{ ('x\\n' * 100000)|indent(100000) }}",
    "a-huge-tojson-indent": "{{ (range(50000)|list)|tojson(indent=100000) }}",
    "expandtabs": "{{ ('\\t' * 100000).expandtabs(100000) }}",
    "replace-amplifying": "{{ ('x' * 100000).replace('x', 'y' * 100000) }}",
    "join-of-one-big-string-many-times": (
        "{% set big = 'x' * 100000 %}{% set l = [] %}{% for i in range(50000) %}"
        "{% set _ = l.append(big) %}{% endfor %}{{ l|join }}"
    ),
    "join-method-of-one-big-string-many-times": (
        "{% set big = 'x' * 100000 %}{% set l = [] %}{% for i in range(50000) %}"
        "{% set _ = l.append(big) %}{% endfor %}{{ ''.join(l) }}"
    ),
    "printing-one-big-string-repeated-by-star": ("{% set l = ['x' * 100000] * 40000 %}{{ l }}"),
    "printing-a-list-of-one-big-string-many-times": (
        "{% set big = 'x' * 100000 %}{% set l = [] %}{% for i in range(50000) %}"
        "{% set _ = l.append(big) %}{% endfor %}{{ l }}"
    ),
    "tojson-of-one-big-string-many-times": (
        "{% set big = 'x' * 100000 %}{% set l = [] %}{% for i in range(50000) %}"
        "{% set _ = l.append(big) %}{% endfor %}{{ l|tojson }}"
    ),
    "many-distinct-big-strings-kept": (
        "{% set big = 'x' * 150000 %}{% set l = [] %}{% for i in range(50000) %}"
        "{% set _ = l.append(big ~ i) %}{% endfor %}{{ l|length }}"
    ),
    "slices-of-a-big-string-kept": (
        "{% set big = 'x' * 150000 %}{% set l = [] %}{% for i in range(50000) %}"
        "{% set _ = l.append(big[i:]) %}{% endfor %}{{ l|length }}"
    ),
    "a-macro-writing-many-small-pieces": (
        "{% macro m() %}{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}"
        "{% endfor %}{% endfor %}{% endmacro %}{{ m()|length }}"
    ),
    "batch-with-a-huge-fill": "{{ [1]|batch(10 ** 12, 0)|list|length }}",
    "lipsum": "{{ lipsum(10 ** 7) }}",
    "strftime-of-a-huge-format": "{{ strftime_now('%c' * 1000000) }}",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_template_is_refused_naming_the_file(tmp_path: Path, name: str) -> None:
    path = gguf(tmp_path, HOSTILE[name] + CHATML)
    refused(contained(resolve(path), seconds=25))


def test_default_bounds_refuse_an_endless_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not only the tests' tight caps: bosun's own defaults end a loop within seconds."""
    monkeypatch.undo()
    from agent.protocol.template_bounds import LIMITS

    assert LIMITS.seconds <= 5
    path = gguf(tmp_path, HOSTILE["nested-ranges-no-output"] + CHATML)
    refused(contained(resolve(path), seconds=30, memory_mb=2048), seconds=LIMITS.seconds)


# Grows with the number of messages: the probes (a few messages) pass, a long history
# does not. The template is otherwise Qwen2.5's own, which bosun uses as it is.
QWEN = Path(__file__).parents[1] / "data" / "chat-templates" / "Qwen-Qwen2.5-7B-Instruct.jinja"
EXPONENTIAL = (
    "{% set ns = namespace(s='ab') %}{% for m in messages %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}{{ ns.s[:0] }}" + QWEN.read_text(encoding="utf-8")
)


def long_history(turns: int) -> list[Any]:
    history: list[Any] = [System("sys"), User("go")]
    for i in range(turns):
        call = ToolCall(f"c{i}", "list_dir", {"path": "."})
        history += [AssistantToolUse(call), ToolResult(call.id, "a.txt")]
    return history


def test_exponential_in_messages_is_refused_at_render(tmp_path: Path) -> None:
    path = gguf(tmp_path, EXPONENTIAL)

    def go() -> str:
        from agent.protocol.profile import profile_for

        profile = profile_for(str(path))
        assert profile.template_origin == "embedded in evil.gguf"  # the probes pass
        short = profile.render(long_history(2), [])
        assert short.startswith("<|im_start|>system\nsys")
        return profile.render(long_history(60), [])

    refused(contained(go, seconds=25))


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (["models", "{path}"], "models"),
        (["render", "-m", "{path}"], "render"),
        (["run", "go", "-m", "{path}", "-w", "{ws}", "--output", "jsonl"], "run"),
    ],
    ids=["models", "render", "run"],
)
def test_every_face_refuses_with_one_line(
    tmp_path: Path, workspace: Path, argv: list[str], where: str
) -> None:
    path = gguf(tmp_path, HOSTILE["doubling-with-tilde"] + CHATML)
    args = [a.format(path=path, ws=workspace) for a in argv]
    out = contained(cli(*args), seconds=25)
    assert not out.timed_out and not out.error, out
    result = out.value
    assert result["code"] == 2, (where, result)
    lines = result["stderr"].splitlines()
    assert len(lines) == 1 and "evil.gguf" in lines[0], result
    assert "internal error" not in lines[0] and "Traceback" not in result["stderr"]


def scripted_gguf(monkeypatch: pytest.MonkeyPatch, script: Path) -> None:
    """A GGUF path for the profile, a scripted driver for the completions."""
    from agent.run import models
    from drivers.scripted import ScriptedDriver

    monkeypatch.setattr(models, "open_driver", lambda spec, **_: ScriptedDriver(str(script)))


def test_a_run_that_outgrows_the_bound_ends_with_its_result(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, script_file: Any
) -> None:
    path = gguf(tmp_path, EXPONENTIAL)
    script = script_file(*[tool_call("glob", pattern=f"*{i}") for i in range(40)], "done")
    scripted_gguf(monkeypatch, script)
    argv = ["run", "go", "-m", str(path), "-w", str(workspace), "--output", "jsonl"]
    out = contained(cli(*argv), seconds=40)
    assert not out.timed_out and not out.error, out
    value = out.value
    assert value["code"] == 1, value
    assert "Traceback" not in value["stderr"] and "internal error" not in value["stderr"]
    events = [json.loads(line) for line in value["stdout"].splitlines()]
    result = events[-1]
    assert result["type"] == "result" and result["status"] == "error", result
    assert "evil.gguf" in result["error"] and "\n" not in result["error"], result
    assert result["turns"] > 3  # the early turns ran; the bound met a long history


def test_real_templates_render_long_conversations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bounds stay out of the way of real templates: Reka's builds its prompt in a
    namespace string piece by piece (each piece's cost given back when the string is
    replaced), a thousand-message chat with 8 kB tool results is 1.3 MB of prompt."""
    from agent.protocol.profile import profile_for

    monkeypatch.undo()  # bosun's own bounds, not the tests' tight ones
    history = long_history(150)
    history = [
        ToolResult(m.call_id, "x" * 8000) if isinstance(m, ToolResult) else m for m in history
    ]
    for name in ("Reka-Edge", "Qwen-Qwen3-0.6B", "Kimi-K3"):
        source = (QWEN.parent / f"{name}.jinja").read_text(encoding="utf-8")
        prompt = profile_for(name, chat_template=source).render(history, [])
        assert len(prompt) > 1_200_000, name


def test_chat_refuses_the_model_and_ends_a_request_cleanly(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, script_file: Any
) -> None:
    script = script_file(*[tool_call("glob", pattern=f"*{i}") for i in range(40)], "done")
    scripted_gguf(monkeypatch, script)
    looping = gguf(tmp_path, HOSTILE["nested-ranges-no-output"] + CHATML, "loops.gguf")
    growing = gguf(tmp_path, EXPONENTIAL)

    def chat(path: Path) -> Any:
        from agent.run.chat import ChatSession
        from agent.run.config import Config
        from agent.run.settings import Settings

        settings = Settings.from_config(Config(model=str(path)), workspace=workspace)
        session = ChatSession(settings, lambda _e: None, lambda _c, _t: "yes")
        session.start_new()
        result = session.send("go")
        session.close()
        return {"status": result.status, "error": result.error}

    out = contained(lambda: chat(looping), seconds=25)
    refused(out, "loops.gguf")
    out = contained(lambda: chat(growing), seconds=40)
    assert not out.timed_out and not out.error, out
    assert out.value["status"] == "error" and "evil.gguf" in out.value["error"], out
