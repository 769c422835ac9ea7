"""Between the agent's thread and the connection's event loop.

A turn runs in a worker thread (the loop is synchronous; the connection is asyncio),
so what it says must cross over: updates go into one queue per session, sent in order
by one task, and a question to the editor (a permission, a file) waits until every
update before it has left, so the editor never sees a question about a tool call it
has not been shown. A wait ends early when the user cancels: that is bosun's one
Cancel, and a KeyboardInterrupt is how the loop is told "stopped at the question".
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from agent.loop.cancel import Cancel

T = TypeVar("T")
POLL_S = 0.05


class Outbox:
    def __init__(self, conn: Any, session_id: str, loop: asyncio.AbstractEventLoop) -> None:
        self.conn = conn
        self.session_id = session_id
        self.loop = loop
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._task = loop.create_task(self._pump())

    async def _pump(self) -> None:
        while True:
            update = await self._queue.get()
            try:
                await self.conn.session_update(session_id=self.session_id, update=update)
            except Exception:  # the editor went away: the turn goes on, unseen
                pass
            finally:
                self._queue.task_done()

    def put(self, update: Any) -> None:
        """From any thread; sent after everything put before it."""
        self.loop.call_soon_threadsafe(self._queue.put_nowait, update)

    async def flushed(self) -> None:
        await self._queue.join()

    def ask(
        self,
        make: Callable[[], Awaitable[T]],
        cancel: Cancel | None = None,
        timeout: float | None = None,
    ) -> T:
        """From the worker thread: `make()`'s answer once the updates before it have
        left. KeyboardInterrupt when `cancel` is set meanwhile; TimeoutError after
        `timeout` seconds (an editor that never answers must not hang the turn)."""

        async def after_updates() -> T:
            await self._queue.join()
            return await make()

        future = asyncio.run_coroutine_threadsafe(after_updates(), self.loop)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                return future.result(timeout=POLL_S)
            except concurrent.futures.TimeoutError:
                if cancel is not None and cancel.is_set():
                    future.cancel()
                    raise KeyboardInterrupt from None
                if deadline is not None and time.monotonic() > deadline:
                    future.cancel()
                    raise TimeoutError(f"the editor did not answer in {timeout:.0f} s") from None

    def close(self) -> None:
        self._task.cancel()
