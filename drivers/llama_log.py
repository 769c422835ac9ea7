"""llama.cpp's log, kept out of the terminal.

llama-cpp-python prints llama.cpp's error-level lines to stderr even with
`verbose=False`, straight into a chat screen. bosun takes the log over: every line goes
to a file (when the application named one, `send_to`) and the latest lines stay in memory
so that an error bosun reports can quote llama.cpp's own reason (`last_error`).
"""

from __future__ import annotations

import collections
import contextlib
import threading
from pathlib import Path
from typing import Any

_LOCK = threading.Lock()
_RECENT: collections.deque[tuple[int, str]] = collections.deque(maxlen=64)
_state: dict[str, Any] = {"path": None, "file": None, "callback": None}
_WARN = 2  # GGML_LOG_LEVEL_WARN
_ERROR = 3  # GGML_LOG_LEVEL_ERROR
_CONT = 5  # GGML_LOG_LEVEL_CONT: more of the previous line


def send_to(path: Path | None) -> None:
    """Append llama.cpp's log to `path` from now on (None: memory only)."""
    with _LOCK:
        if _state["file"] is not None:
            with contextlib.suppress(OSError):
                _state["file"].close()
        _state["path"], _state["file"] = path, None


def install() -> None:
    """Take llama.cpp's log over (once; after llama_cpp is imported)."""
    import ctypes

    import llama_cpp

    if _state["callback"] is not None:
        return

    @llama_cpp.llama_log_callback
    def callback(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        _record(level, text.decode("utf-8", errors="replace"))

    _state["callback"] = callback  # referenced, or ctypes would free it under llama.cpp
    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))


def _record(level: int, text: str) -> None:
    with _LOCK:
        if level == _CONT and _RECENT:
            last_level, last_text = _RECENT[-1]
            _RECENT[-1] = (last_level, last_text + text)
        else:
            _RECENT.append((level, text))
        out = _state["file"]
        if out is None and _state["path"] is not None:
            try:
                _state["path"].parent.mkdir(parents=True, exist_ok=True)
                out = _state["file"] = _state["path"].open("a", encoding="utf-8")
            except OSError:
                _state["path"] = None  # a log that cannot be written is not worth an error
        if out is not None:
            with contextlib.suppress(OSError):
                out.write(text)
                out.flush()


def note(text: str) -> None:
    """A line of bosun's own in llama.cpp's log (a warning about something llama.cpp was
    about to be given, such as a saved state bosun refused to load)."""
    _record(_WARN, text if text.endswith("\n") else text + "\n")


def last_error() -> str:
    """llama.cpp's most recent error line, for a message of bosun's ('' if none)."""
    with _LOCK:
        for level, text in reversed(_RECENT):
            if level == _ERROR and text.strip():
                return text.strip()
    return ""
