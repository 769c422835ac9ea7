"""Stopping a run: one event that the loop, the model stream and the tools all watch.

Ctrl-C is a request, not an exception: the stream ends at the next token and the loop
at the next safe point, so history never holds half a message. Only where no safe point
exists does it fall back to KeyboardInterrupt: while a tool runs (the shell tool kills
its command on it) and on a second Ctrl-C (a backend stuck in native code). A batch
sets the same event from its main thread to stop every task.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Cancel(threading.Event):
    """Set once the user asked to stop; `hard` while a tool runs (stop it at once)."""

    def __init__(self) -> None:
        super().__init__()
        self.hard = False

    def on_signal(self, _signum: int, _frame: FrameType | None) -> None:
        already = self.is_set()
        self.set()
        if already or self.hard:
            raise KeyboardInterrupt

    @contextmanager
    def hard_stop(self) -> Iterator[None]:
        """While a tool runs: Ctrl-C stops it at once (a KeyboardInterrupt there)."""
        self.hard = True
        try:
            yield
        finally:
            self.hard = False

    @contextmanager
    def on_sigint(self) -> Iterator[None]:
        """Ctrl-C sets this event for the duration (main thread only: elsewhere a
        signal handler cannot be installed, and the caller's own handling stands)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.signal(signal.SIGINT, self.on_signal)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
