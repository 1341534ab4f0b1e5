"""Who did it survives the trip through the workspace engine (docs/trust.md "Agents are
not people", docs/engine.md): a CLI command the engine runs for a thin ``engram`` process
is still the person's, an MCP tool call is ``agent:mcp``, and an agent's language-server
client is ``agent:lsp:<name>``, all in one audit trail the engine serves. An agent's
command that arrives before the window has read its folder's settings is an agent's too
(it was recorded as the person's)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from tests.lsp.conftest import lsp_session

from .conftest import EngineEnv
from .test_engine_process import _ran_in_engine


def _trail(engine_env: EngineEnv, memory_id: str) -> list[dict[str, object]]:
    found = engine_env.run("log", memory_id, "--json", "-V")
    assert found.code == 0, found.err
    assert _ran_in_engine(found.err) is not None, found.err
    return list(json.loads(found.out)["entries"])


async def _mcp_confirm(engine_env: EngineEnv, memory_id: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "engram", "mcp-serve", "--workspace", str(engine_env.root)],
        env=engine_env.env,
        cwd=str(engine_env.root),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        done = await session.call_tool("engram_confirm", {"id": memory_id})
        assert not done.is_error, done.content


async def _lsp_agent_flag(engine_env: EngineEnv, memory_id: str) -> None:
    async with lsp_session(
        [engine_env.root], client_name="claude-code", server_env=engine_env.env, fast=False
    ) as client:
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="engram.flag",
                arguments=[{"id": memory_id, "kind": "outdated", "note": "seen in review"}],
            )
        )


@pytest.mark.timeout(300)
async def test_every_front_end_keeps_its_actor_through_the_engine(
    engine_env: EngineEnv, tmp_path: Path
) -> None:
    made = engine_env.run("remember", "-V", "the nightly job runs at 02:00 UTC")
    assert made.code == 0, made.err
    engine_pid = _ran_in_engine(made.err)
    assert engine_pid is not None, made.err
    memory_id = made.out.strip()
    taught_by_agent = engine_env.run(
        "remember", "--source", "agent_explicit", "the job retries three times"
    )
    assert taught_by_agent.code == 0, taught_by_agent.err

    first = _trail(engine_env, memory_id)
    assert str(first[0]["actor"]).startswith("person"), first
    agent_trail = _trail(engine_env, taught_by_agent.out.strip())
    assert str(agent_trail[0]["actor"]).startswith("agent"), agent_trail

    confirmed = engine_env.run("confirm", "-V", memory_id)
    assert confirmed.code == 0, confirmed.err
    assert _ran_in_engine(confirmed.err) == engine_pid, confirmed.err
    await _mcp_confirm(engine_env, memory_id)
    await _lsp_agent_flag(engine_env, memory_id)

    trail = _trail(engine_env, memory_id)
    by_event = [(str(e["event"]), str(e["actor"])) for e in trail]
    person = str(first[0]["actor"])
    assert by_event[1:] == [
        ("confirm", person),
        ("confirm", "agent:mcp"),
        ("flag", "agent:lsp:claude-code"),
    ], by_event
    assert engine_env.engine_pids() == [engine_pid]
