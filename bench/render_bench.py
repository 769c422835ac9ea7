"""Render time for a 50-turn history with 10 tools, per template.

Every turn re-renders the whole history, so render time is paid on every model call.
The first render compiles and probes the template; later ones reuse both and should stay
under 5 ms. Run: .venv/bin/python bench/render_bench.py [--turns 50] [--repeat 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.history import (
    Assistant,
    AssistantToolUse,
    Message,
    System,
    ToolCall,
    ToolResult,
    User,
)
from agent.protocol import jinja_env, profile, template_facts
from agent.protocol import render as prompt
from agent.protocol.dialect import to_template_messages

REPO = Path(__file__).resolve().parents[1]
# Real templates of public models, shipped with the tests (tests/data/README.md).
CORPUS = REPO / "tests" / "data" / "chat-templates"
CORPUS_SAMPLES = (
    "Qwen-Qwen3-0.6B",
    "meta-llama-Llama-3.1-8B-Instruct",
    "openai-gpt-oss-120b",
    "google-gemma-2-2b-it",
)
TARGET_MS = 5.0


def make_tools(n: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": f"Tool number {i}: does one thing to a file in the workspace.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "File path."},
                        "count": {"type": "integer", "description": "How many."},
                    },
                    "required": ["path"],
                },
            },
        }
        for i in range(n)
    ]


def make_history(turns: int) -> list[Message]:
    history: list[Message] = [System("You are bosun, a coding agent. " * 20)]
    for t in range(turns):
        history.append(User(f"Step {t}: please look at src/module_{t}.py and fix the bug."))
        history.append(Assistant(f"Reading module {t} first."))
        call = ToolCall(f"call_{t}", f"tool_{t % 10}", {"path": f"src/module_{t}.py"})
        history.append(AssistantToolUse(call))
        history.append(ToolResult(call.id, f"def f_{t}():\n    return {t}\n" * 10))
        history.append(Assistant(f"Module {t} is fixed."))
    return history


def clear_caches() -> None:
    jinja_env.compile_template.cache_clear()
    template_facts.template_facts.cache_clear()
    profile._resolve.cache_clear()
    profile._compiled.cache_clear()


def profile_of(template: Path) -> profile.ModelProfile:
    """A corpus template as a GGUF would embed it; a shipped one as given."""
    source = template.read_text(encoding="utf-8")
    if template.parent.name == "templates":
        return prompt.profile_with("", template)
    return profile.profile_for(template.stem, chat_template=source)


def _timed(fn: Any, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times)


def bench(template: Path, history: list[Message], tools: list[Any], repeat: int) -> tuple:
    """(first ms, median ms, p95 ms, template-only median ms, prompt length).

    "first" includes resolving the profile: probing the template once per process."""
    clear_caches()
    start = time.perf_counter()
    model = profile_of(template)
    text = model.render(history, tools)
    first = (time.perf_counter() - start) * 1000
    times = _timed(lambda: model.render(history, tools), repeat)
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    # The template's own execution on prepared messages: what is left is bosun's share.
    dialect = model.dialect
    block = "" if dialect.native_tools else model.tool_block(tools)
    messages = to_template_messages(history, dialect, block, model._writer)
    compiled = jinja_env.compile_template(model.template)
    native = tools if dialect.native_tools else None
    raw = _timed(
        lambda: compiled.render(messages=messages, tools=native, add_generation_prompt=True),
        repeat,
    )
    return first, statistics.median(times), p95, statistics.median(raw), len(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--tools", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    history, tools = make_history(args.turns), make_tools(args.tools)
    templates = [
        REPO / "templates" / f"{n}.jinja" for n in ("chatml", "llama3", "gemma", "harmony")
    ]
    templates += [CORPUS / f"{n}.jinja" for n in CORPUS_SAMPLES]

    print(
        f"{args.turns} turns ({len(history)} messages), {args.tools} tools, {args.repeat} renders"
    )
    columns = ("template", "first ms", "median ms", "p95 ms", "jinja ms", "bosun ms", "chars")
    header = "{:<36} {:>9} {:>10} {:>8} {:>9} {:>9} {:>7}".format(*columns)
    print(f"{header}  <{TARGET_MS:g} ms")
    print("-" * (len(header) + 8))
    for path in templates:
        first, median, p95, raw, chars = bench(path, history, tools, args.repeat)
        ok = "yes" if median < TARGET_MS else "NO"
        label = path.stem if path.parent.name == "templates" else f"corpus:{path.stem}"
        print(
            f"{label[:36]:<36} {first:>9.2f} {median:>10.2f} {p95:>8.2f} {raw:>9.2f} "
            f"{median - raw:>9.2f} {chars:>7}  {ok}"
        )
    print("jinja ms: the template's own execution; bosun ms: history conversion and the rest.")


if __name__ == "__main__":
    main()
