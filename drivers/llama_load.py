"""Loading a GGUF into llama-cpp-python the way this CPU survives it.

Apart from the driver because it is the one piece other code needs without a driver
(tests/gbnf_check.py loads a vocabulary only) and it patches llama-cpp-python globally
for the duration of a load.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from drivers import llama_log

_LOAD_LOCK = threading.Lock()


@contextlib.contextmanager
def _without_extra_buffer_types() -> Iterator[None]:
    """Load models with llama.cpp's `use_extra_bufts = False`.

    Builds of llama.cpp compiled with -march=native on CPUs that report AMX route matmuls
    through `ggml_backend_amx_mul_mat`, which segfaults on any multi-token prompt
    (llama-cpp-python 0.3.36). The extra buffer types are what select that path; without
    them the ordinary CPU kernels run. `Llama.__init__` does not expose the field, but it
    builds its params from `llama_model_default_params()`, so that call is wrapped for the
    duration of one (locked) model load.
    """
    import llama_cpp.llama_cpp as low

    original = low.llama_model_default_params

    def params() -> Any:
        p = original()
        p.use_extra_bufts = False
        return p

    with _LOAD_LOCK:
        low.llama_model_default_params = params
        try:
            yield
        finally:
            low.llama_model_default_params = original


def load_llama(
    path: Path, *, n_ctx: int, n_gpu_layers: int, n_threads: int, flash_attn: bool = True
) -> Any:
    from llama_cpp import Llama

    llama_log.install()  # after llama_cpp's own import, which sets its stderr printer
    with _without_extra_buffer_types():
        return Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_gpu_layers=n_gpu_layers,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            # Attention over a long context is what a turn's prompt costs beyond its new
            # tokens; flash attention cuts it by a fifth to a quarter on a 2-core CPU
            # (bench/driver_bench.py) and saves memory on a GPU. llama.cpp's own tools
            # turn it on wherever the backend supports it.
            flash_attn=flash_attn,
            verbose=False,
        )


def gpu_offload_supported() -> bool:
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
