"""Connection pool rules with a fake session and an injected clock (no processes, no sleeps)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest

from engram.mcphub.errors import CallTimeout, PoolExhausted, ServerUnavailable, ToolCallFailed
from engram.mcphub.pool import ConnectionPool, PoolSettings
from engram.mcphub.sources import ServerSpec, parse_server


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class ConnectionClosed(Exception):
    code = -32000


class FakeSession:
    def __init__(self, server: str, behaviour: dict[str, Any]) -> None:
        self.server = server
        self.behaviour = behaviour

    async def list_tools(self, *, params: Any = None) -> Any:
        return SimpleNamespace(tools=[], next_cursor=None)

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        if name == "block":
            await self.behaviour["release"].wait()
        if name == "hang":
            await asyncio.Event().wait()
        if name == "crash":
            raise ConnectionClosed("Connection closed")
        if name == "bad":
            raise ValueError("unknown tool")
        return {"content": [{"type": "text", "text": f"{self.server}:{name}"}], "isError": False}


class FakeOpener:
    """Counts opens and closes per server; all sessions share one behaviour dict."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.closed: list[str] = []
        self.behaviour: dict[str, Any] = {"release": asyncio.Event()}

    def __call__(self, spec: ServerSpec) -> contextlib.AbstractAsyncContextManager[FakeSession]:
        @contextlib.asynccontextmanager
        async def session() -> AsyncIterator[FakeSession]:
            self.opened.append(spec.name)
            try:
                yield FakeSession(spec.name, self.behaviour)
            finally:
                self.closed.append(spec.name)

        return session()


def spec(name: str, **fields: Any) -> ServerSpec:
    return parse_server(name, {"command": "x", **fields}, origin="test", scope="user")


def make_pool(opener: FakeOpener, clock: FakeClock, **settings: Any) -> ConnectionPool:
    defaults: dict[str, Any] = {
        "sweep_interval_seconds": 0,
        "grace_seconds": 5,
        "connect_timeout_seconds": 2,
    }
    defaults.update(settings)
    return ConnectionPool(opener, PoolSettings(**defaults), clock=clock)


async def test_connects_lazily_and_concurrent_calls_share_one_connection() -> None:
    opener, clock = FakeOpener(), FakeClock()
    pool = make_pool(opener, clock)
    assert opener.opened == []
    results = await asyncio.gather(*(pool.call_tool(spec("a"), f"t{i}", {}) for i in range(20)))
    assert opener.opened == ["a"]
    assert [r["content"][0]["text"] for r in results] == [f"a:t{i}" for i in range(20)]
    await pool.close()
    assert opener.closed == ["a"]


async def test_max_connections_is_clamped_to_ten(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        pool = make_pool(FakeOpener(), FakeClock(), max_connections=50)
    assert pool.max_connections == 10
    assert "above the limit" in caplog.text
    assert make_pool(FakeOpener(), FakeClock(), max_connections=3).max_connections == 3


async def test_lru_eviction_respects_grace_period() -> None:
    opener, clock = FakeOpener(), FakeClock()
    pool = make_pool(opener, clock, max_connections=2)
    await pool.call_tool(spec("a"), "t", {})
    clock.advance(10)
    await pool.call_tool(spec("b"), "t", {})
    clock.advance(10)
    await pool.call_tool(spec("a"), "t", {})  # a is now the most recent
    clock.advance(10)
    await pool.call_tool(spec("c"), "t", {})
    assert sorted(pool.live()) == ["a", "c"]
    assert opener.closed == ["b"] and pool.evictions == 1
    # c was used just now (inside the grace period), a 10 s ago: a goes
    clock.advance(1)
    await pool.call_tool(spec("d"), "t", {})
    assert sorted(pool.live()) == ["c", "d"]
    await pool.close()


async def test_busy_connection_is_not_evicted_mid_call() -> None:
    opener, clock = FakeOpener(), FakeClock()
    pool = make_pool(opener, clock, max_connections=1, connect_timeout_seconds=0.5)
    blocked = asyncio.create_task(pool.call_tool(spec("a"), "block", {}))
    await asyncio.sleep(0)
    while not pool.live():
        await asyncio.sleep(0)
    clock.advance(100)
    with pytest.raises(PoolExhausted):
        await pool.call_tool(spec("b"), "t", {})
    assert not blocked.done()
    # once a's call is over and its grace period has passed, b gets the slot
    waiter = asyncio.create_task(pool.call_tool(spec("b"), "t", {}))
    opener.behaviour["release"].set()
    await blocked
    clock.advance(6)
    result = await asyncio.wait_for(waiter, 5)
    assert result["content"][0]["text"] == "b:t"
    assert pool.live() == ["b"]
    await pool.close()


async def test_idle_ttl_with_per_server_override_and_persistent_exemption() -> None:
    opener, clock = FakeOpener(), FakeClock()
    pool = make_pool(opener, clock, idle_ttl_seconds=900)
    await pool.call_tool(spec("default"), "t", {})
    await pool.call_tool(spec("short", idleTtlSeconds=60), "t", {})
    await pool.call_tool(spec("core", persistent=True), "t", {})
    clock.advance(61)
    assert await pool.expire_idle() == ["short"]
    clock.advance(900)
    assert await pool.expire_idle() == ["default"]
    clock.advance(10**6)
    assert await pool.expire_idle() == []
    assert pool.live() == ["core"]
    assert pool.status()["connections"][0]["expires_in_seconds"] is None
    await pool.close()


async def test_background_sweeper_expires_idle_connections() -> None:
    opener, clock = FakeOpener(), FakeClock()
    pool = make_pool(opener, clock, idle_ttl_seconds=60, sweep_interval_seconds=0.01)
    await pool.call_tool(spec("a"), "t", {})
    clock.advance(61)
    for _ in range(500):
        if pool.expirations:
            break
        await asyncio.sleep(0.01)
    assert pool.live() == [] and pool.expirations == 1
    await pool.close()


async def test_crash_is_retried_once_then_reported() -> None:
    opener, clock = FakeOpener(), FakeClock()
    pool = make_pool(opener, clock)
    with pytest.raises(ServerUnavailable, match="crashed twice"):
        await pool.call_tool(spec("a"), "crash", {})
    assert opener.opened == ["a", "a"] and pool.reconnects == 1
    # the next call gets a fresh connection and works
    assert (await pool.call_tool(spec("a"), "t", {}))["isError"] is False
    await pool.close()


async def test_call_timeout_never_hangs_the_caller() -> None:
    opener, clock = FakeOpener(), FakeClock()
    pool = make_pool(opener, clock)
    with pytest.raises(CallTimeout, match="timed out"):
        await asyncio.wait_for(pool.call_tool(spec("a"), "hang", {}, timeout=0.05), 5)
    assert pool.live() == []  # the hung connection was closed
    await pool.close()


async def test_protocol_error_is_reported_without_reconnecting() -> None:
    opener, clock = FakeOpener(), FakeClock()
    pool = make_pool(opener, clock)
    with pytest.raises(ToolCallFailed, match="unknown tool"):
        await pool.call_tool(spec("a"), "bad", {})
    assert opener.opened == ["a"] and pool.live() == ["a"]
    await pool.close()


async def test_changed_config_gets_a_new_connection() -> None:
    opener, clock = FakeOpener(), FakeClock()
    pool = make_pool(opener, clock)
    await pool.call_tool(spec("a"), "t", {})
    await pool.call_tool(spec("a", args=["--new"]), "t", {})
    assert opener.opened == ["a", "a"] and opener.closed == ["a"]
    await pool.close()
