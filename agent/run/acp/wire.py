"""The JSON-RPC lines between bosun and an editor, checked before the SDK sees them.

The SDK's own stdio reader skips a line that is not JSON without an answer, and a
message that is JSON but not an object, or a response whose id is a list, raises inside
its receive loop and ends the connection. The peer is untrusted input like any other:
every bad line gets a JSON-RPC error back (or, for a bad response, is dropped), so a
confused client learns what it did and the session goes on. bosun's own output goes
to a private copy of stdout; fd 1 itself then points at stderr, so nothing a library
prints (llama.cpp's native logging included) can tear a protocol line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from agent.untrusted import clean

MAX_LINE = 50 * 1024 * 1024  # as the SDK allows: a prompt may carry whole files
END_WAIT_S = 30.0  # at the end of input, how long requests in flight may take to answer
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def error(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _encoded(message: dict[str, Any]) -> bytes:
    """One line of UTF-8. A lone surrogate has no UTF-8 form, and the line that carries
    one would never leave: its request unanswered, and the end of input waiting
    END_WAIT_S for the answer. The walk that replaces them runs only where one is."""
    text = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    try:
        return (text + "\n").encode()
    except UnicodeEncodeError:
        text = json.dumps(clean(message), separators=(",", ":"), ensure_ascii=False)
        return (text + "\n").encode()


def _id_ok(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def problem(message: Any) -> tuple[str, Any] | None:
    """Why a decoded message is not one this side can act on (and the id to answer
    with), or None when it is a request, a notification or a response."""
    if not isinstance(message, dict):
        return "a JSON-RPC message is an object (batches are not supported)", None
    request_id = message.get("id")
    if "id" in message and request_id is not None and not _id_ok(request_id):
        return "id must be a string or an integer", None
    if "method" in message:
        if not isinstance(message["method"], str):
            return "method must be a string", request_id
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            return "params must be an object", request_id
        return None
    if "id" not in message or not _id_ok(request_id):
        return "neither a request (no method) nor a response (no id)", None
    if "error" in message and not isinstance(message["error"], dict):
        return "error must be an object", None
    return None


class Lines:
    """The SDK's `Transport`: one JSON object per line each way, each line checked.

    At the end of input, every request already read is still answered (a client may
    write its requests and close stdin): `at_end` runs first (it cancels the turns in
    flight), then the end is reported once the answers are out, or after END_WAIT_S."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()
        self._unanswered: set[Any] = set()
        self._answered = asyncio.Event()
        self.at_end: Callable[[], None] = lambda: None

    async def send(self, message: dict[str, Any]) -> None:
        data = _encoded(message)
        self._writer.write(data)  # at once, so messages leave in the order they were sent
        if "method" not in message and message.get("id") in self._unanswered:
            self._unanswered.discard(message["id"])
            self._answered.set()
        async with self._lock:
            await self._writer.drain()

    async def _answers_out(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + END_WAIT_S
        while self._unanswered and loop.time() < deadline:
            self._answered.clear()
            try:
                await asyncio.wait_for(self._answered.wait(), deadline - loop.time())
            except TimeoutError:
                break

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._line()
            if line is None:
                self.at_end()
                await self._answers_out()
                return None
            if not line.strip():
                continue
            try:
                message = clean(json.loads(line))  # a lone surrogate: see _encoded
            except (ValueError, RecursionError):
                await self.send(error(PARSE_ERROR, "Parse error: not a JSON object"))
                continue
            why = problem(message)
            if why is None:
                if "method" in message and message.get("id") is not None:
                    self._unanswered.add(message["id"])
                return message
            response = isinstance(message, dict) and "method" not in message
            if not (response and ("result" in message or "error" in message)):
                await self.send(error(INVALID_REQUEST, f"Invalid request: {why[0]}", why[1]))

    async def _line(self) -> bytes | None:
        """The next line, None at the end of input; a line past MAX_LINE is skipped
        whole (it is answered as one that is not JSON)."""
        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial or None
        except asyncio.LimitOverrunError:
            while True:  # drop the rest of the line
                try:
                    await self._reader.readuntil(b"\n")
                    return b"\x00"
                except asyncio.LimitOverrunError as exc:
                    await self._reader.readexactly(exc.consumed)
                except asyncio.IncompleteReadError:
                    return None

    async def close(self) -> None:
        self._writer.close()


class FileWriter:
    """stdout that is a file, not a pipe (`bosun acp > log`): plain blocking writes."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        os.close(self._fd)


def _feed(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, fd: int) -> None:
    """stdin that is a file, not a pipe: read in a thread, handed to the loop."""
    try:
        while data := os.read(fd, 65536):
            loop.call_soon_threadsafe(reader.feed_data, data)
    finally:
        loop.call_soon_threadsafe(reader.feed_eof)


async def stdio() -> Lines:
    """Lines over stdin and a private copy of stdout (see the module's docstring)."""
    import threading

    loop = asyncio.get_running_loop()
    out_fd = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    reader = asyncio.StreamReader(limit=MAX_LINE)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:  # a regular file
        args = (loop, reader, sys.stdin.fileno())
        threading.Thread(target=_feed, args=args, daemon=True).start()
    writer: Any
    try:
        out = os.fdopen(out_fd, "wb", buffering=0)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    except ValueError:  # a regular file
        writer = FileWriter(os.dup(out_fd))
    return Lines(reader, writer)


class OneLine(logging.Handler):
    """The SDK logs a failed handler with its traceback; a person sees one line
    (`BOSUN_DEBUG=1`: the traceback too)."""

    def emit(self, record: logging.LogRecord) -> None:
        from agent.untrusted import visible

        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text = f"{text}: {type(exc).__name__}: {exc}"
        sys.stderr.write(f"bosun acp: {visible(text)[:500]}\n")
        if os.environ.get("BOSUN_DEBUG") and record.exc_info:
            import traceback

            traceback.print_exception(*record.exc_info, file=sys.stderr)


def quiet_logging() -> None:
    root = logging.getLogger()
    root.handlers[:] = [OneLine()]
    root.setLevel(logging.WARNING)
