"""In-process llama-cpp-python: the embedded default backend.

bosun drives the token loop itself (`Llama.generate`) instead of `create_completion`
because it needs three things that API hides: special tokens kept in the text (Harmony
and Qwen markers must reach the parser intact), an exact count of the prompt tokens the
KV cache already held, and stop strings matched without losing a token.

A fresh session starts warm: the head every session's prompt begins with (system prompt
and tools, which the agent marks with `head=`) is evaluated once, its KV state saved
(`drivers.prefix_cache`), and loaded by later sessions instead of evaluated again.
That cache is an optimisation: whatever goes wrong with it (a full disk, a damaged or
refused state, a writer racing on the same head) costs a cold start and one warning
(`Chunk.notices`), never the call, and the usage counts what was really evaluated.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from drivers import llama_log
from drivers.base import (
    Chunk,
    DriverError,
    DriverInfo,
    Halt,
    Request,
    Usage,
    UsageError,
    common_prefix,
    never,
    partial_suffix,
)
from drivers.bundled import resolve_model
from drivers.llama_load import cores, gpu_offload_supported, load_llama
from drivers.llama_sample import Sampler
from drivers.llama_speculate import K_MIN, SPECULATE_MODES, NgramIndex, Pacer, verify
from drivers.llama_state import open_prefix_cache, restore, snapshot
from drivers.llama_tokens import VocabText
from drivers.prefix_cache import Saved

DEFAULT_CTX = 8192
# A head shorter than this is quicker to evaluate than to read back from a file.
MIN_HEAD_TOKENS = 32
# Prompt evaluation in slices of about this long, so a stop request is seen between them
# (bench/interrupt_bench.py measures the latency): the first slice is PREFILL_FIRST
# tokens, the rest sized from the speed measured.
PREFILL_SLICE_S = 0.1
PREFILL_FIRST = 16

_T = TypeVar("_T")


class LlamaDriver:
    def __init__(
        self,
        path: Path,
        *,
        model: str | None = None,
        n_ctx: int | None = None,
        n_gpu_layers: int | None = None,
        n_threads: int | None = None,
        temperature: float = 0.0,
        prefix_cache: bool = True,
        speculate: str = "auto",
        flash_attn: bool = True,
    ) -> None:
        if speculate not in SPECULATE_MODES:
            raise UsageError(f"speculate must be one of {', '.join(SPECULATE_MODES)}")
        if not path.is_file():
            raise UsageError(f"model file not found: {path}")
        self.path = path
        self.model = model or path.stem
        self.temperature = temperature
        self.speculate = speculate
        gpu = n_gpu_layers if n_gpu_layers is not None else (-1 if gpu_offload_supported() else 0)
        threads = n_threads or cores()
        self._offloaded = gpu != 0
        wanted = n_ctx or DEFAULT_CTX
        try:
            self.llm = load_llama(
                path, n_ctx=wanted, n_gpu_layers=gpu, n_threads=threads, flash_attn=flash_attn
            )
            trained = int(self.llm._model.n_ctx_train())
            if n_ctx is None and 0 < trained < wanted:
                self.llm.close()
                self.llm = load_llama(
                    path, n_ctx=trained, n_gpu_layers=gpu, n_threads=threads, flash_attn=flash_attn
                )
        except (ValueError, RuntimeError) as exc:
            raise UsageError(f"cannot load model {path}: not a usable GGUF file ({exc})") from None
        # llama.cpp pads the context (1400 -> 1536) but llama-cpp-python's token arrays
        # hold what was asked for: a prompt in between fits one and overflows the other
        # (numpy's "could not broadcast" on every later call). The smaller one counts.
        self.n_ctx = min(int(self.llm.n_ctx()), len(self.llm.input_ids))
        self.prefix_cache = open_prefix_cache(self.llm, path, self.model) if prefix_cache else None
        self.info = DriverInfo(
            grammar=True,
            data_spans=True,  # stream(..., data=spans): see tokenize
            n_ctx=self.n_ctx,
            n_params=int(self.llm._model.n_params()),
            tokenize=self.tokenize,
            prefix_cache=self.prefix_cache is not None,
            speculate=speculate,
        )
        self._vocab = VocabText(self.llm)
        self._piece = self._vocab.piece
        self._as_data = self._vocab.as_data
        self._head_memo: tuple[tuple[str, tuple[tuple[int, int], ...]], list[int]] | None = None
        # Prompt-cache faults not yet said, and the kinds already said: a full disk is
        # one warning for the driver's life, not one per call.
        self._faults: list[tuple[str, str]] = []
        self._told: set[str] = set()
        self._halt: Halt | None = None  # asked by llama.cpp during a prompt's decode
        self._aborted = False  # the callback said stop during the current decode
        self._abort = self._abortable()
        # How the last reply's tokens were drawn (llama_sample.Sampler.stats) and
        # drafted (llama_speculate.Pacer.stats), for benches.
        self.last_sampling: dict[str, int] = {}
        self.last_speculation: dict[str, int] = {}

    def tokenize(self, text: str, data: Sequence[tuple[int, int]] = ()) -> list[int]:
        """Prompt text -> tokens, the template's special tokens parsed as such.

        `data`: [start, end) ranges of `text` that hold message text (agent.protocol.render's
        data_spans): a control token's text inside one ("<|im_end|>" in a file the model
        read) is tokenized as the plain characters it is, so data cannot end a turn.
        """
        # The chat template decides about BOS (Llama 3 and Gemma print it themselves);
        # adding one here as well would give the model two.
        tokens = list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))
        return self._as_data(text, tokens, data) if data else tokens

    def check_grammar(self, grammar: str) -> None:
        """Refuse a grammar llama.cpp cannot parse: a NULL sampler would otherwise be
        chained in silently and generation would run unconstrained."""
        self._sampler(grammar).close()

    def _sampler(self, grammar: str | None) -> Sampler:
        try:
            return Sampler(self.llm, temperature=self.temperature, grammar=grammar)
        except ValueError:
            reason = llama_log.last_error() or "no reason given"
            raise DriverError(f"llama.cpp rejected the tool-call grammar: {reason}") from None

    def _cached_prefix(self, tokens: list[int]) -> int:
        n = common_prefix(self.llm._input_ids[: self.llm.n_tokens], tokens)
        return min(n, len(tokens) - 1)  # llama.cpp re-evaluates the last prompt token

    def _head_tokens(
        self, prompt: str, tokens: list[int], head: int, data: Sequence[tuple[int, int]]
    ) -> int:
        """How many leading prompt tokens are its stable head (`head` characters): the
        head's own tokens, as far as they agree with the prompt's (a token can straddle
        the boundary). 0 when there is nothing worth saving."""
        if self.prefix_cache is None or head <= 0:
            return 0
        memo = (prompt[:head], tuple((a, min(b, head)) for a, b in data if a < head))
        if self._head_memo is None or self._head_memo[0] != memo:  # the same every turn
            self._head_memo = (memo, self.tokenize(*memo))
        n = min(common_prefix(self._head_memo[1], tokens), len(tokens) - 1)
        return n if n >= MIN_HEAD_TOKENS else 0

    def _warm_start(self, tokens: list[int], head: int, halt: Halt) -> int:
        """Have the KV cache hold the prompt's head, as cheaply as it can be had, and
        return how many prompt tokens need no evaluation (usage's cached_tokens).

        In memory first (this session's previous turn, a batch's previous task), else
        the longest saved state the prompt begins with; a head held nowhere is
        evaluated on its own (stoppable, like the rest of the prompt) and saved for the
        next session. Mid-session the head is in memory and no file is touched.
        """
        held = self._cached_prefix(tokens)
        cache = self.prefix_cache
        if head <= held or cache is None:
            return held
        saved = self._cache_step("load", lambda: cache.find(tokens[:-1]))
        if saved is not None and len(saved.tokens) > held:
            held = self._restore(saved)
        if head > held and self._evaluate(tokens, held, head, halt):

            def save() -> None:
                state = snapshot(self.llm)
                if state is not None:
                    cache.store(tokens[:head], state)

            self._cache_step("save", save)
        return held

    def _cache_step(self, kind: str, step: Callable[[], _T]) -> _T | None:
        """One prompt-cache operation, none of whose faults may fail the call: the
        cache's own (kept in its `faults`) and anything unforeseen alike become a
        warning, and the call goes on as a cold start would."""
        try:
            return step()
        except Exception as exc:  # an optimisation's fault is never the run's
            message = f"prompt cache: {kind} failed ({exc!r}); going on without it"
            self._faults.append((kind, message))
            return None
        finally:
            if self.prefix_cache is not None:
                self._faults.extend(self.prefix_cache.take_faults())

    def _restore(self, saved: Saved) -> int:
        """Load a saved state: how many positions the cache now holds (0 when llama.cpp
        refused it, or failed: the cache is then empty, so what is counted as cached was
        really loaded). A refused state is deleted, never offered again."""
        try:
            held = restore(self.llm, saved.tokens, saved.state)
        except Exception as exc:
            held, why = 0, repr(exc)
        else:
            why = "it does not fit this context"
        if held:
            return held
        with contextlib.suppress(Exception):
            self.llm._ctx.kv_cache_clear()
        self.llm.n_tokens = 0
        with contextlib.suppress(OSError):
            saved.path.unlink()
        self._faults.append(
            (
                "load",
                f"prompt cache: llama.cpp refused the saved state {saved.path.name} ({why}); it"
                " was deleted and the head is evaluated instead",
            )
        )
        return 0

    def _notices(self) -> tuple[str, ...]:
        """The faults of this call not said before (one warning per kind)."""
        out = []
        for kind, message in self._faults:
            if kind not in self._told:
                self._told.add(kind)
                out.append(message)
        self._faults.clear()
        return tuple(out)

    def _abortable(self) -> bool:
        """Have llama.cpp ask `self._halt` between the operations of a decode
        (`llama_set_abort_callback`, which llama-cpp-python does not wrap), so a stop
        is seen within milliseconds while the prompt is evaluated in full batches."""
        import llama_cpp

        setter = getattr(llama_cpp.llama_cpp._lib, "llama_set_abort_callback", None)
        if setter is None:
            return False
        setter.argtypes = [ctypes.c_void_p, llama_cpp.ggml_abort_callback, ctypes.c_void_p]
        setter.restype = None

        def asked(_data: object) -> bool:
            # Nothing may be raised into C (ctypes would print it and hand llama.cpp an
            # undefined answer): a Ctrl-C raised in here is a stop like any other.
            try:
                halt = self._halt
                stop = halt is not None and bool(halt())
            except BaseException:
                stop = True
            self._aborted = self._aborted or stop
            return stop

        self._abort_callback = llama_cpp.ggml_abort_callback(asked)  # kept alive here
        setter(self.llm._ctx.ctx, self._abort_callback, None)
        return True

    def _prefill(self, tokens: list[int], halt: Halt) -> bool:
        """Evaluate the prompt (all but its last token, which generation starts from);
        False when halted."""
        pos, end = self._cached_prefix(tokens), len(tokens) - 1
        return pos >= end or self._evaluate(tokens, pos, end, halt)

    def _evaluate(self, tokens: list[int], pos: int, end: int, halt: Halt) -> bool:
        """Evaluate tokens[pos:end] after the `pos` the cache holds, stoppable: through
        llama.cpp's abort callback where it can be set, else in slices of about
        PREFILL_SLICE_S with `halt` asked between them (native code holds a Ctrl-C
        until it returns). False when halted; the cache then holds the batches
        evaluated so far, which the next call reuses."""
        if halt():
            return False
        self.llm.n_tokens = pos  # eval() goes on from here, dropping any stale tail
        if self._abort:
            self._halt, self._aborted = halt, False
            try:
                self.llm.eval(tokens[pos:end])
            except RuntimeError:  # llama_decode returned 2: aborted (or a real failure)
                if self._aborted or halt():
                    return False
                raise
            finally:
                self._halt = None
            return True
        size = PREFILL_FIRST
        while pos < end:
            if halt():
                return False
            n = min(size, end - pos)
            began = time.perf_counter()
            self.llm.eval(tokens[pos : pos + n])
            pos += n
            rate = n / max(time.perf_counter() - began, 1e-6)
            size = max(PREFILL_FIRST, min(int(rate * PREFILL_SLICE_S), self.llm.n_batch))
        return True

    def stream(self, request: Request, *, halt: Halt = never) -> Iterator[Chunk]:
        prompt, data = request.prompt, request.data
        tokens = self.tokenize(prompt, data)
        if len(tokens) >= self.n_ctx:
            raise DriverError(
                f"the prompt is {len(tokens)} tokens but the context holds {self.n_ctx};"
                " start a new session or raise the context size"
            )
        return self._generate(
            tokens,
            list(request.stop),
            min(request.max_tokens, self.n_ctx - len(tokens)),
            request.grammar,
            halt,
            self._head_tokens(prompt, tokens, request.head, data),
        )

    def _generate(
        self,
        tokens: list[int],
        stops: list[str],
        max_tokens: int,
        grammar: str | None,
        halt: Halt,
        head: int = 0,
    ) -> Iterator[Chunk]:
        import llama_cpp

        start = time.perf_counter()
        cached = self._warm_start(tokens, head, halt)
        if not self._prefill(tokens, halt):
            ms = (time.perf_counter() - start) * 1000
            usage = Usage(prompt_tokens=len(tokens), cached_tokens=cached, ms=ms)
            yield Chunk("", usage=usage, finish_reason="interrupted", notices=self._notices())
            return
        sampler = self._sampler(grammar)
        vocab = self.llm._model.vocab
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pending = ""
        finish = "length"
        stopped_by: str | None = None
        produced = 0
        index = NgramIndex(tokens) if self._speculates() else None
        pacer = Pacer()
        # The prompt's last token gives the first logits; each drawn token is evaluated
        # (with a draft behind it, if any) before the next is drawn, never after the last.
        batch = tokens[-1:]
        self.llm.n_tokens = len(tokens) - 1
        try:
            while finish == "length":
                room = min(max_tokens - produced - 1, self.n_ctx - self.llm.n_tokens - 2)
                want = min(pacer.want(), room) if index is not None else 0
                draft = index.draft(want) if index is not None and want >= K_MIN else []
                draft = draft if len(draft) >= K_MIN else []  # too short to pay
                past = self.llm.n_tokens
                self._decode(batch + draft)
                kept = 0  # batch tokens whose KV entries stay: the first, then agreed ones
                for token, _agreed in verify(sampler.sample, draft):
                    kept += 1
                    if halt():
                        finish = "interrupted"
                        break
                    if token is None or llama_cpp.llama_vocab_is_eog(vocab, token):
                        finish = "stop"
                        if token is not None:
                            stopped_by = self._piece(token).decode("utf-8", errors="replace")
                        break
                    produced += 1
                    if index is not None:
                        index.extend((token,))
                    pending += decoder.decode(self._piece(token))
                    hits = [(i, s) for s in stops if s and (i := pending.find(s)) >= 0]
                    if hits:
                        cut, stopped_by = min(hits)
                        if cut:
                            yield Chunk(pending[:cut])
                        pending = ""
                        finish = "stop"
                        break
                    keep = partial_suffix(pending, stops)
                    if len(pending) > keep:
                        yield Chunk(pending[: len(pending) - keep])
                        pending = pending[len(pending) - keep :]
                    if produced >= max_tokens:
                        finish = "done"
                        break
                    batch = [token]
                self._keep(past + kept)
                if draft:
                    pacer.drafted(len(draft), kept - 1)
        finally:
            self.last_sampling = dict(sampler.stats)
            self.last_speculation = dict(pacer.stats)
            sampler.close()
        usage = Usage(
            prompt_tokens=len(tokens),
            cached_tokens=cached,
            completion_tokens=produced,
            ms=(time.perf_counter() - start) * 1000,
        )
        tail = pending + decoder.decode(b"", final=True)
        finish = "length" if finish == "done" else finish
        yield Chunk(
            tail,
            usage=usage,
            finish_reason=finish,
            stopped_by=stopped_by,
            notices=self._notices(),
        )

    def _speculates(self) -> bool:
        """`on`, or `auto` with the model on a GPU (llama_speculate.SPECULATE_MODES)."""
        return self.speculate == "on" or (self.speculate == "auto" and self._offloaded)

    def _decode(self, batch: list[int]) -> None:
        """Evaluate `batch` after the tokens the cache holds, with logits for each of
        its positions (a draft's are verified one by one); what stood after them in the
        cache is dropped first, as `Llama.eval` does."""
        llm = self.llm
        past = llm.n_tokens
        llm._ctx.kv_cache_seq_rm(-1, past, -1)
        llm._batch.set_batch(batch=batch, n_past=past, logits_all=True)
        llm._ctx.decode(llm._batch)
        llm.input_ids[past : past + len(batch)] = batch
        llm.n_tokens = past + len(batch)

    def _keep(self, n: int) -> None:
        """Cut the cache back to its first `n` positions: a draft's rejected tail leaves
        the KV cache and the token record alike, so the next turn's cached prefix
        (`_cached_prefix`) and a saved head see only tokens that were really kept."""
        if n < self.llm.n_tokens:
            self.llm._ctx.kv_cache_seq_rm(-1, n, -1)
            self.llm.n_tokens = n

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.llm.close()


def open_llama(spec: str, **options: Any) -> LlamaDriver:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        raise UsageError(
            "llama-cpp-python is not installed; run ./install.sh (see docs/getting-started.md)"
        ) from None
    path, name = resolve_model(spec)
    return LlamaDriver(path, model=name, **options)
