"""Prompt-lookup speculation without a model: the drafts, the pacing, and the acceptance
rule, whose law is checked statistically on a small vocabulary against a pure-Python
model of the sampler's step (top-k, top-p, min-p, temperature on fixed logits)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from drivers.llama_speculate import (
    DRAFT_COST,
    K_MAX,
    K_MIN,
    K_START,
    PAUSE_FIRST,
    WINDOW,
    NgramIndex,
    Pacer,
    verify,
)


def test_the_draft_is_what_followed_the_latest_repeat_of_the_end() -> None:
    # "1 2 3 4" early, "1 2 3 9" later: the later occurrence is the one copied.
    index = NgramIndex([1, 2, 3, 4, 5, 0, 1, 2, 3, 9, 8, 7, 6, 1, 2, 3])
    assert index.draft(3) == [9, 8, 7]
    index.extend([9, 8])
    assert index.draft(10) == [7, 6, 1, 2, 3, 9, 8]  # up to the end, never past it


def test_a_longer_match_wins_over_a_more_recent_shorter_one() -> None:
    index = NgramIndex([5, 1, 2, 40, 41, 0, 2, 50, 51, 5, 1, 2])
    assert index.draft(2) == [40, 41]  # "5 1 2" beats the later "... 2"


def test_no_repeat_no_draft_and_a_single_token_is_no_repeat() -> None:
    assert NgramIndex([1, 2, 3, 4]).draft(4) == []
    assert NgramIndex([7, 1, 8, 1]).draft(4) == []  # "1" alone is too weak a match
    assert NgramIndex([]).draft(4) == []


def test_extending_token_by_token_is_building_at_once() -> None:
    rng = np.random.default_rng(3)
    tokens = [int(t) for t in rng.integers(0, 6, 400)]
    whole, grown = NgramIndex(tokens), NgramIndex()
    for t in tokens:
        grown.extend([t])
    assert whole._after == grown._after
    assert whole.draft(8) == grown.draft(8) != []


def test_draft_length_grows_while_drafts_are_taken_and_shrinks_after_a_miss() -> None:
    pacer = Pacer()
    assert pacer.want() == K_START
    pacer.drafted(K_START, K_START)
    assert pacer.want() == K_START + 2
    for _ in range(20):
        pacer.drafted(pacer.k, pacer.k)
    assert pacer.want() == K_MAX
    pacer.drafted(K_MAX, 4)
    assert pacer.want() == 5
    pacer.drafted(5, 0)
    assert pacer.want() == K_MIN  # shorter drafts never pay


def _window(pacer: Pacer, accepted: int) -> None:
    for _ in range(WINDOW):
        pacer.drafted(4, accepted)


def test_drafting_pauses_where_it_does_not_pay_and_longer_each_time() -> None:
    pacer = Pacer()
    _window(pacer, 1)  # one token in four taken: less than the drafts cost
    assert DRAFT_COST * 4 >= 1
    assert [pacer.want() for _ in range(PAUSE_FIRST)] == [0] * PAUSE_FIRST
    assert pacer.want() == K_START
    _window(pacer, 0)
    assert sum(pacer.want() == 0 for _ in range(4 * PAUSE_FIRST)) == 2 * PAUSE_FIRST
    assert pacer.stats["paused"] == 2


def test_drafting_goes_on_where_it_pays() -> None:
    pacer = Pacer()
    for _ in range(5):
        _window(pacer, 3)  # three in four taken
    assert pacer.stats["paused"] == 0 and pacer.want() > 0
    assert pacer.stats == {"drafted": 160, "accepted": 120, "batches": 40, "paused": 0}


def test_verify_keeps_the_agreeing_prefix_and_the_first_disagreeing_draw() -> None:
    asked: list[int] = []
    drawn = [10, 11, 99, 13]

    def sample(j: int) -> int:
        asked.append(j)
        return drawn[j]

    assert list(verify(sample, [10, 11, 12, 13])) == [(10, True), (11, True), (99, False)]
    assert asked == [0, 1, 2]  # nothing drawn past the disagreement


def test_verify_draws_one_past_a_draft_taken_whole_and_stops_at_none() -> None:
    assert list(verify(lambda j: [1, 2, 7][j], [1, 2])) == [(1, True), (2, True), (7, False)]
    assert list(verify(lambda j: None, [1, 2])) == [(None, False)]
    assert list(verify(lambda j: 5, [])) == [(5, False)]


# --- the law of the kept token -------------------------------------------------------

LOGITS = np.array([2.0, 1.6, 1.1, 0.7, 0.2, -0.4, -1.5, -3.0])


def target(logits: np.ndarray, temp: float, top_k: int, top_p: float, min_p: float) -> np.ndarray:
    """The sampler's distribution (llama_sample.Sampler's chain: top-k, top-p, min-p,
    temperature, then a draw), as probabilities over the vocabulary."""
    order = np.argsort(-logits)[:top_k]
    probs = np.exp(logits[order] - logits[order].max())
    probs /= probs.sum()
    keep = int(np.searchsorted(np.cumsum(probs), top_p) + 1)
    order, probs = order[:keep], probs[:keep]
    order = order[probs >= min_p * probs[0]]
    scaled = np.exp((logits[order] - logits[order].max()) / temp)
    p = np.zeros(len(logits))
    p[order] = scaled / scaled.sum()
    return p


def _chi2_ok(counts: Counter[int], p: np.ndarray, n: int) -> bool:
    """Pearson's chi-square at 0.1% (the critical value of 8 classes or fewer is below
    26.2); a cell p says is impossible must be empty."""
    stat = 0.0
    for token, q in enumerate(p):
        if q == 0:
            if counts.get(token):
                return False
            continue
        stat += (counts.get(token, 0) - n * q) ** 2 / (n * q)
    return stat < 26.2


def _draws(p: np.ndarray, seed: int) -> Callable[[int], int]:
    rng = np.random.default_rng(seed)
    return lambda _j: int(rng.choice(len(p), p=p))


@pytest.mark.parametrize("draft", [0, 2, 5, 7])  # likely, middling, cut by top-p, by top-k
def test_the_kept_token_has_the_samplers_law_whatever_was_drafted(draft: int) -> None:
    p = target(LOGITS, temp=0.8, top_k=6, top_p=0.95, min_p=0.05)
    sample = _draws(p, seed=draft)
    n = 20000
    kept: Counter[int] = Counter()
    rejected: Counter[int] = Counter()
    accepted = 0
    for _ in range(n):
        token, agreed = next(verify(sample, [draft]))
        kept[token] += 1
        accepted += agreed
        if not agreed:
            rejected[token] += 1
    assert _chi2_ok(kept, p, n)
    # Accepted with probability p(x): within five standard deviations.
    assert abs(accepted / n - p[draft]) <= 5 * math.sqrt(p[draft] * (1 - p[draft]) / n) + 1e-9
    # On rejection: p without x, renormalised (the standard rule's residual).
    if p[draft] < 1:
        residual = p.copy()
        residual[draft] = 0.0
        residual /= residual.sum()
        assert _chi2_ok(rejected, residual, n - accepted)


def test_the_second_position_is_drawn_only_after_the_first_is_taken() -> None:
    """Two positions: the pair kept has the law of drawing twice in a row."""
    p1 = target(LOGITS, 0.8, 6, 0.95, 0.05)
    p2 = target(LOGITS[::-1].copy(), 0.8, 6, 0.95, 0.05)
    rngs = np.random.default_rng(11)

    def sample(j: int) -> int:
        return int(rngs.choice(8, p=p1 if j == 0 else p2))

    n = 20000
    seconds: Counter[int] = Counter()
    for _ in range(n):
        out = list(verify(sample, [0, 3]))
        if out[0] == (0, True):
            seconds[out[1][0]] += 1
    assert _chi2_ok(seconds, p2, sum(seconds.values()))
    assert abs(sum(seconds.values()) / n - p1[0]) < 0.02


def test_the_model_of_the_sampler_is_a_distribution() -> None:
    p = target(LOGITS, 0.8, 6, 0.95, 0.05)
    assert abs(p.sum() - 1) < 1e-12 and p[7] == 0 and p[6] == 0 and (p[:3] > 0).all()
