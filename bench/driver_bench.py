"""Driver benchmark: harness overhead, KV-cache reuse over a session, tool-call validity.

    .venv/bin/python bench/driver_bench.py [--model smollm2-135m] [--tasks 20]

Prints five tables:
1. raw llama-cpp-python (`Llama.create_completion`, streaming) vs bosun's driver on the
   same prompts, greedy, same max_tokens: tokens/s and the overhead ratio (target ≤ 3%);
2. a 10-turn session: prompt tokens per turn, tokens actually evaluated (prompt - cached)
   and time to first token (target: only the new suffix, TTFT turn 10 ≤ 1.3 × turn 2);
3. SmolLM2's tool-call validity on a 20-task suite, `--constrain never` vs `always`
   (first model call of each task: a schema-valid call, a plain answer, or malformed);
5. decoding speed with the tool-call grammar vs without (bosun's sampler beside
   llama-cpp-python's grammar-first chain), e.g. `--model gemma3-270m --only grammar`
   (target: constrained within 1.5x of unconstrained tokens/s);
4. a fresh session's first turn, cold (the head of system prompt and tools evaluated,
   then saved) vs warm (a new driver loads the saved head), beside a mid-session turn
   (target: warm TTFT <= 1.5 x the mid-session turn's). States go to a temporary folder.

`--only fresh` (or any comma-separated subset of overhead,session,validity,fresh) runs
just those tables.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.history import Assistant, AssistantToolUse, System, ToolCall, ToolResult, User
from agent.parsing import parse_tool_calls
from agent.protocol.profile import ModelProfile, profile_for
from agent.protocol.render import stable_head
from agent.run.system_prompt import system_prompt
from agent.tools import default_registry
from drivers.base import Request
from drivers.llama_cpp import open_llama
from drivers.prefix_cache import clear

QUESTIONS = [
    "Explain what a Python list comprehension is.",
    "Write a haiku about the sea.",
    "Describe how a hash map works in two sentences.",
    "What is the difference between TCP and UDP?",
]

TASKS = [
    "List the files in this folder.",
    "Read notes.txt and tell me what it says.",
    "What is in README.md?",
    "Show me the first 10 lines of main.py.",
    "Which files are in the src directory?",
    "Open config.json and tell me the port.",
    "Read setup.py.",
    "Is there a tests folder? List it.",
    "What does utils.py contain?",
    "Look at the docs directory.",
    "Print the contents of requirements.txt.",
    "Check what is inside app/models.py.",
    "List everything under scripts.",
    "Read CHANGELOG.md and summarise it.",
    "Find out what data.csv holds.",
    "Show lines 20 to 40 of server.py.",
    "What is in the .github folder?",
    "Read LICENSE.",
    "List the lib directory.",
    "Open index.html.",
]


def table(title: str, header: list[str], rows: list[list[object]]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)))


def bench_overhead(driver, model: ModelProfile, max_tokens: int, repeats: int) -> None:
    llm = driver.llm
    raw_rates, bosun_rates = [], []
    for _ in range(repeats):
        for q in QUESTIONS:
            prompt = model.render([System("You are a helpful assistant."), User(q)])
            llm.reset()
            start, n = time.perf_counter(), 0
            for _part in llm.create_completion(
                prompt, max_tokens=max_tokens, temperature=0.0, stream=True
            ):
                n += 1
            raw_rates.append(n / (time.perf_counter() - start))
            llm.reset()
            start, n = time.perf_counter(), 0
            usage = None
            for chunk in driver.stream(Request(prompt, max_tokens=max_tokens)):
                usage = chunk.usage or usage
            n = usage.completion_tokens if usage else 0
            bosun_rates.append(n / (time.perf_counter() - start))
    raw, ours = statistics.median(raw_rates), statistics.median(bosun_rates)
    table(
        "1. harness overhead (median tokens/s, prompt eval included, cache reset each call)",
        ["raw llama-cpp-python", "bosun driver", "overhead"],
        [[f"{raw:.1f}", f"{ours:.1f}", f"{(raw - ours) / raw * 100:+.1f}%"]],
    )


def session_once(driver, model: ModelProfile, turns: int) -> list[tuple[int, int, float]]:
    """One 10-turn agent session from a cold cache: (prompt, cached, TTFT s) per turn."""
    tools = default_registry().specs()
    history = [System(system_prompt("/work/project")), User("Help me understand this project.")]
    out = []
    driver.llm.reset()
    for turn in range(1, turns + 1):
        prompt = model.render(history, tools)
        start = time.perf_counter()
        first = None
        usage = None
        # One token is all TTFT needs; a longer reply would also leave tokens in the
        # cache that happen to match the next prompt, so turns would evaluate suffixes
        # of different sizes depending on what the model said.
        for chunk in driver.stream(Request(prompt, max_tokens=1)):
            if first is None and chunk.text:
                first = time.perf_counter() - start
            usage = chunk.usage or usage
        assert usage is not None
        first = first or time.perf_counter() - start  # a held-back token: end of stream
        out.append((usage.prompt_tokens, usage.cached_tokens, first))
        call = ToolCall(f"call_{turn}", "read_file", {"path": f"src/module_{turn}.py"})
        history += [
            AssistantToolUse(call),
            ToolResult(call.id, "\n".join(f"{i}\tline {i} of module {turn}" for i in range(1, 9))),
        ]
        # A chat interjection every fourth turn, so turns 2 and 10 both follow a plain
        # tool turn and evaluate suffixes of the same size: their TTFT then differs only
        # by the context they attend over.
        if turn % 4 == 0:
            history += [Assistant("Noted."), User(f"Now look at module {turn + 1}.")]
    return out


def bench_session(driver, model: ModelProfile, turns: int, repeats: int) -> None:
    runs = [session_once(driver, model, turns) for _ in range(repeats)]
    rows = []
    for turn, per_run in enumerate(zip(*runs, strict=True), start=1):
        prompt, cached, _ = per_run[0]
        ttft = statistics.median(t for _, _, t in per_run)
        per_token = ttft * 1000 / max(prompt - cached, 1)
        rows.append(
            [turn, prompt, cached, prompt - cached, f"{ttft * 1000:.0f}", f"{per_token:.2f}"]
        )
    table(
        f"2. KV-cache reuse over a session (tokens; TTFT in ms, median of {repeats} sessions)",
        ["turn", "prompt", "cached", "evaluated", "TTFT", "ms/evaluated token"],
        rows,
    )
    t2, t10 = float(rows[1][4]), float(rows[-1][4])
    print(f"TTFT turn {turns} / turn 2 = {t10 / t2:.2f} (target <= 1.3)")


def bench_validity(driver, model: ModelProfile, n_tasks: int) -> None:
    registry = default_registry()
    specs = registry.specs()
    grammars = model.grammars(specs)
    grammar = grammars[0] if grammars else None
    rows = []
    for mode in ("never", "always"):
        valid = answer = malformed = 0
        for task in TASKS[:n_tasks]:
            prompt = model.render([System(system_prompt("/work/project")), User(task)], specs)
            text = ""
            for chunk in driver.stream(
                Request(prompt, max_tokens=96, grammar=grammar if mode == "always" else None)
            ):
                text += chunk.text
            parsed = parse_tool_calls(text, registry.names, format=model.tool_format)
            good = [c for c in parsed.calls if registry.validate(c) is None]
            if good and not parsed.diagnostics:
                valid += 1
            elif not parsed.calls and not parsed.diagnostics:
                answer += 1
            else:
                malformed += 1
        rows.append([mode, n_tasks, valid, answer, malformed, f"{valid / n_tasks:.0%}"])
    table(
        "3. first-call tool use on a task suite",
        ["--constrain", "tasks", "valid call", "answer", "malformed", "valid rate"],
        rows,
    )


def first_token(driver, prompt: str, head: int) -> tuple[int, int, float]:
    """(prompt tokens, cached tokens, seconds to the first token) of one call."""
    start = time.perf_counter()
    first = None
    usage = None
    for chunk in driver.stream(Request(prompt, max_tokens=1, head=head)):
        if first is None and chunk.text:
            first = time.perf_counter() - start
        usage = chunk.usage or usage
    assert usage is not None
    return usage.prompt_tokens, usage.cached_tokens, first or time.perf_counter() - start


def fresh_once(spec: str, model: ModelProfile, folder: str) -> list[tuple[int, int, float]]:
    """Cold first turn (new driver, empty cache), warm first turn (another new driver,
    the head saved by the first) and that session's second turn."""
    tools = default_registry().specs()
    history = [System(system_prompt("/work/project")), User("Help me understand this project.")]
    prompt = model.render(history, tools)
    head = stable_head(model, history, tools, prompt)
    clear(Path(folder))
    rows = []
    cold = open_llama(spec)
    rows.append(first_token(cold, prompt, head))
    cold.close()
    warm = open_llama(spec)
    rows.append(first_token(warm, prompt, head))
    call = ToolCall("call_1", "read_file", {"path": "src/module_1.py"})
    history += [
        AssistantToolUse(call),
        ToolResult(call.id, "\n".join(f"{i}\tline {i} of module 1" for i in range(1, 9))),
    ]
    second = model.render(history, tools)
    rows.append(first_token(warm, second, stable_head(model, history, tools, second)))
    warm.close()
    return rows


def bench_fresh(spec: str, model: ModelProfile, repeats: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bosun-prefix-bench-") as folder:
        os.environ["BOSUN_PREFIX_CACHE"] = folder  # never the user's cache
        runs = [fresh_once(spec, model, folder) for _ in range(repeats)]
    labels = ["fresh session, cold", "fresh session, warm", "mid-session (turn 2)"]
    rows = []
    for label, per_run in zip(labels, zip(*runs, strict=True), strict=True):
        prompt, cached, _ = per_run[0]
        ttft = statistics.median(t for _, _, t in per_run)
        rows.append([label, prompt, cached, prompt - cached, f"{ttft * 1000:.0f}"])
    table(
        f"4. first turn of a new session: head evaluated vs loaded (median of {repeats})",
        ["turn", "prompt", "cached", "evaluated", "TTFT ms"],
        rows,
    )
    cold, warm, mid = (float(r[4]) for r in rows)
    print(
        f"cold / warm = {cold / warm:.1f}x; warm / mid-session = {warm / mid:.2f} (target <= 1.5)"
    )


def _decode(run, warm) -> tuple[int, float]:
    """(tokens, seconds) of one generation whose prompt is already in the KV cache."""
    warm()
    start = time.perf_counter()
    n = run()
    return n, time.perf_counter() - start


def bench_grammar(driver, model: ModelProfile, n_tasks: int, max_tokens: int) -> None:
    """Decoding speed with the tool-call grammar vs without, on prompts already in the
    cache (so the time is decoding): bosun's sampler (grammar checked on the drawn
    token, then on the best candidates, whole vocabulary last) beside llama-cpp-python's
    own grammar-first chain (`Llama.generate(grammar=...)`), which bosun used before."""
    import llama_cpp

    specs = default_registry().specs()
    grammars = model.grammars(specs)
    if not grammars:
        print("\n5. grammar: this model's format has no grammar")
        return
    grammar = grammars[0]
    llm = driver.llm
    vocab = llm._model.vocab

    def ours(prompt: str, g: str | None) -> int:
        usage = None
        for chunk in driver.stream(Request(prompt, max_tokens=max_tokens, grammar=g)):
            usage = chunk.usage or usage
        return usage.completion_tokens if usage else 0

    def grammar_first(tokens: list[int]) -> int:
        compiled = llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)
        n = 0
        for token in llm.generate(tokens, temp=0.0, grammar=compiled):
            if llama_cpp.llama_vocab_is_eog(vocab, token) or n >= max_tokens:
                break
            n += 1
        return n

    totals = {"unconstrained": [0, 0.0], "bosun": [0, 0.0], "grammar-first": [0, 0.0]}
    paths = {"free": 0, "candidates": 0, "vocabulary": 0}
    for task in TASKS[:n_tasks]:
        prompt = model.render([System(system_prompt("/work/project")), User(task)], specs)
        tokens = driver.tokenize(prompt)

        def warm(p=prompt) -> None:
            for _ in driver.stream(Request(p, max_tokens=1)):
                pass

        for name, run in (
            ("unconstrained", lambda p=prompt: ours(p, None)),
            ("bosun", lambda p=prompt: ours(p, grammar)),
            ("grammar-first", lambda t=tokens: grammar_first(t)),
        ):
            n, seconds = _decode(run, warm)
            totals[name][0] += n
            totals[name][1] += seconds
            if name == "bosun":
                for key, count in driver.last_sampling.items():
                    paths[key] += count
    rate = {name: n / s if s else 0.0 for name, (n, s) in totals.items()}
    free = rate["unconstrained"]
    table(
        f"5. decoding with the tool-call grammar (tokens/s over {n_tasks} tasks, prompt cached;"
        f" vocabulary {llama_cpp.llama_vocab_n_tokens(vocab)} tokens)",
        ["sampler", "tokens", "seconds", "tokens/s", "slowdown vs unconstrained"],
        [
            [name, n, f"{s:.2f}", f"{rate[name]:.1f}", f"{free / rate[name]:.2f}x"]
            for name, (n, s) in totals.items()
        ],
    )
    drawn = sum(paths.values()) or 1
    print(
        "bosun's constrained tokens: "
        + ", ".join(f"{k} {v} ({v / drawn:.0%})" for k, v in paths.items())
        + " (free: the drawn token passed; candidates: the best 256 held one; vocabulary:"
        " the whole vocabulary was filtered). Target: bosun within 1.5x of unconstrained."
    )


SECTIONS = ("overhead", "session", "validity", "grammar", "fresh")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--session-repeats", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--fresh-repeats", type=int, default=3)
    ap.add_argument("--grammar-tasks", type=int, default=6)
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma-separated tables to run")
    args = ap.parse_args()
    only = set(args.only.split(","))
    if only - set(SECTIONS):
        ap.error(f"--only: choose from {', '.join(SECTIONS)}")
    model = profile_for(args.model)
    driver = open_llama(args.model)
    print(f"model {driver.model}, n_ctx {driver.n_ctx}, template {model.template_origin}")
    if "overhead" in only:
        bench_overhead(driver, model, args.max_tokens, args.repeats)
    if "session" in only:
        bench_session(driver, model, args.turns, args.session_repeats)
    if "validity" in only:
        bench_validity(driver, model, args.tasks)
    if "grammar" in only:
        bench_grammar(driver, model, args.grammar_tasks, args.max_tokens)
    driver.close()
    if "fresh" in only:
        bench_fresh(args.model, model, args.fresh_repeats)


if __name__ == "__main__":
    main()
