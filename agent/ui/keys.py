"""The keyboard while the model works: Esc stops it (as Ctrl-C does), nothing is echoed.

While an answer streams, prompt-toolkit is not reading the terminal, so a key would be
echoed into the live region (leaving duplicated lines) and Esc, in the tty's line mode,
would sit unread until Enter. The watcher puts the tty in cbreak mode without echo and
reads it on a thread: a lone Esc byte calls `on_escape`; everything else (text, Enter,
escape sequences such as an arrow key's Esc [ A, which arrive in one read) is kept in
`typed`, for the next prompt to start with, as a shell keeps type-ahead. A question in
the middle (a tool's approval) pauses it, so prompt-toolkit gets every key.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

ESC = b"\x1b"
POLL_S = 0.05
TYPED_MAX = 64 * 1024  # type-ahead kept at most (a paste, not a file's worth)


class EscWatcher:
    def __init__(self, on_escape: Callable[[], None]) -> None:
        self.on_escape = on_escape
        self._fd: int | None = None
        self._saved: list[Any] | None = None
        self._lock = threading.Lock()  # held while the thread reads; a pause takes it
        self._paused = False
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.typed = bytearray()  # what was typed meanwhile, Esc aside

    def __enter__(self) -> EscWatcher:
        try:
            import termios

            fd = sys.stdin.fileno()
            self._saved = termios.tcgetattr(fd)
        except (ImportError, OSError, ValueError):
            return self  # not a terminal: nothing to watch
        self._fd = fd
        self._quiet()
        self._thread = threading.Thread(target=self._run, name="bosun-esc", daemon=True)
        self._thread.start()
        return self

    def _quiet(self) -> None:
        import termios

        assert self._fd is not None and self._saved is not None
        mode = termios.tcgetattr(self._fd)
        mode[3] &= ~(termios.ECHO | termios.ECHOCTL | termios.ICANON)
        mode[6][termios.VMIN], mode[6][termios.VTIME] = 0, 0
        termios.tcsetattr(self._fd, termios.TCSANOW, mode)

    def _restore(self) -> None:
        import termios

        if self._fd is not None and self._saved is not None:
            with contextlib.suppress(OSError):
                termios.tcsetattr(self._fd, termios.TCSANOW, self._saved)

    def _run(self) -> None:
        assert self._fd is not None
        while not self._done.is_set():
            with self._lock:
                if not self._paused:
                    ready, _, _ = select.select([self._fd], [], [], POLL_S)
                    data = os.read(self._fd, 64) if ready else b""
                    if data == ESC:
                        self.on_escape()
                    elif len(self.typed) < TYPED_MAX:
                        self.typed += data
            if self._paused:
                self._done.wait(POLL_S)

    def _drain(self) -> None:
        assert self._fd is not None
        while select.select([self._fd], [], [], 0)[0]:
            data = os.read(self._fd, 1024)
            if not data:
                return
            if data != ESC and len(self.typed) < TYPED_MAX:
                self.typed += data

    def keep(self, text: str) -> None:
        """Keys a question held back (typed ahead into it): the next prompt's, too."""
        if len(self.typed) < TYPED_MAX:
            self.typed += text.encode("utf-8", errors="replace")

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The terminal as it was (line mode, echo) for a question, then watched again."""
        if self._thread is None:
            yield
            return
        with self._lock:
            self._paused = True
            self._drain()  # keys typed before the question are type-ahead, not answers
            self._restore()
        try:
            yield
        finally:
            with self._lock:
                self._quiet()
                self._paused = False

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._restore()
