"""The running MCP servers of one bosun process, behind a synchronous face.

The SDK is asyncio; bosun's loop is not. The hub owns one event loop on a thread of its
own, and every server lives in one task there (the SDK's client must be entered and left
by the same task). The agent's thread submits calls and waits on them. Servers start in
parallel, each within its start-up timeout; one that fails is reported and its tools are
absent. A server that dies mid-call gives that call an error result and is restarted
once. `close` ends every server process (the SDK closes stdin, then signals the
process group), then whatever left that group (a daemon that called `setsid`), found by
a marker in the environment every server's process passes on; `atexit` calls it too,
so no path out of bosun leaves a server behind.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import secrets
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from agent.mcp.connection import (
    Conn,
    ServerState,
    call_tool,
    open_log,
    quiet_sdk_logs,
    why,
)
from agent.mcp.servers import ServerSpec
from agent.mcp.tools import (
    description,
    input_schema,
    listing_problem,
    output_schema_problem,
    schema_problem,
    tool_name,
)
from agent.tools.registry import Tool, ToolContext, ToolError
from agent.tools.shell import kill_marked

MAX_PAGES = 20  # of a tools/list answer
MARKER = "BOSUN_MCP_HUB"  # name of the marker every server process inherits
STOP_GRACE = 8.0  # seconds close() waits for the SDK's own escalation (stdin, TERM, KILL)


class Hub:
    def __init__(self, workspace: Path, log_dir: Path | None = None) -> None:
        self.workspace = workspace
        self.log_dir = log_dir
        self._conns: dict[str, Conn] = {}
        self._route: dict[str, tuple[Conn, str]] = {}
        quiet_sdk_logs()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp", daemon=True)
        self._thread.start()
        self._closed = False
        self._ending: set[asyncio.Task[None]] = set()
        self._starting: tuple[concurrent.futures.Future[None], list[Conn], set[str]] | None = None
        self._lock = threading.Lock()
        self._restarting = threading.Lock()
        self._marker = secrets.token_hex(8)  # in every server's environment (close)
        atexit.register(self.close)

    # ---- the synchronous face -------------------------------------------------

    def start(
        self,
        specs: Sequence[ServerSpec],
        skipped: Sequence[ServerState] = (),
        reserved: Iterable[str] = (),
    ) -> None:
        """Start every server at once; returns when each is up or has failed."""
        self.begin(specs, skipped, reserved)
        self.ready()

    def begin(
        self,
        specs: Sequence[ServerSpec],
        skipped: Sequence[ServerState] = (),
        reserved: Iterable[str] = (),
    ) -> None:
        """Start every server at once and return (a model can load meanwhile); `ready`
        waits for them. `skipped` are servers not started (disabled, not approved),
        listed for `/mcp`; tool names avoid `reserved` (bosun's own tools)."""
        for state in skipped:
            self._conns[state.spec.name] = Conn(state)
        conns = [Conn(ServerState(spec)) for spec in specs]
        for conn in conns:
            self._conns[conn.state.spec.name] = conn
        self._starting = (
            asyncio.run_coroutine_threadsafe(self._start_all(conns), self._loop),
            conns,
            set(reserved),
        )

    def ready(self) -> None:
        """Wait until every server began is up or has failed; name their tools."""
        if self._starting is None:
            return
        future, conns, taken = self._starting
        self._wait(future)
        self._starting = None
        for conn in conns:
            self._name_tools(conn, taken)

    def states(self) -> list[ServerState]:
        self.ready()
        return [conn.state for conn in self._conns.values()]

    def tools(self) -> list[Tool]:
        """Every running server's usable tools, as bosun tools that call through the hub."""
        self.ready()
        out = []
        for name, (conn, remote) in self._route.items():
            listed = next(t for t in conn.listing if t.name == remote)
            kind = "mcp-trusted" if conn.state.spec.trusted else "mcp"
            out.append(
                Tool(
                    name,
                    description(listed.description, conn.state.spec.name),
                    input_schema(listed.input_schema),
                    self._caller(name),
                    kind,  # type: ignore[arg-type]
                )
            )
        return out

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one call; its result text, or a ToolError the model gets as an error
        result (the server said isError, timed out, or died)."""
        conn, remote = self._route[name]
        spec = conn.state.spec
        if conn.state.status != "running" and not self._restart(conn):
            raise ToolError(f"the MCP server {spec.name} is not running: {conn.state.error}")
        future = asyncio.run_coroutine_threadsafe(call_tool(conn, remote, arguments), self._loop)
        try:
            text, is_error, crashed = self._wait(future)
        except KeyboardInterrupt:
            future.cancel()
            raise
        if crashed:
            if conn.state.restarts >= 1:
                note = "it was restarted once already, so its tools are off for this session"
            elif self._restart(conn):
                note = "it was restarted"
            else:
                note = f"restarting it failed: {conn.state.error}"
            raise ToolError(f"the MCP server {spec.name} stopped during this call ({text}); {note}")
        if is_error:
            raise ToolError(text or f"{name} failed")
        return text

    def close(self) -> None:
        """Stop every server and the loop; safe to call twice, from any path out."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        atexit.unregister(self.close)
        with contextlib.suppress(TimeoutError, concurrent.futures.TimeoutError, RuntimeError):
            self._run(self._stop_all(), timeout=STOP_GRACE)
        kill_marked(MARKER, self._marker)  # daemons that left their server's group
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=2)
        for conn in self._conns.values():
            if conn.log is not None:
                conn.log.close()

    # ---- inside the loop ------------------------------------------------------

    def _run(self, coro: Any, timeout: float | None) -> Any:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return self._wait(future, timeout)

    @staticmethod
    def _wait(future: concurrent.futures.Future[Any], timeout: float | None = None) -> Any:
        """Wait in short slices, so Ctrl-C reaches this thread between them."""
        waited = 0.0
        while True:
            try:
                return future.result(timeout=0.2)
            except concurrent.futures.TimeoutError:
                waited += 0.2
                if timeout is not None and waited >= timeout:
                    future.cancel()
                    raise

    async def _start_all(self, conns: list[Conn]) -> None:
        await asyncio.gather(*(self._open(conn) for conn in conns))

    async def _open(self, conn: Conn) -> None:
        spec = conn.state.spec
        conn.state.status = "starting"
        ready: asyncio.Future[None] = self._loop.create_future()
        conn.stop = asyncio.Event()
        conn.task = self._loop.create_task(self._serve(conn, ready))
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved
        try:
            await asyncio.wait_for(asyncio.shield(ready), spec.startup_timeout)
            conn.state.status, conn.state.error = "running", ""
        except TimeoutError:
            conn.state.status = "failed"
            conn.state.error = f"did not start within {spec.startup_timeout:g} s"
            # ended in the background (the SDK gives it seconds to go); close() waits
            self._ending.add(self._loop.create_task(self._end(conn)))
        except BaseException as exc:  # the server's failure, not bosun's
            conn.state.status, conn.state.error = "failed", why(conn, exc)
            await self._end(conn)

    async def _serve(self, conn: Conn, ready: asyncio.Future[None]) -> None:
        try:
            import anyio

            with anyio.CancelScope() as conn.scope:
                await self._session(conn, ready)
        except BaseException as exc:  # reported through `ready`, never lost in the loop
            if not ready.done():
                ready.set_exception(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def _session(self, conn: Conn, ready: asyncio.Future[None]) -> None:
        from mcp import Client, StdioServerParameters

        spec = conn.state.spec
        target: Any
        if spec.url is not None:
            target = spec.url
        else:
            cwd = self.workspace / spec.cwd if spec.cwd else self.workspace
            target = StdioServerParameters(
                command=spec.command or "",
                args=list(spec.args),
                env={**dict(spec.env), MARKER: self._marker},
                cwd=cwd,
            )
        try:
            errlog = open_log(conn, self.log_dir)
            if spec.url is None:
                from mcp.client.stdio import stdio_client

                transport: Any = stdio_client(target, errlog=errlog)
                client = Client(transport)
            else:
                client = Client(target)
            async with client:
                listing: list[Any] = []
                cursor = None
                for _ in range(MAX_PAGES):
                    page = await client.list_tools(cursor=cursor)
                    listing += page.tools
                    cursor = page.next_cursor
                    if not cursor:
                        break
                conn.client, conn.listing = client, listing
                ready.set_result(None)
                assert conn.stop is not None
                await conn.stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            conn.client = None
            if conn.state.status == "running":
                conn.state.status = "stopped"

    async def _end(self, conn: Conn) -> None:
        """Stop one server: let its task leave the client (the SDK then ends the
        process); one still starting is cancelled, which ends the process as well."""
        if conn.stop is not None:
            conn.stop.set()
        if conn.task is None or conn.task.done():
            return
        if conn.client is None:
            # An anyio cancel, never task.cancel(): asyncio's own cancel pierces the SDK's
            # shielded shutdown and would leave the process running.
            if conn.scope is not None:
                conn.scope.cancel()
            else:  # not begun yet: nothing to shut down
                conn.task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(conn.task), STOP_GRACE - 1)

    async def _stop_all(self) -> None:
        await asyncio.gather(*self._ending, *(self._end(conn) for conn in self._conns.values()))
        for conn in self._conns.values():
            if conn.state.status in ("running", "starting"):
                conn.state.status = "stopped"

    # ---- restarts and names ----------------------------------------------------

    def _restart(self, conn: Conn) -> bool:
        """One restart per server and session; True when it is running again."""
        with self._restarting:  # tasks of a batch share the hub
            if conn.state.status == "running":  # another thread restarted it meanwhile
                return True
            if conn.state.restarts >= 1 or self._closed:
                return False
            conn.state.restarts += 1
            differ = self._files_changed(conn.state.spec)
            if differ:  # the model may have rewritten it meanwhile: not run unasked
                conn.state.error = f"its files changed since it started ({differ})"
                return False
            return self._start_again(conn)

    def _files_changed(self, spec: ServerSpec) -> str:
        """A workspace server's files that differ from when it started (`trust`)."""
        if spec.pinned is None:
            return ""
        from agent.mcp.trust import changed, server_files

        return ", ".join(changed(dict(spec.pinned), server_files(spec, self.workspace))[:3])

    def _start_again(self, conn: Conn) -> bool:

        async def again() -> None:
            await self._end(conn)
            await self._open(conn)

        self._run(again(), timeout=None)
        return conn.state.status == "running"

    def _name_tools(self, conn: Conn, taken: set[str]) -> None:
        """Take in a running server's listing: each tool whose schemas cannot be used is
        left out; a listing too large for a session (every tool would reach every
        prompt) is refused whole, the server kept running but unused."""
        if conn.state.status != "running":
            return
        spec = conn.state.spec
        refused = listing_problem(conn.listing, spec.name)
        if refused is not None:
            conn.state.status, conn.state.error = "refused", refused
            return
        for listed in conn.listing:
            problem = schema_problem(listed.input_schema) or output_schema_problem(
                getattr(listed, "output_schema", None)
            )
            if problem is not None:
                conn.state.skipped.append(f"{listed.name}: {problem}")
                continue
            name = tool_name(spec.name, listed.name, taken)
            conn.state.tools[name] = listed.name
            self._route[name] = (conn, listed.name)

    def _caller(self, name: str) -> Callable[..., str]:
        def run(_ctx: ToolContext, **arguments: Any) -> str:
            return self.call(name, arguments)

        return run
