"""The ``engram.mcp.*`` executeCommand handlers through the LSP's command registry."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest
from mcp_helpers import WriteConfig, fake_server

from engram.config import EngramConfig
from engram.lsp.registry import CommandError, CommandRegistry
from engram.mcp.lsp_commands import register_commands
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


class FakeContext:
    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine
        self.changed: list[Any] = []

    async def call(self, fn: Callable[[Any], T], file: str | None = None) -> T:
        return fn(self.engine)

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
        assert kwargs["source"] == "mcp_auto" and kwargs["needs_review"]
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
