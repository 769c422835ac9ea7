"""Strict replay of recorded completions, for tests and demos.

Like openai-agents' scripted model: an unexpected extra call is an error, leftover
completions fail `assert_complete()`, and every prompt is recorded so a test can assert
what the model *saw* on turn 2.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drivers.base import (
    Chunk,
    DriverError,
    DriverInfo,
    Halt,
    Request,
    Usage,
    UsageError,
    common_prefix,
    halting,
    interrupted,
    never,
)

_TOKEN = re.compile(r"\w+|[^\w\s]")


def approx_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: words and punctuation marks."""
    return sum(1 for _ in _TOKEN.finditer(text))


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


class ScriptExhausted(DriverError):
    """The runtime asked for more completions than the script holds."""


@dataclass(frozen=True)
class ScriptStep:
    completion: str
    chunks: tuple[str, ...]
    finish_reason: str = "stop"
    delay_ms: float = 0.0  # pause before each chunk: lets tests interrupt or kill mid-stream
    stopped_by: str | None = None  # the stop string / end token a real backend hit
    # Not in sequence: the answer to any prompt containing this text (a summary request,
    # whenever the session compacts), however often it comes.
    match: str | None = None


RecordedCall = Request  # a call is recorded as the request it was


def _step_from(data: Any, where: str) -> ScriptStep:
    if not isinstance(data, dict):
        raise UsageError(f'{where}: expected a JSON object with a "completion" string')
    completion = data.get("completion")
    chunks = data.get("chunks")
    if chunks is not None:
        if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
            raise UsageError(f'{where}: "chunks" must be a list of strings')
        if completion is None:
            completion = "".join(chunks)
        elif "".join(chunks) != completion:
            raise UsageError(f'{where}: "chunks" do not add up to "completion"')
    if not isinstance(completion, str):
        raise UsageError(f'{where}: expected a JSON object with a "completion" string')
    finish = data.get("finish_reason", "stop")
    if finish not in ("stop", "length"):
        raise UsageError(f'{where}: "finish_reason" must be "stop" or "length"')
    delay = data.get("delay_ms", 0)
    if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
        raise UsageError(f'{where}: "delay_ms" must be a number of milliseconds >= 0')
    stopped_by = data.get("stopped_by")
    if stopped_by is not None and not isinstance(stopped_by, str):
        raise UsageError(f'{where}: "stopped_by" must be a string')
    match = data.get("match")
    if match is not None and (not isinstance(match, str) or not match):
        raise UsageError(f'{where}: "match" must be a non-empty string')
    pieces = tuple(chunks) if chunks is not None else (completion,)
    return ScriptStep(completion, pieces, finish, float(delay), stopped_by, match)


def load_script(path: str | os.PathLike[str]) -> list[ScriptStep]:
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"scripted model file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read scripted model file {p}: {exc}") from None
    steps: list[ScriptStep] = []
    for lineno, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{p}:{lineno}: not valid JSON ({exc.msg})") from None
        steps.append(_step_from(data, f"{p}:{lineno}"))
    return steps


@dataclass
class ScriptedDriver:
    """Replays `steps` in order; `source` is a JSONL path or a list of step dicts."""

    source: str | os.PathLike[str] | Sequence[dict[str, Any]]
    model: str = "scripted"
    n_ctx: int | None = None  # a context size makes prompts that do not fit an error
    info: DriverInfo = field(init=False)
    steps: list[ScriptStep] = field(init=False)
    answers: list[ScriptStep] = field(init=False)  # the `match` steps
    calls: list[RecordedCall] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        if isinstance(self.source, str | os.PathLike):
            steps = load_script(self.source)
        else:
            steps = [_step_from(d, f"step {i + 1}") for i, d in enumerate(self.source)]
        self.steps = [s for s in steps if s.match is None]
        self.answers = [s for s in steps if s.match is not None]
        # Data spans are recorded, so tests see what a real tokenizer would get; tokens
        # are approx_tokens' words and marks, the same count the usage reports.
        self.info = DriverInfo(data_spans=True, n_ctx=self.n_ctx, tokenize=_tokens, fresh=self.copy)

    def copy(self) -> ScriptedDriver:
        """The same script from its first step: each batch task replays its own."""
        return ScriptedDriver(self.source, model=self.model, n_ctx=self.n_ctx)

    @property
    def prompts(self) -> list[str]:
        return [c.prompt for c in self.calls]

    @property
    def remaining(self) -> int:
        return len(self.steps) - len(self.calls)

    def stream(self, request: Request, *, halt: Halt = never) -> Iterator[Chunk]:
        # `head` is ignored: a replay evaluates nothing, so there is nothing to keep
        prompt = request.prompt
        size = approx_tokens(prompt)
        if self.n_ctx is not None and size >= self.n_ctx:
            raise DriverError(
                f"the prompt is {size} tokens but the context holds {self.n_ctx};"
                " start a new session or raise the context size"
            )
        answer = next((s for s in self.answers if s.match and s.match in prompt), None)
        if answer is not None:
            return halting(self._replay(answer, prompt, ""), halt, interrupted)
        n = len(self.calls)
        if n >= len(self.steps):
            raise ScriptExhausted(
                f"scripted driver: unexpected call {n + 1}; the script has {len(self.steps)}"
            )
        previous = self.calls[-1].prompt if self.calls else ""
        self.calls.append(request)
        return halting(self._replay(self.steps[n], prompt, previous), halt, interrupted)

    def _replay(self, step: ScriptStep, prompt: str, previous: str) -> Iterator[Chunk]:
        start = time.perf_counter()
        for piece in step.chunks:
            if step.delay_ms:
                time.sleep(step.delay_ms / 1000)
            if piece:
                yield Chunk(piece)
        shared = common_prefix(previous, prompt)
        usage = Usage(
            prompt_tokens=approx_tokens(prompt),
            cached_tokens=approx_tokens(prompt[:shared]),
            completion_tokens=approx_tokens(step.completion),
            ms=(time.perf_counter() - start) * 1000,
        )
        yield Chunk("", usage=usage, finish_reason=step.finish_reason, stopped_by=step.stopped_by)

    def assert_complete(self) -> None:
        if self.remaining:
            raise AssertionError(
                f"scripted driver: {self.remaining} of {len(self.steps)} completions unused"
            )

    def close(self) -> None:
        return None
