"""MCP tools and the language server's ``workspace/executeCommand`` run in the workspace's
warm engine, as CLI commands do (issue 15, docs/engine.md "Front ends"): the front-end
process never loads LanceDB or the model for them, the engine's ``status`` counts their
requests, who acted stays ``agent:mcp`` / ``agent:lsp:<client>``, and when no engine can
be reached the front end answers in-process."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lsprotocol import types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from tests.lsp.conftest import lsp_session

from engram.workspace import Workspace

from .conftest import EngineEnv
from .test_engine_process import _ran_in_engine

#: Shared objects of the heavy libraries a front end must not load (``/proc/PID/maps``).
HEAVY_MAPS = ("lancedb", "pyarrow", "onnxruntime")
HEAVY_MODULES = ("lancedb", "pyarrow", "numpy", "onnxruntime", "fastembed")


@contextlib.asynccontextmanager
async def mcp_session(engine_env: EngineEnv, env: dict[str, str]) -> AsyncIterator[ClientSession]:
    Workspace.open(engine_env.root).ensure_engram_dir()  # set up, as the person does once
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "engram", "mcp-serve", "--workspace", str(engine_env.root)],
        env=env,
        cwd=str(engine_env.root),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def _tool(session: ClientSession, name: str, args: dict[str, object]) -> dict[str, object]:
    done = await session.call_tool(name, args)
    assert not done.is_error, done.content
    assert done.structured_content is not None
    return dict(done.structured_content)


def _status(engine_env: EngineEnv) -> dict[str, object]:
    run = engine_env.run("status", "--json")
    assert run.code == 0, run.err
    return dict(json.loads(run.out))


def _clients(status: dict[str, object], kind: str) -> list[dict[str, object]]:
    clients = status.get("clients")
    assert isinstance(clients, list)
    return [c for c in clients if isinstance(c, dict) and c.get("kind") == kind]


def _trail_actors(engine_env: EngineEnv, memory_id: str) -> list[tuple[str, str]]:
    found = engine_env.run("log", memory_id, "--json")
    assert found.code == 0, found.err
    return [(str(e["event"]), str(e["actor"])) for e in json.loads(found.out)["entries"]]


@pytest.mark.timeout(300)
async def test_mcp_tools_run_in_the_warm_engine(engine_env: EngineEnv) -> None:
    warm = engine_env.run("stats", "-V")
    engine_pid = _ran_in_engine(warm.err)
    assert engine_pid is not None, warm.err
    async with mcp_session(engine_env, engine_env.env) as session:
        made = await _tool(
            session, "engram_remember", {"text": "invoices are rounded per line, not per total"}
        )
        memory_id = str(made["id"])
        found = await _tool(session, "engram_search", {"query": "invoices rounded"})
        assert memory_id in json.dumps(found)
        await _tool(session, "engram_confirm", {"id": memory_id})
        bad = await session.call_tool("engram_show", {"id": "m-nothere000"})
        assert bad.is_error and "m-nothere000" in str(bad.content)

        status = _status(engine_env)
        assert status["pid"] == engine_pid
        (mcp,) = _clients(status, "mcp")
        assert int(str(mcp["requests"])) >= 4, mcp
        maps = Path(f"/proc/{mcp['pid']}/maps").read_text()
        assert not [h for h in HEAVY_MAPS if h in maps], "the MCP server loaded a store"
    # the CLI sees the MCP write at once, in the same engine, and who did what
    assert _trail_actors(engine_env, memory_id) == [
        ("create", "agent:mcp"),
        ("confirm", "agent:mcp"),
    ]
    assert engine_env.engine_pids() == [engine_pid]


@pytest.mark.timeout(300)
async def test_mcp_tools_work_in_process_without_an_engine(engine_env: EngineEnv) -> None:
    blocker = engine_env.runtime / "not-a-dir"
    blocker.write_text("")
    env = {**engine_env.env, "ENGRAM_RUNTIME_DIR": str(blocker)}
    async with mcp_session(engine_env, env) as session:
        made = await _tool(session, "engram_remember", {"text": "the cron runs in UTC"})
    assert str(made["id"]).startswith("m-")
    assert engine_env.engine_pids() == []
    listed = engine_env.run("list", "--json", env={**env, "ENGRAM_ENGINE": "off"})
    assert "the cron runs in UTC" in listed.out


@pytest.mark.timeout(300)
async def test_editor_commands_run_in_the_warm_engine(
    engine_env: EngineEnv, tmp_path: Path
) -> None:
    (engine_env.root / "billing.py").write_text("def charge(amount):\n    return amount\n")
    Workspace(engine_env.root).ensure_engram_dir()  # set up, as `engram setup` leaves it
    modules = tmp_path / "modules.json"
    async with lsp_session(
        [engine_env.root],
        client_name="claude-code",
        server_env={**engine_env.env, "ENGRAM_LSP_MODULES_FILE": str(modules)},
        fast=False,
    ) as client:
        made = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="engram.remember",
                arguments=[{"text": "charge() takes euros", "file": "billing.py"}],
            )
        )
        memory_id = str(made["id"])
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="engram.flag", arguments=[{"id": memory_id, "kind": "outdated"}]
            )
        )
        summary = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="engram.sessionSummary", arguments=[{}])
        )
        assert memory_id in json.dumps(summary["learned"]), summary
        assert memory_id in json.dumps(summary["corrected"]), summary
        status = _status(engine_env)
        (lsp,) = _clients(status, "lsp")
        maps = Path(f"/proc/{lsp['pid']}/maps").read_text()
        assert not [h for h in HEAVY_MAPS if h in maps], "the language server loaded a store"
    loaded = set(json.loads(modules.read_text()))
    assert not [m for m in loaded if m.split(".")[0] in HEAVY_MODULES]
    assert "engram.app.engine" not in loaded
    assert _trail_actors(engine_env, memory_id) == [
        ("create", "agent:lsp:claude-code"),
        ("flag", "agent:lsp:claude-code"),
    ]


def _time_hub(engine_env: EngineEnv, home: Path) -> dict[str, str]:
    """``mcp-server-time`` from PyPI as a server the repository defines (``.mcp.json``), and
    the environment of a user whose settings have not approved it yet."""
    home.mkdir()
    time_server = Path(sys.executable).with_name("mcp-server-time")
    (engine_env.root / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"time": {"command": str(time_server)}}})
    )
    (engine_env.root / "src").mkdir(exist_ok=True)
    (engine_env.root / "src" / "clock.py").write_text("TZ = 'UTC'\n")
    env = {**engine_env.env, "HOME": str(home)}
    env.pop("XDG_CONFIG_HOME", None)
    return env


async def _failing_call(session: ClientSession) -> dict[str, object]:
    """A hub call whose result is worth remembering (an unknown timezone), from a file."""
    failed = await _tool(
        session,
        "engram_call_tool",
        {
            "tool": "time/get_current_time",
            "arguments": {"timezone": "Mars/Olympus"},
            "file": "src/clock.py",
        },
    )
    assert failed["observation"] is not None, failed
    return failed


def _hub_observation(engine_env: EngineEnv, env: dict[str, str]) -> dict[str, object]:
    """The memory the hub saved, checked as the tool's word (issue 15 regression: the MCP
    server recorded it as the agent's own, ``agent_explicit`` at 0.7, without its file or
    the tool's argument names; docs/mcp-hub.md "Tool results as memories")."""
    listed = engine_env.run("list", "--json", "--review", env=env)
    assert listed.code == 0, listed.err
    memories = json.loads(listed.out)["memories"]
    (saved,) = [m for m in memories if "Mars/Olympus" in m["content"]]
    assert saved["type"] == "e2e_observation" and saved["needs_review"] is True
    assert saved["source"] == "mcp_auto" and saved["confidence"] == pytest.approx(0.6)
    assert saved["related_files"] == ["src/clock.py"] and not saved["user_verified"]
    assert {"mcp", "time__get_current_time"} <= set(saved["tags"]), saved["tags"]
    assert saved["extra"]["argument_names"] == ["timezone"], saved["extra"]
    assert saved["extra"]["mcp_tool"] == "time__get_current_time"
    trail = engine_env.run("log", str(saved["id"]), "--json", env=env)
    assert trail.code == 0, trail.err
    (created,) = json.loads(trail.out)["entries"]
    assert (created["event"], created["actor"]) == ("create", "agent:mcp")
    assert created["cause"] == "mcp hub: result of time__get_current_time via mcp tool"
    return dict(saved)


@pytest.mark.timeout(300)
async def test_mcp_hub_tools_keep_the_server_light_and_save_through_the_engine(
    engine_env: EngineEnv, tmp_path: Path
) -> None:
    """The hub tools start the user's real MCP servers (``mcp-server-time`` from PyPI) from
    the MCP server's process, behind the trust gate, with no engine in it: what a tool
    result taught is saved as the declared ``remember`` in the workspace engine, by
    ``agent:mcp``, as the tool's word (``mcp_auto``, 0.6, in review; docs/engine.md "Front
    ends", docs/trust.md)."""
    env = _time_hub(engine_env, tmp_path / "home")
    async with mcp_session(engine_env, env) as session:
        # a server the repository defines runs only once the user approved it
        refused = await session.call_tool(
            "engram_call_tool", {"tool": "time/get_current_time", "arguments": {"timezone": "UTC"}}
        )
        assert refused.is_error and "engram mcp trust time" in str(refused.content)
        trusted = engine_env.run("mcp", "trust", "time", env=env)
        assert trusted.code == 0, trusted.err

        found = await _tool(session, "engram_find_tools", {"query": "current time in a timezone"})
        assert "get_current_time" in json.dumps(found["tools"]), found
        now = await _tool(
            session,
            "engram_call_tool",
            {"tool": "time/get_current_time", "arguments": {"timezone": "UTC"}},
        )
        assert "UTC" in json.dumps(now) and now["observation"] is None
        # a failing call is worth remembering: saved in the engine, by the MCP client
        await _failing_call(session)

        status = _status(engine_env)
        (mcp,) = _clients(status, "mcp")
        assert int(str(mcp["requests"])) >= 1, mcp
        maps = Path(f"/proc/{mcp['pid']}/maps").read_text()
        assert not [h for h in HEAVY_MAPS if h in maps], "the MCP server loaded a store"

    _hub_observation(engine_env, env)


@pytest.mark.timeout(300)
async def test_mcp_hub_saves_the_same_in_process_without_an_engine(
    engine_env: EngineEnv, tmp_path: Path
) -> None:
    """No engine can be reached: the MCP server saves the observation on its own engine,
    with the same declaration and arguments, so the memory is the same as the engine's."""
    env = _time_hub(engine_env, tmp_path / "home")
    blocker = engine_env.runtime / "not-a-dir"
    blocker.write_text("")
    env = {**env, "ENGRAM_RUNTIME_DIR": str(blocker)}
    trusted = engine_env.run("mcp", "trust", "time", env=env)
    assert trusted.code == 0, trusted.err
    async with mcp_session(engine_env, env) as session:
        await _tool(session, "engram_find_tools", {"query": "current time in a timezone"})
        await _failing_call(session)
    assert engine_env.engine_pids() == []
    _hub_observation(engine_env, {**env, "ENGRAM_ENGINE": "off"})
