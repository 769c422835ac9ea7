"""Prompt-lookup speculation for the in-process driver: drafts, verification, pay-off.

A coding agent's reply copies from its prompt (a file rewritten with a small change, an
edit's `old` string, paths it just read). The tokens that followed the reply's last few
tokens the last time they occurred are a good guess at what comes next; evaluating the
guess in one batch costs little more than one token on a CPU, and every agreeing token
is one decode saved.

The drafter is bosun's own, not llama-cpp-python's `LlamaPromptLookupDecoding`: that one
rescans the whole context with numpy at every step (O(n) per token, and the context of an
agent turn is thousands of tokens) and proposes the EARLIEST occurrence of the n-gram,
usually in the system prompt's tool descriptions, where an agent copies what it read
last. `NgramIndex` keeps, per n-gram, its most recent position, updated in O(1) a token.

Verification (`verify`) is exact: each kept token is drawn from the logits the model
gives at its position, by the same sampler. What is not the same is how llama.cpp
rounds a batch: a single token's attention splits the keys across threads (CPU flash
attention, from 512 KV cells), several rows' matmuls take other kernels, so a
position's logits in a batch differ from its logits alone by up to a few tenths on the
bundled models. Greedy replies with and without speculation are the same tokens until
the model's two best tokens are that close, and may part there, as with llama.cpp's and
vLLM's own speculation (tests/drivers/test_speculation_model.py measures the margin
where they part). The pacing is counted, not timed, so one prompt always gets the same
batches and the same reply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

# auto: where batches are cheap (layers offloaded to a GPU); on a CPU a batch of 4 costs
# about 3 single steps (below), which copying rarely wins back: `on` asks for it anyway.
SPECULATE_MODES = ("auto", "on", "off")
# Longest n-gram first: a longer match is a better guess; a single token is too weak.
NGRAM_MAX = 3
NGRAM_MIN = 2
K_START = 6
K_MAX = 12
# A batch of 1 + d tokens costs about 1 + d * DRAFT_COST single-token steps and gives
# 1 + accepted tokens. Measured on a 2-core CPU at an 800-token context (SmolLM2 /
# Gemma 3 270M): 2 tokens 1.9x / 2.0x one token, 4: 2.9x / 2.8x, 8: 4.4x / 3.7x, 12:
# 6.0x / 4.6x; so a draft shorter than K_MIN never pays there (far cheaper on a GPU).
# A window of WINDOW batches whose accepted tokens did not cover their drafts' cost
# switches drafting off for PAUSE_FIRST tokens, doubling each time up to PAUSE_MAX.
K_MIN = 3
DRAFT_COST = 0.5
WINDOW = 8
PAUSE_FIRST = 32
PAUSE_MAX = 1024


class NgramIndex:
    """The context (prompt and reply so far) and, for every n-gram in it, the position of
    the token that followed its latest occurrence."""

    def __init__(self, tokens: Sequence[int] = ()) -> None:
        self.tokens: list[int] = []
        self._after: dict[tuple[int, ...], int] = {}
        self.extend(tokens)

    def extend(self, tokens: Sequence[int]) -> None:
        for token in tokens:
            self.tokens.append(token)
            # The n-grams that end just before the new token now have a continuation.
            end = len(self.tokens) - 1
            for n in range(NGRAM_MIN, NGRAM_MAX + 1):
                if end >= n:
                    self._after[tuple(self.tokens[end - n : end])] = end

    def draft(self, k: int) -> list[int]:
        """Up to k tokens that followed the longest recent repeat of the context's end."""
        tokens = self.tokens
        for n in range(NGRAM_MAX, NGRAM_MIN - 1, -1):
            if len(tokens) <= n:
                continue
            at = self._after.get(tuple(tokens[-n:]))
            if at is not None:
                return tokens[at : at + k]
        return []


class Pacer:
    """How many tokens to draft next: more while drafts are taken whole, fewer after a
    miss, none for a while where drafting has not paid.

    Counted in tokens, not timed: the same prompt gets the same batches every run, so a
    reply does not depend on how busy the machine was (batches round differently from
    single tokens: see the module docstring)."""

    def __init__(self) -> None:
        self.k = K_START
        self.pause = 0  # plain steps left before drafting again
        self._next_pause = PAUSE_FIRST
        self._drafted = self._accepted = self._batches = 0  # this window
        self.stats = {"drafted": 0, "accepted": 0, "batches": 0, "paused": 0}

    def want(self) -> int:
        if self.pause > 0:
            self.pause -= 1
            return 0
        return self.k

    def drafted(self, drafted: int, accepted: int) -> None:
        """A batch of the last token and `drafted` guesses, of which `accepted` agreed."""
        self.stats["drafted"] += drafted
        self.stats["accepted"] += accepted
        self.stats["batches"] += 1
        self.k = min(K_MAX, self.k + 2) if accepted == drafted else max(K_MIN, accepted + 1)
        self._drafted += drafted
        self._accepted += accepted
        self._batches += 1
        if self._batches < WINDOW:
            return
        if self._accepted <= DRAFT_COST * self._drafted:  # the window lost time
            self.pause = self._next_pause
            self._next_pause = min(PAUSE_MAX, self._next_pause * 2)
            self.stats["paused"] += 1
            self.k = K_START
        else:
            self._next_pause = PAUSE_FIRST
        self._drafted = self._accepted = self._batches = 0


def verify(
    sample: Callable[[int], int | None], draft: Sequence[int]
) -> Iterator[tuple[int | None, bool]]:
    """Draw the tokens of one batch (the last token, then `draft`): for position j,
    `sample(j)` draws from the logits after the batch's first j+1 tokens; yields
    (token, agreed) and stops after the first token that is not the draft's.

    This is the standard speculative-sampling rule for a point-mass draft. For a draft
    distribution q that puts all its mass on x, the rule accepts x with probability
    min(1, p(x)/q(x)) = p(x) and, on rejection, draws from norm(max(0, p - q)) = p with
    x removed and renormalised. Drawing y ~ p and accepting when y == x has the same
    law: P(accept) = p(x), and given y != x, y is distributed as p(y) / (1 - p(x)), which
    is p without x, renormalised. So the token kept at every position is a draw from the
    sampler's own distribution (temperature, top-k/top-p/min-p and the grammar applied as
    without speculation), and positions after a disagreement are never drawn: the
    output has exactly the law of one-token-at-a-time decoding. Under greedy decoding it
    is the same tokens, and with a seeded sampler the same draws in the same order.

    The sampler's grammar advances only with kept tokens (each drawn token is kept),
    so nothing of it needs undoing after a rejection. A None draw (the grammar allows no
    token) is yielded as it is and ends the batch.
    """
    for j in range(len(draft) + 1):
        token = sample(j)
        agreed = j < len(draft) and token == draft[j]
        yield token, agreed
        if not agreed:
            return
