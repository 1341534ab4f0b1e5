"""The ``engram.mcp.*`` executeCommand handlers through the LSP's command registry."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import attrs
import pytest
from mcp_helpers import WriteConfig, fake_server

from engram.config import EngramConfig
from engram.lsp.mcp_commands import HubCache, register_commands
from engram.lsp.registry import CommandError, CommandRegistry
from engram.model import MemorySource
from engram.workspace import Workspace

T = TypeVar("T")


class FakeEngine:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.config = EngramConfig()
        self.remembered: list[tuple[str, dict[str, Any]]] = []

    def remember(self, content: str, **kwargs: Any) -> Any:
        self.remembered.append((content, kwargs))
        return SimpleNamespace(memory=SimpleNamespace(id=f"m{len(self.remembered)}"))


@pytest.fixture(autouse=True)
def remember_on_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    """The remember use case, answered by the fake engine (it records what was saved)."""
    monkeypatch.setattr(
        "engram.app.remember.remember", lambda e, content, **kw: e.remember(content, **kw)
    )


class FakeContext:
    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine
        self.changed: list[Any] = []

    async def call(self, fn: Callable[[Any], T], file: str | None = None) -> T:
        return fn(self.engine)

    async def in_engine(self, usecase: str, raw: Any, file: str | None = None) -> None:
        return None  # no workspace engine serves the folder: commands run in-process

    async def folder_settings(self, file: str | None = None) -> tuple[Any, Any]:
        return self.engine.workspace, self.engine.config

    def actor(self) -> None:
        return None  # the person at the editor

    async def memories_changed(self, memories: Sequence[Any], file: str | None = None) -> None:
        self.changed.extend(memories)


async def test_commands_list_search_call_status_refresh_suggest(
    tmp_workspace: Workspace,
    user_home: Path,
    write_config: WriteConfig,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    write_config(user_home / ".config" / "engram" / "mcp.json", {"f": fake_server()})
    registry = CommandRegistry()
    hubs = register_commands(registry)
    assert {
        "engram.mcp.list",
        "engram.mcp.search",
        "engram.mcp.call",
        "engram.mcp.status",
        "engram.mcp.refresh",
        "engram.mcp.suggest",
    } <= set(registry.names())
    assert "engram.mcp.trust" not in registry  # approval stays a terminal action
    engine = FakeEngine(tmp_workspace)
    ctx: Any = FakeContext(engine)
    try:
        refreshed = await registry.execute(ctx, "engram.mcp.refresh", [{}])
        assert refreshed["refreshed"] == ["f"]
        listed = await registry.execute(ctx, "engram.mcp.list", [{"withSchema": True}])
        assert any(t["name"] == "f__add" and "input_schema" in t for t in listed["tools"])
        found = await registry.execute(
            ctx, "engram.mcp.search", [{"query": "add two integers", "k": 2}]
        )
        assert found["tools"][0]["name"] == "f__add"
        result = await registry.execute(
            ctx, "engram.mcp.call", [{"tool": "f__add", "args": {"a": 1, "b": 2}}]
        )
        assert result["structuredContent"] == {"result": 3}
        failed = await registry.execute(
            ctx, "engram.mcp.call", [{"tool": "f__fail", "file": "src/x.py"}]
        )
        assert failed["isError"] and failed["memory_ids"] == ["m1"]
        content, kwargs = engine.remembered[0]
        assert "dev server" in content
        # the declared remember's one rule for a hub observation (observed_by: mcp_hub)
        assert kwargs["source"] == MemorySource.MCP_AUTO and kwargs["needs_review"]
        assert kwargs["related_files"] == ["src/x.py"]
        assert kwargs["cause"] == "mcp hub: result of f__fail via lsp executeCommand"
        assert ctx.changed
        status = await registry.execute(ctx, "engram.mcp.status", [{}])
        assert status["pool"]["live"] == 1
        suggested = await registry.execute(
            ctx, "engram.mcp.suggest", [{"file": "src/x.py", "selection": "echo the text back"}]
        )
        assert suggested["tools"][0]["name"] == "f__echo"
        with pytest.raises(CommandError, match="no MCP tool"):
            await registry.execute(ctx, "engram.mcp.call", [{"tool": "nope"}])
        with pytest.raises(CommandError, match="unknown argument"):
            await registry.execute(ctx, "engram.mcp.search", [{"qury": "x"}])
    finally:
        await hubs.close()


def test_selection_arguments_fill_only_what_the_selection_can() -> None:
    from engram.lsp.mcp_commands import selection_arguments, tool_action_specs

    one_string = {"properties": {"text": {"type": "string"}}, "required": ["text"]}
    assert selection_arguments(one_string, "hello") == {"text": "hello"}
    assert selection_arguments({"properties": {}}, "x") == {}
    two = {
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    assert selection_arguments(two, "1 2") is None
    number = {"properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert selection_arguments(number, "3") is None
    specs = tool_action_specs(
        [
            {"name": "f__echo", "description": "Echo text back", "input_schema": one_string},
            {"name": "f__add", "description": "Add", "input_schema": two},
        ],
        "hello",
    )
    assert specs == [
        {
            "title": "MCP: f__echo — Echo text back",
            "tool": "f__echo",
            "arguments": {"text": "hello"},
        }
    ]


async def test_code_actions_offer_runnable_tools_and_run_shows_the_result(
    tmp_workspace: Workspace,
    user_home: Path,
    write_config: WriteConfig,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    write_config(user_home / ".config" / "engram" / "mcp.json", {"f": fake_server()})
    registry = CommandRegistry()
    hubs = register_commands(registry)
    assert len(registry.action_providers) == 1 and registry.closers

    shown: list[str] = []

    class ShowingContext(FakeContext):
        async def show_message(self, text: str) -> None:
            shown.append(text)

    ctx: Any = ShowingContext(FakeEngine(tmp_workspace))
    try:
        await registry.execute(ctx, "engram.mcp.refresh", [{}])
        actions = await registry.action_providers[0](ctx, "src/x.py", "echo this text back")
        echo = [a for a in actions if a["arguments"]["tool"] == "f__echo"]
        assert echo, actions
        assert echo[0]["command"] == "engram.mcp.run"
        assert all(a["arguments"]["tool"] != "f__add" for a in actions)  # needs two numbers
        result = await registry.execute(ctx, "engram.mcp.run", [echo[0]["arguments"]])
        assert not result.get("isError")
        assert shown and "f__echo returned" in shown[0] and "echo this text back" in shown[0]
    finally:
        for closer in registry.closers:
            await closer()
    assert hubs is not None


async def test_an_mcp_settings_change_rebuilds_the_hub_never_under_a_command(
    tmp_workspace: Workspace, user_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``HubCache.drop`` (an ``mcp`` settings change): the next command gets a hub with the
    new pool settings; the old hub closes when the command using it finishes."""
    monkeypatch.setenv("HOME", str(user_home))
    cache = HubCache()
    engine = FakeEngine(tmp_workspace)
    ctx: Any = FakeContext(engine)
    closed: list[object] = []
    async with cache.use(ctx, None) as old:
        real_close = old.close

        async def close() -> None:
            closed.append(old)
            await real_close()

        monkeypatch.setattr(old, "close", close)
        assert old.pool.max_connections == 10
        engine.config = attrs.evolve(
            engine.config, mcp=attrs.evolve(engine.config.mcp, max_connections=2)
        )
        assert await cache.drop(tmp_workspace.root)
        assert closed == []  # a command still uses it
        async with cache.use(ctx, None) as new:
            assert new is not old and new.pool.max_connections == 2
    assert closed == [old]  # closed by its last command
    assert cache.open_roots == [tmp_workspace.root]
    await cache.close()
