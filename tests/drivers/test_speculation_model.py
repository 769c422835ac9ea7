"""Prompt-lookup speculation on the real bundled models: greedy replies with and without
it agree for the kinds of reply an agent writes, and the rejection path (a draft the
model disagrees with) leaves the KV cache and the token record as plain decoding would.

llama.cpp rounds a batch differently from single tokens (drivers/llama_speculate.py), so
"agree" is measured: the replies are the same tokens, or part where plain decoding's two
best logits were within NEAR_TIE of each other. A verification bug (a wrong logits row,
a draft kept that the model did not draw, a stale KV tail) parts them where the model
was sure. Flash attention is off here: it widens the rounding difference."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from agent.history import AssistantToolUse, System, ToolCall, ToolResult, User
from agent.protocol.profile import profile_for
from agent.tools import default_registry
from drivers.base import Request, UsageError, collect

pytest.importorskip("llama_cpp")
pytestmark = pytest.mark.model

SOURCE = '''def parse_size(text: str) -> int:
    """'10k' -> 10240, '3M' -> 3145728, '512' -> 512."""
    units = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
    text = text.strip().lower()
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def format_size(n: int) -> str:
    for unit in ("", "k", "M", "G"):
        if n < 1024:
            return f"{n}{unit}"
        n //= 1024
    return f"{n}T"
'''


def _read(path: str, content: str) -> list[Any]:
    call = ToolCall("call_1", "read_file", {"path": path})
    return [AssistantToolUse(call), ToolResult("call_1", content)]


def _prompts(model: str) -> dict[str, tuple[str, str | None]]:
    """Reply kinds -> (prompt, grammar). The copy and the edit are started in the
    prompt (the call's opening), so the model is writing the argument when it begins."""
    profile = profile_for(model)
    specs = default_registry().specs()
    system = System("You are a coding agent. Use the tools.")

    def render(*messages: Any) -> str:
        return profile.render([system, *messages], specs)

    copy = render(User("Copy sizes.py to sizes_copy.py."), *_read("sizes.py", SOURCE))
    opening = '<tool_call>\n{"name": "write_file", "arguments": {"path": "sizes_copy.py", '
    copy += opening + '"content": ' + json.dumps(SOURCE[:40])[:-1]
    edit = render(User("In sizes.py rename parse_size to size_of."), *_read("sizes.py", SOURCE))
    edit += '<tool_call>\n{"name": "edit_file", "arguments": {"path": "sizes.py", "old": "'
    grammar = profile.grammars(specs)[0]
    return {
        "prose": (render(User("Tell me a short story about a lighthouse.")), None),
        "write_file copy": (copy, None),
        "edit": (edit, None),
        "grammar call": (render(User("Read sizes.py and tell me what it does.")), grammar),
    }


def _reply(driver: Any, mode: str, prompt: str, grammar: str | None, n: int = 80) -> list[str]:
    driver.speculate = mode
    chunks = list(driver.stream(Request(prompt, max_tokens=n, grammar=grammar)))
    return [c.text for c in chunks]


# Measured partings (flash attention off): at margins of 0.03 and 0.22 logits.
NEAR_TIE = 0.5


class _Recorder:
    """Every token the sampler draws, with the margin of the best logit over the next."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import llama_cpp
        import numpy as np

        from drivers import llama_sample

        self.drawn: list[tuple[int | None, float]] = []
        original = llama_sample.Sampler.sample

        def sample(sampler: Any, at: int = -1) -> int | None:
            logits = llama_cpp.llama_get_logits_ith(sampler._ctx, at)
            row = np.ctypeslib.as_array(logits, shape=(sampler.n_vocab,))
            second, first = np.partition(row, -2)[-2:]
            token = original(sampler, at)
            self.drawn.append((token, float(first - second)))
            return token

        monkeypatch.setattr(llama_sample.Sampler, "sample", sample)

    def run(self, driver: Any, mode: str, prompt: str, grammar: str | None, n: int = 80) -> Any:
        self.drawn = []
        text = _reply(driver, mode, prompt, grammar, n)
        return text, list(self.drawn)


def _agree_up_to_a_near_tie(plain: Any, fast: Any) -> None:
    (plain_text, plain_drawn), (fast_text, fast_drawn) = plain, fast
    tokens = [t for t, _ in plain_drawn], [t for t, _ in fast_drawn]
    parted = next((i for i, (a, b) in enumerate(zip(*tokens, strict=False)) if a != b), None)
    if parted is None:
        assert fast_text == plain_text  # chunk for chunk: stops and held-back text alike
        return
    margin = plain_drawn[parted][1]
    assert margin < NEAR_TIE, f"parted at token {parted}, where the best led by {margin:.3f}"


@pytest.fixture(scope="module")
def smollm() -> Iterator[Any]:
    from drivers.llama_cpp import open_llama

    d = open_llama("smollm2-135m", prefix_cache=False, flash_attn=False)
    yield d
    d.close()


@pytest.mark.parametrize("kind", ["prose", "write_file copy", "edit", "grammar call"])
def test_greedy_replies_are_the_same_with_and_without_speculation(
    smollm, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    prompt, grammar = _prompts(smollm.model)[kind]
    record = _Recorder(monkeypatch)
    plain = record.run(smollm, "off", prompt, grammar)
    assert smollm.last_speculation["batches"] == 0
    fast = record.run(smollm, "on", prompt, grammar)
    _agree_up_to_a_near_tie(plain, fast)
    if kind == "write_file copy":  # a copy does get its drafts taken
        assert smollm.last_speculation["accepted"] > 10, smollm.last_speculation
    else:  # the others were verified too
        assert smollm.last_speculation["batches"] > 0, smollm.last_speculation


def test_the_same_reply_streams_whether_speculation_saves_time_or_not(
    smollm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stops and max_tokens fall inside a verified batch: the cut is where plain
    decoding cuts, and usage counts the tokens given out, not the tokens drafted."""
    prompt, _ = _prompts(smollm.model)["write_file copy"]
    record = _Recorder(monkeypatch)
    for stop, n in (("\\n", 60), ("", 37)):
        stops = (stop,) if stop else ()
        replies = []
        for mode in ("off", "on"):
            smollm.speculate = mode
            record.drawn = []
            replies.append((collect(smollm.stream(Request(prompt, stop=stops, max_tokens=n))),
                            list(record.drawn)))  # fmt: skip
        (plain, plain_drawn), (fast, fast_drawn) = replies
        assert smollm.last_speculation["batches"] > 0
        if [t for t, _ in plain_drawn] != [t for t, _ in fast_drawn]:
            _agree_up_to_a_near_tie((plain.text, plain_drawn), (fast.text, fast_drawn))
            continue
        assert (fast.text, fast.finish_reason) == (plain.text, plain.finish_reason)
        assert fast.usage.completion_tokens == plain.usage.completion_tokens


class _Forced:
    """Drafts chosen by the test from the reply plain decoding gave: each guess right,
    or each guess wrong (every token shifted by one: the rejection path every batch)."""

    def __init__(self, script: list[int], wrong: bool) -> None:
        self.script = [t + 1 for t in script] if wrong else script
        self.produced = 0

    def __call__(self, tokens: Any = ()) -> _Forced:
        self.produced = 0
        return self

    def extend(self, tokens: Any) -> None:
        self.produced += len(tokens)

    def draft(self, k: int) -> list[int]:
        return self.script[self.produced : self.produced + k]


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_rejected_drafts_are_cut_from_the_cache(
    smollm, monkeypatch: pytest.MonkeyPatch, temperature: float
) -> None:
    """Every draft wrong (each batch verified, its tail cut), or every draft right: the
    cache then holds the prompt and the reply drawn (but its last token, never
    evaluated), nothing drafted, so the next call's cached prefix is right; greedy, the
    reply is plain decoding's."""
    import llama_cpp

    import drivers.llama_cpp as module

    prompt, _ = _prompts(smollm.model)["write_file copy"]
    tokens = smollm.tokenize(prompt)
    record = _Recorder(monkeypatch)
    smollm.temperature = temperature
    try:
        plain = record.run(smollm, "off", prompt, None, 40)
        monkeypatch.setattr(module.Pacer, "want", lambda self: 6)
        for wrong in (True, False):
            monkeypatch.setattr(module, "NgramIndex", _Forced([t for t, _ in plain[1]], wrong))
            fast = record.run(smollm, "on", prompt, None, 40)
            stats = smollm.last_speculation
            assert stats["batches"] > (30 if wrong else 4), stats
            if wrong:  # a shifted token can still be drawn when sampling
                assert stats["accepted"] <= (0 if temperature == 0.0 else 3), stats
            elif temperature == 0.0:  # sampled, a reply that parts misaligns the script
                assert stats["accepted"] > 10, stats
            drawn = [t for t, _ in fast[1]]
            assert list(smollm.llm.input_ids[: smollm.llm.n_tokens]) == tokens + drawn[:-1]
            memory = smollm.llm._ctx.memory
            assert llama_cpp.llama_memory_seq_pos_max(memory, 0) == smollm.llm.n_tokens - 1
            if temperature == 0.0:
                _agree_up_to_a_near_tie(plain, fast)
    finally:
        smollm.temperature = 0.0


def test_gemma_replies_are_the_same_with_and_without_speculation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from drivers.llama_cpp import open_llama

    try:
        gemma = open_llama("gemma3-270m", prefix_cache=False, flash_attn=False)
    except UsageError as exc:
        pytest.skip(f"Gemma 3 270M is not installed: {exc}")
    record = _Recorder(monkeypatch)
    try:
        prompts = _prompts(gemma.model)
        for kind in ("write_file copy", "grammar call"):
            prompt, grammar = prompts[kind]
            plain = record.run(gemma, "off", prompt, grammar, 60)
            fast = record.run(gemma, "on", prompt, grammar, 60)
            _agree_up_to_a_near_tie(plain, fast)
    finally:
        gemma.close()
