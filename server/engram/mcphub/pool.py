"""The lazy connection pool: connect on first use, at most N live, idle TTL, LRU eviction.

Each connection is owned by one dedicated asyncio task that enters the SDK's async context
managers (transport, ``ClientSession``) and exits them itself. That matters: anyio cancel
scopes must be entered and exited in the same task, so a caller never holds a session
directly. Callers put requests on the connection's queue and await a future; the owner runs
each request in its own child task, so concurrent calls to one server share its connection
and cannot deadlock each other.

Failure rules (docs/mcp-hub.md):
- connect and call are bounded by timeouts; nothing waits forever;
- a call whose connection is lost (the server crashed) is retried once on a fresh
  connection; a second loss is reported as :class:`ServerUnavailable`;
- a call that times out closes its connection (a hung server is killed, not leaked);
- eviction picks the least recently used connection that is neither persistent, nor busy,
  nor used within the grace period; if none qualifies the caller waits (bounded) for one.

Time comes from an injectable clock so TTL and LRU are testable without sleeping.

Long on purpose: one connection's whole life (start, identity check, TTL, LRU eviction,
shutdown) is one state machine; split, its invariants would span files.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, TypeAlias

import attrs

from engram.jsontypes import JsonObject
from engram.mcphub.errors import CallTimeout, PoolExhausted, ServerUnavailable, ToolCallFailed
from engram.mcphub.sources import ServerSpec
from engram.mcphub.transport import McpSession, SessionOpener

if TYPE_CHECKING:
    from mcp.types import PaginatedRequestParams

log = logging.getLogger(__name__)

#: Hard ceiling against resource exhaustion (docs/mcp-hub.md): configurable lower only.
MAX_CONNECTIONS_CEILING = 10
_CONNECTION_CLOSED_CODE = -32000
_CLOSE_WAIT_SECONDS = 15.0

Clock = Callable[[], float]
#: What a request settles with: a ``tools/call`` result or the ``tools/list`` pages, as JSON.
Reply: TypeAlias = JsonObject | list[JsonObject]


class ConnectionLost(Exception):
    """The server went away under a request (internal: the pool retries once)."""


def clamp_max_connections(requested: int) -> int:
    """Never more than :data:`MAX_CONNECTIONS_CEILING`, never fewer than one (warns)."""
    if requested > MAX_CONNECTIONS_CEILING:
        log.warning(
            "mcp.max_connections=%d is above the limit of %d; using %d",
            requested,
            MAX_CONNECTIONS_CEILING,
            MAX_CONNECTIONS_CEILING,
        )
        return MAX_CONNECTIONS_CEILING
    if requested < 1:
        log.warning("mcp.max_connections=%d is below 1; using 1", requested)
        return 1
    return requested


def _leaf_exceptions(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        leaves: list[BaseException] = []
        for inner in exc.exceptions:
            leaves.extend(_leaf_exceptions(inner))
        return leaves
    return [exc]


def _is_connection_closed(exc: BaseException) -> bool:
    import anyio

    for leaf in _leaf_exceptions(exc):
        if getattr(leaf, "code", None) == _CONNECTION_CLOSED_CODE:
            return True
        if isinstance(
            leaf,
            anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream,
        ):
            return True
        if isinstance(leaf, ConnectionError | EOFError | BrokenPipeError):
            return True
    return False


def describe_exception(exc: BaseException) -> str:
    """One line for the user out of whatever the SDK raised (groups unwrapped)."""
    leaves = [e for e in _leaf_exceptions(exc) if not isinstance(e, asyncio.CancelledError)]
    leaf = leaves[0] if leaves else exc
    text = " ".join(str(leaf).split())
    if getattr(leaf, "code", None) == _CONNECTION_CLOSED_CODE:
        text = "the server closed the connection"
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


@attrs.define
class _Request:
    kind: Literal["call", "list_tools"]
    future: asyncio.Future[Reply]
    tool: str = ""
    arguments: JsonObject = attrs.field(factory=dict)
    timeout: float = 60.0


class Connection:
    """One live server connection, driven by its owner task (see module docstring)."""

    def __init__(
        self,
        spec: ServerSpec,
        opener: SessionOpener,
        *,
        clock: Clock,
        connect_timeout: float,
    ) -> None:
        self.spec = spec
        self.config_hash = spec.config_hash
        self._opener = opener
        self._clock = clock
        self._connect_timeout = connect_timeout
        self._queue: asyncio.Queue[_Request | None] = asyncio.Queue()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task: asyncio.Task[None] | None = None
        self.created_at = clock()
        self.last_used = self.created_at
        self.active_calls = 0
        self.calls = 0
        self.closed = False
        self.server_info: JsonObject | None = None
        self.instructions: str | None = None
        self._pending: set[asyncio.Future[Reply]] = set()
        #: set by the owner when anything changes that may free a slot
        self.on_idle: Callable[[], None] = lambda: None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def connected(self) -> bool:
        """The handshake finished (a connection still connecting is never evicted)."""
        return (
            self._ready.done() and not self._ready.cancelled() and self._ready.exception() is None
        )

    @property
    def alive(self) -> bool:
        return not self.closed and self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Start the owner task and wait until the session is initialised (or failed)."""
        self._task = asyncio.create_task(self._run(), name=f"mcp:{self.spec.name}")
        try:
            await self._ready
        except BaseException:
            await self.close()
            raise

    async def request(
        self,
        kind: Literal["call", "list_tools"],
        *,
        tool: str = "",
        arguments: JsonObject | None = None,
        timeout: float,
    ) -> Reply:
        if not self.alive:
            raise ConnectionLost("connection is closed")
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._pending.add(future)
        self.active_calls += 1
        self.calls += 1
        self.last_used = self._clock()
        try:
            self._queue.put_nowait(_Request(kind, future, tool, dict(arguments or {}), timeout))
            return await future
        finally:
            self._pending.discard(future)
            self.active_calls -= 1
            self.last_used = self._clock()
            self.on_idle()

    def request_stop(self) -> None:
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(None)

    async def close(self) -> None:
        """Stop the owner task; the SDK then closes stdin, waits, and kills the process tree."""
        self.request_stop()
        task = self._task
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), _CLOSE_WAIT_SECONDS)
        except TimeoutError:
            log.warning("MCP server %s did not shut down in time; cancelling", self.name)
            task.cancel()
            await asyncio.wait({task}, timeout=5.0)  # never raises the task's error
        except Exception:  # the owner logs its own failures; cancellation propagates
            log.debug("MCP server %s closed with an error", self.name, exc_info=True)

    # ------------------------------------------------------------------ owner task

    async def _run(self) -> None:
        import anyio

        connect_scope = anyio.CancelScope(deadline=anyio.current_time() + self._connect_timeout)
        try:
            with connect_scope:
                async with self._opener(self.spec) as session:
                    connect_scope.deadline = math.inf
                    self._note_identity(session)
                    if not self._ready.done():
                        self._ready.set_result(None)
                    await self._serve(session)
            if connect_scope.cancelled_caught and not self._ready.done():
                self._ready.set_exception(
                    CallTimeout(
                        f"MCP server {self.name} did not complete the MCP handshake within "
                        f"{self._connect_timeout:g}s (is it an MCP server? see "
                        f".engram/mcp/logs/{self.name}.stderr.log)"
                    )
                )
        except Exception as exc:
            log.debug("MCP server %s connection ended: %r", self.name, exc)
            if not self._ready.done():
                self._ready.set_exception(
                    ServerUnavailable(
                        f"could not start MCP server {self.name} ({self.spec.describe()}): "
                        f"{describe_exception(exc)}"
                    )
                )
        except asyncio.CancelledError:
            if not self._ready.done():
                self._ready.set_exception(ServerUnavailable(f"MCP server {self.name} cancelled"))
            raise
        finally:
            self.closed = True
            if not self._ready.done():
                self._ready.set_exception(
                    ServerUnavailable(f"MCP server {self.name} closed during the handshake")
                )
            self._fail_pending()
            self.on_idle()

    def _note_identity(self, session: McpSession) -> None:
        info = getattr(session, "server_info", None)
        if info is not None and hasattr(info, "model_dump"):
            dumped = info.model_dump(mode="json", exclude_none=True)
            self.server_info = {
                k: v for k, v in dumped.items() if k in ("name", "version", "title")
            }
        instructions = getattr(session, "instructions", None)
        self.instructions = instructions if isinstance(instructions, str) else None

    async def _serve(self, session: McpSession) -> None:
        import anyio

        async with anyio.create_task_group() as tg:
            while True:
                req = await self._queue.get()
                if req is None:
                    tg.cancel_scope.cancel()
                    return
                tg.start_soon(self._handle, session, req)

    async def _handle(self, session: McpSession, req: _Request) -> None:
        import anyio

        future = req.future
        if future.done():
            return
        with anyio.CancelScope() as scope:
            # a caller that gives up (LSP request cancelled) cancels the SDK call too
            future.add_done_callback(lambda f: scope.cancel() if f.cancelled() else None)
            try:
                with anyio.fail_after(req.timeout):
                    if req.kind == "call":
                        result = await session.call_tool(req.tool, req.arguments)
                        dumped = _dump(result)
                        value: Reply = (
                            dumped if isinstance(dumped, dict) else {"content": [], "raw": dumped}
                        )
                    else:
                        value = await _list_all_tools(session)
            except TimeoutError:
                _settle(
                    future,
                    exc=CallTimeout(
                        f"MCP call {self.name}/{req.tool or 'tools/list'} timed out after "
                        f"{req.timeout:g}s; the server was closed and will be restarted on "
                        "the next call"
                    ),
                )
                self.request_stop()
                return
            except Exception as exc:
                if _is_connection_closed(exc):
                    self.request_stop()
                    _settle(future, exc=ConnectionLost(describe_exception(exc)))
                else:
                    _settle(
                        future,
                        exc=ToolCallFailed(
                            f"MCP server {self.name} rejected {req.tool or 'tools/list'}: "
                            f"{describe_exception(exc)}"
                        ),
                    )
                return
            _settle(future, value=value)

    def _fail_pending(self) -> None:
        while not self._queue.empty():
            req = self._queue.get_nowait()
            if req is not None:
                _settle(req.future, exc=ConnectionLost("connection closed"))
        for future in list(self._pending):
            _settle(future, exc=ConnectionLost("connection closed"))

    def status(self, now: float, ttl: float | None) -> JsonObject:
        idle = now - self.last_used
        return {
            "server": self.name,
            "alive": self.alive,
            "connected_seconds": round(now - self.created_at, 3),
            "idle_seconds": round(idle, 3),
            "active_calls": self.active_calls,
            "calls": self.calls,
            "persistent": self.spec.persistent,
            "expires_in_seconds": None if ttl is None else round(max(0.0, ttl - idle), 3),
        }


def _settle(
    future: asyncio.Future[Reply], *, value: Reply | None = None, exc: BaseException | None = None
) -> None:
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    elif value is not None:
        future.set_result(value)


def _dump(result: object) -> object:
    """An SDK (pydantic) result as JSON data; anything else (a test's fake) as it is."""
    dump = getattr(result, "model_dump", None)
    if callable(dump):
        dumped: object = dump(mode="json", by_alias=True, exclude_none=True)
        return dumped
    return result


async def _list_all_tools(session: McpSession) -> list[JsonObject]:
    """``tools/list`` with pagination, as plain dicts (schema under ``inputSchema``)."""
    tools: list[JsonObject] = []
    params: PaginatedRequestParams | None = None
    for _ in range(100):  # a server that paginates forever is cut off
        page = await session.list_tools(params=params)
        for tool in getattr(page, "tools", []) or []:
            dumped = _dump(tool)
            if isinstance(dumped, dict):
                tools.append(dumped)
        cursor = getattr(page, "next_cursor", None)
        if not cursor:
            break
        from mcp.types import PaginatedRequestParams

        params = PaginatedRequestParams(cursor=cursor)
    return tools


def _tool_list(reply: Reply) -> list[JsonObject]:
    """A ``list_tools`` reply (a ``tools/call`` reply here would be a bug: no tools)."""
    return reply if isinstance(reply, list) else []


@attrs.define
class PoolSettings:
    max_connections: int = MAX_CONNECTIONS_CEILING
    idle_ttl_seconds: float = 900.0
    connect_timeout_seconds: float = 20.0
    call_timeout_seconds: float = 60.0
    #: a connection used within this many seconds is not evicted
    grace_seconds: float = 5.0
    #: how often the background task looks for idle connections
    sweep_interval_seconds: float = 30.0


class ConnectionPool:
    """Lazy, bounded, TTL/LRU pool of :class:`Connection` (one per server name)."""

    def __init__(
        self,
        opener: SessionOpener,
        settings: PoolSettings | None = None,
        *,
        clock: Clock = time.monotonic,
    ) -> None:
        self.settings = settings or PoolSettings()
        self.max_connections = clamp_max_connections(self.settings.max_connections)
        self._opener = opener
        self._clock = clock
        self._conns: dict[str, Connection] = {}
        self._server_locks: dict[str, asyncio.Lock] = {}
        self._slots_lock: asyncio.Lock | None = None
        self._changed: asyncio.Event | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._closed = False
        self.evictions = 0
        self.expirations = 0
        self.reconnects = 0

    # ------------------------------------------------------------------ public

    def ttl_for(self, spec: ServerSpec) -> float | None:
        if spec.persistent:
            return None
        return spec.idle_ttl_seconds or self.settings.idle_ttl_seconds

    def live(self) -> list[str]:
        return [name for name, conn in self._conns.items() if conn.alive]

    async def call_tool(
        self, spec: ServerSpec, tool: str, arguments: JsonObject, timeout: float | None = None
    ) -> JsonObject:
        """Call one tool; lazy connect, one reconnect after a crash, clear errors."""
        result = await self._with_retry(spec, "call", tool, arguments, timeout)
        return result if isinstance(result, dict) else {"content": [], "raw": result}

    async def list_tools(self, spec: ServerSpec) -> tuple[list[JsonObject], JsonObject | None]:
        """Tools of a server through the pool (connects if needed)."""
        tools = await self._with_retry(spec, "list_tools", "", {}, None)
        conn = self._conns.get(spec.name)
        return _tool_list(tools), conn.server_info if conn else None

    async def introspect(self, spec: ServerSpec) -> tuple[list[JsonObject], JsonObject | None]:
        """Connect, list tools, disconnect, outside the pool (does not evict anyone)."""
        conn = Connection(
            spec,
            self._opener,
            clock=self._clock,
            connect_timeout=self.settings.connect_timeout_seconds,
        )
        await conn.start()
        try:
            tools = await conn.request("list_tools", timeout=self.settings.call_timeout_seconds)
            return _tool_list(tools), conn.server_info
        except ConnectionLost as exc:
            raise ServerUnavailable(
                f"MCP server {spec.name} closed the connection while listing tools ({exc})"
            ) from exc
        finally:
            await conn.close()

    async def expire_idle(self) -> list[str]:
        """Close connections idle longer than their TTL (persistent ones never)."""
        now = self._clock()
        expired = [
            conn
            for conn in self._conns.values()
            if conn.active_calls == 0
            and (ttl := self.ttl_for(conn.spec)) is not None
            and now - conn.last_used >= ttl
        ]
        for conn in expired:
            log.info("MCP server %s idle for %.0fs: closing", conn.name, now - conn.last_used)
            await self._discard(conn)
            self.expirations += 1
        return [c.name for c in expired]

    def status(self) -> JsonObject:
        now = self._clock()
        return {
            "max_connections": self.max_connections,
            "live": len(self.live()),
            "evictions": self.evictions,
            "expirations": self.expirations,
            "reconnects": self.reconnects,
            "connections": [
                conn.status(now, self.ttl_for(conn.spec)) for conn in self._conns.values()
            ],
        }

    async def close_server(self, name: str) -> bool:
        conn = self._conns.get(name)
        if conn is None:
            return False
        await self._discard(conn)
        return True

    async def close(self) -> None:
        """Close every connection (and so every child process) and stop the sweeper."""
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        conns = list(self._conns.values())
        self._conns.clear()
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)

    # ------------------------------------------------------------------ internals

    def _ensure_loop_state(self) -> tuple[asyncio.Lock, asyncio.Event]:
        if self._slots_lock is None or self._changed is None:
            self._slots_lock = asyncio.Lock()
            self._changed = asyncio.Event()
        if self._sweeper is None and not self._closed and self.settings.sweep_interval_seconds > 0:
            self._sweeper = asyncio.create_task(self._sweep_forever(), name="mcp-pool-sweeper")
        return self._slots_lock, self._changed

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.sweep_interval_seconds)
            try:
                await self.expire_idle()
            except Exception:
                log.exception("MCP pool sweep failed")

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()

    async def _with_retry(
        self,
        spec: ServerSpec,
        kind: Literal["call", "list_tools"],
        tool: str,
        arguments: JsonObject,
        timeout: float | None,
    ) -> Reply:
        if self._closed:
            raise ServerUnavailable("the MCP hub is shutting down")
        timeout = timeout or self.settings.call_timeout_seconds
        first_error: str | None = None
        for attempt in range(2):
            conn = await self._acquire(spec)
            try:
                return await conn.request(kind, tool=tool, arguments=arguments, timeout=timeout)
            except ConnectionLost as exc:
                await self._discard(conn)
                if attempt == 0:
                    first_error = str(exc)
                    self.reconnects += 1
                    log.warning(
                        "MCP server %s lost its connection (%s); reconnecting once", spec.name, exc
                    )
                    continue
                raise ServerUnavailable(
                    f"MCP server {spec.name} crashed twice ({first_error}; then {exc}); "
                    f"see .engram/mcp/logs/{spec.name}.stderr.log"
                ) from exc
        raise AssertionError("unreachable")

    def _lock_for(self, name: str) -> asyncio.Lock:
        lock = self._server_locks.get(name)
        if lock is None:
            lock = self._server_locks[name] = asyncio.Lock()
        return lock

    async def _acquire(self, spec: ServerSpec) -> Connection:
        slots_lock, _ = self._ensure_loop_state()
        async with self._lock_for(spec.name):
            conn = self._conns.get(spec.name)
            if conn is not None and conn.alive and conn.config_hash == spec.config_hash:
                conn.last_used = self._clock()
                return conn
            if conn is not None:
                await self._discard(conn)
            async with slots_lock:
                await self._make_room()
                conn = Connection(
                    spec,
                    self._opener,
                    clock=self._clock,
                    connect_timeout=self.settings.connect_timeout_seconds,
                )
                conn.on_idle = self._notify
                self._conns[spec.name] = conn  # the slot is taken before the (slow) connect
            try:
                await conn.start()
            except BaseException:
                if self._conns.get(spec.name) is conn:
                    del self._conns[spec.name]
                self._notify()
                raise
            log.info("MCP server %s connected (%d live)", spec.name, len(self._conns))
            return conn

    def _evictable(self) -> Connection | None:
        now = self._clock()
        candidates = [
            c
            for c in self._conns.values()
            if not c.spec.persistent
            and c.active_calls == 0
            and c.alive
            and c.connected  # one still connecting is about to be used
            and now - c.last_used >= self.settings.grace_seconds
        ]
        dead = [c for c in self._conns.values() if c.closed]
        if dead:
            return dead[0]
        return min(candidates, key=lambda c: c.last_used) if candidates else None

    async def _make_room(self) -> None:
        assert self._changed is not None
        deadline = time.monotonic() + self.settings.connect_timeout_seconds
        while len(self._conns) >= self.max_connections:
            victim = self._evictable()
            if victim is not None:
                if not victim.closed:
                    log.info("MCP pool full: evicting least recently used %s", victim.name)
                    self.evictions += 1
                await self._discard(victim)
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise PoolExhausted(
                    f"all {self.max_connections} MCP connections are busy or persistent; "
                    "try again shortly or raise mcp.max_connections (at most 10)"
                )
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                # woken when a call ends; polled because the grace period ends silently
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.25))

    async def _discard(self, conn: Connection) -> None:
        if self._conns.get(conn.name) is conn:
            del self._conns[conn.name]
        await conn.close()
        self._notify()
