"""Token sampling for the in-process driver, with a grammar that costs little per token.

llama-cpp-python puts the grammar first in its sampler chain, so every token is checked
against the grammar across the whole vocabulary before top-k narrows it down. For
SmolLM2 (49k tokens) that is tolerable; for Gemma 3 (262k) it made constrained decoding
ten times slower than unconstrained (bench/driver_bench.py, "grammar" table).

So bosun samples the way llama.cpp's own `common_sampler` does: the token is drawn
without the grammar, then checked against it alone; only when the grammar refuses it is
the grammar applied, first to the best CANDIDATES tokens by logit and, when none of
those is allowed, to the whole vocabulary. Under greedy decoding (bosun's default) the
result is exactly what grammar-first gives: the most likely token the grammar allows.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

# How many of the most likely tokens are offered to the grammar before the whole
# vocabulary is: enough that a grammar-allowed token is almost always among them.
CANDIDATES = 256
_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


class Sampler:
    """One generation's sampler: the chain (top-k, top-p, min-p, temperature; or greedy)
    and, when constrained, the grammar, both owned and freed here."""

    def __init__(
        self,
        llm: Any,
        *,
        temperature: float,
        grammar: str | None,
        seed: int = 0xB05,
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
    ) -> None:
        import llama_cpp as ll

        self._ll = ll
        self._ctx = llm._ctx.ctx
        vocab = llm._model.vocab
        self.n_vocab = int(ll.llama_vocab_n_tokens(vocab))
        self.chain = ll.llama_sampler_chain_init(ll.llama_sampler_chain_default_params())
        if temperature <= 0.0:
            ll.llama_sampler_chain_add(self.chain, ll.llama_sampler_init_greedy())
        else:
            for stage in (
                ll.llama_sampler_init_top_k(top_k),
                ll.llama_sampler_init_top_p(top_p, 1),
                ll.llama_sampler_init_min_p(min_p, 1),
                ll.llama_sampler_init_temp(temperature),
                ll.llama_sampler_init_dist(seed),
            ):
                ll.llama_sampler_chain_add(self.chain, stage)
        self.grammar = None
        if grammar is not None:
            self.grammar = ll.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), b"root")
            if not self.grammar:
                self.close()
                raise ValueError("llama.cpp rejected the grammar")
        self._one = (ll.llama_token_data * 1)()
        self._buffer: np.ndarray | None = None
        # How often each path was taken, for the bench.
        self.stats = {"free": 0, "candidates": 0, "vocabulary": 0}

    def sample(self, at: int = -1) -> int | None:
        """The next token after the `at`-th token of the last batch evaluated (-1: its
        last; a speculative batch has logits for each); the grammar (if any) advances.
        None when the grammar allows no token at all (not even an end of turn)."""
        ll = self._ll
        token = int(ll.llama_sampler_sample(self.chain, self._ctx, at))
        if self.grammar is None:
            self.stats["free"] += 1
            return token
        if self._allowed(token):
            self.stats["free"] += 1
        else:
            chosen = self._constrained(at)
            if chosen is None:
                return None
            token = chosen
        ll.llama_sampler_accept(self.grammar, token)
        return token

    def _allowed(self, token: int) -> bool:
        one = self._one
        one[0].id, one[0].logit, one[0].p = token, 1.0, 0.0
        view = self._ll.llama_token_data_array(data=one, size=1, selected=-1, sorted=False)
        self._ll.llama_sampler_apply(self.grammar, ctypes.byref(view))
        return not math.isinf(one[0].logit)

    def _constrained(self, at: int) -> int | None:
        """Grammar, then the chain: over the best CANDIDATES tokens, else over all."""
        logits = np.ctypeslib.as_array(
            self._ll.llama_get_logits_ith(self._ctx, at), shape=(self.n_vocab,)
        )
        if self._buffer is None:
            self._buffer = np.zeros(self.n_vocab, dtype=_TOKEN_DATA)
        if self.n_vocab > CANDIDATES:
            best = np.argpartition(logits, self.n_vocab - CANDIDATES)[-CANDIDATES:]
            token = self._pick(best.astype(np.intc), logits[best])
            if token is not None:
                self.stats["candidates"] += 1
                return token
        self.stats["vocabulary"] += 1
        return self._pick(np.arange(self.n_vocab, dtype=np.intc), logits)

    def _pick(self, ids: np.ndarray, logits: np.ndarray) -> int | None:
        ll = self._ll
        assert self._buffer is not None
        n = len(ids)
        data = self._buffer[:n]
        data["id"], data["logit"], data["p"] = ids, logits, 0.0
        pointer = data.ctypes.data_as(ll.llama_token_data_p)
        view = ll.llama_token_data_array(data=pointer, size=n, selected=-1, sorted=False)
        ll.llama_sampler_apply(self.grammar, ctypes.byref(view))
        if not np.isfinite(data["logit"]).any():
            return None
        ll.llama_sampler_apply(self.chain, ctypes.byref(view))
        if not 0 <= view.selected < view.size:
            return None
        return int(view.data[view.selected].id)

    def close(self) -> None:
        for sampler in (self.chain, self.grammar):
            if sampler:
                self._ll.llama_sampler_free(sampler)
        self.chain = self.grammar = None
