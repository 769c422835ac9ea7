"""A llama.cpp context's KV state in and out, for the prefix cache (`drivers.prefix_cache`).

Only sequence 0's KV cells are saved (`llama_state_seq_*`): no logits, no sampler, no
copy of the n_ctx-sized token and score arrays `Llama.save_state` carries (its scores
alone would be hundreds of MB). A state saved after exactly the head's tokens is all a
later prompt that begins with those tokens needs: `Llama.generate` finds them as its
cached prefix and evaluates only the rest, so the last token's logits are always fresh.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

from drivers.prefix_cache import PrefixCache

# How the context was built: a state saved under other settings either does not load or
# does not hold the same numbers, so each of these is part of a saved state's key.
CONTEXT_KEY = (
    "n_ctx",
    "n_batch",
    "n_ubatch",
    "n_seq_max",
    "flash_attn_type",
    "type_k",
    "type_v",
    "offload_kqv",
    "swa_full",
    "kv_unified",
)


def _plain(value: Any) -> Any:
    """A context parameter as JSON (ctypes hands out ints, bools or None)."""
    return value if value is None or isinstance(value, bool | int | float | str) else str(value)


def state_key(llm: Any, path: Path) -> dict[str, Any]:
    """What a saved KV state depends on besides its tokens: the model file (path, size
    and mtime; hashing gigabytes at every start would cost more than a warm start
    saves), how the context was built, and llama-cpp-python's version (the layout of
    its state)."""
    import llama_cpp

    info = path.stat()
    ctx = llm.context_params
    return {
        "llama_cpp": llama_cpp.__version__,
        "model": str(path.resolve()),
        "model_bytes": info.st_size,
        "model_mtime_ns": info.st_mtime_ns,
        "n_gpu_layers": int(llm.model_params.n_gpu_layers),
        **{name: _plain(getattr(ctx, name, None)) for name in CONTEXT_KEY},
    }


def open_prefix_cache(llm: Any, path: Path, label: str) -> PrefixCache | None:
    """The saved states for this model and context, unless the cap is 0 (off) or the
    model is recurrent: its state cannot be cut back to a shorter prefix, which is what
    continuing from a saved head needs."""
    if getattr(llm, "_is_recurrent", False) or getattr(llm, "_is_hybrid", False):
        return None
    cache = PrefixCache(state_key(llm, path), label=label)
    return cache if cache.enabled else None


def snapshot(llm: Any) -> memoryview | None:
    """Sequence 0's KV state as the context holds it now (None if llama.cpp gives none)."""
    import llama_cpp

    ctx = llm._ctx.ctx
    size = int(llama_cpp.llama_state_seq_get_size(ctx, 0))
    if size <= 0:
        return None
    buf = (ctypes.c_uint8 * size)()
    n = int(llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0))
    return memoryview(buf)[:n] if 0 < n <= size else None


def restore(llm: Any, tokens: list[int], state: bytearray) -> int:
    """Load a saved state: len(tokens) when the cache now holds exactly `tokens`'
    positions, else 0 with the cache emptied. llama.cpp checks the state's own layout
    (layer count, cell types, sizes) and refuses one that does not fit this context."""
    import llama_cpp

    llm._ctx.kv_cache_clear()
    llm.n_tokens = 0
    buf = (ctypes.c_uint8 * len(state)).from_buffer(state)
    read = int(llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, buf, len(state), 0))
    memory = llama_cpp.llama_get_memory(llm._ctx.ctx)
    if read != len(state) or llama_cpp.llama_memory_seq_pos_max(memory, 0) != len(tokens) - 1:
        llm._ctx.kv_cache_clear()
        return 0
    llm.input_ids[: len(tokens)] = tokens
    llm.n_tokens = len(tokens)
    llm._requires_eval = True  # the logits are not the last token's: generate runs one more
    return len(tokens)
