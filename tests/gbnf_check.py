"""Judge GBNF grammars with llama.cpp's own grammar engine.

Tests of the grammars bosun writes must ask the engine that will enforce them at decode
time, not a Python reimplementation of GBNF: a reimplementation agrees with itself, and
the bugs that matter are where it and llama.cpp part ways (escapes, character classes,
repetition, UTF-8). So `grammar_accepts` runs text through llama.cpp's grammar sampler
one token at a time, exactly as decoding would, and then asks whether the grammar lets
the model stop there.

Only the bundled SmolLM2 vocabulary is loaded (no weights, no context), once per process.
The grammar engine matches each token's text character by character (partial UTF-8 at a
token's end included), so the verdict does not depend on where the tokenizer cut the text.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import math
from typing import Any


@functools.cache
def _model() -> Any:
    """The bundled SmolLM2 loaded vocabulary-only, kept for the life of the process."""
    import llama_cpp.llama_cpp as low

    from drivers.bundled import resolve_model
    from drivers.llama_load import _without_extra_buffer_types

    path, _ = resolve_model("smollm2-135m")
    low.llama_backend_init()
    # The loader's metadata dump goes through llama-cpp-python's logger; errors only.
    logger = logging.getLogger("llama-cpp-python")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with _without_extra_buffer_types():
            params = low.llama_model_default_params()
            params.vocab_only = True
            model = low.llama_model_load_from_file(str(path).encode("utf-8"), params)
    finally:
        logger.setLevel(level)
    if not model:
        raise RuntimeError(f"cannot load the vocabulary of {path}")
    return model


@functools.cache
def _vocab() -> Any:
    import llama_cpp.llama_cpp as low

    return low.llama_model_get_vocab(_model())


@functools.cache
def _end_token() -> int:
    import llama_cpp.llama_cpp as low

    vocab = _vocab()
    token = int(low.llama_vocab_eos(vocab))
    if token < 0:
        token = int(low.llama_vocab_eot(vocab))
    if token < 0 or not low.llama_vocab_is_eog(vocab, token):
        raise RuntimeError("the bundled vocabulary has no end-of-generation token")
    return token


def _tokenize(text: str) -> list[int]:
    """Plain text -> tokens: no BOS, and "<|im_end|>" in `text` stays plain characters."""
    import llama_cpp.llama_cpp as low

    data = text.encode("utf-8")
    size = len(data) + 8
    while True:
        buf = (low.llama_token * size)()
        n = low.llama_tokenize(_vocab(), data, len(data), buf, size, False, False)
        if n >= 0:
            return list(buf[:n])
        size = -n


def _sampler(grammar: str) -> Any:
    import llama_cpp.llama_cpp as low

    sampler = low.llama_sampler_init_grammar(_vocab(), grammar.encode("utf-8"), b"root")
    if not sampler:
        raise ValueError("llama.cpp cannot parse the grammar")
    return sampler


def grammar_parses(grammar: str) -> bool:
    """Does llama.cpp accept `grammar` (GBNF, start rule `root`) at all?"""
    import llama_cpp.llama_cpp as low

    try:
        sampler = _sampler(grammar)
    except ValueError:
        return False
    low.llama_sampler_free(sampler)
    return True


def grammar_accepts(grammar: str, text: str) -> bool:
    """Is `text` a complete sentence of `grammar`, by llama.cpp's grammar sampler?

    Each token of `text` is offered alone (logit 0) and must survive the sampler's mask
    before it is accepted; at the end the end-of-generation token must survive it too.
    Raises ValueError when llama.cpp cannot parse the grammar.
    """
    import llama_cpp.llama_cpp as low

    tokens = _tokenize(text)
    sampler = _sampler(grammar)
    candidate: Any = low.llama_token_data()
    candidates: Any = low.llama_token_data_array(
        data=ctypes.pointer(candidate), size=1, selected=-1, sorted=False
    )

    def allowed(token: int) -> bool:
        candidate.id = token
        candidate.logit = 0.0
        candidate.p = 0.0
        candidates.data = ctypes.pointer(candidate)  # samplers may repoint it
        candidates.size = 1
        low.llama_sampler_apply(sampler, ctypes.byref(candidates))
        return not math.isinf(candidates.data[0].logit)

    try:
        for token in tokens:
            if not allowed(token):
                return False
            low.llama_sampler_accept(sampler, token)
        return allowed(_end_token())
    finally:
        low.llama_sampler_free(sampler)
