"""Nothing acknowledged is lost when the engine is killed (-9) in the middle of writes.

Eight writers at once, over the four kinds of front end: three CLI processes (forwarded to
the engine), two writers in one editor window (``engram.remember`` over LSP), two in one
MCP server (``engram_remember``), and one agent hook drain (``engram observe
--drain-inbox``, whose acknowledgement is its exit status). The engine is killed while
they write; they go on (reconnecting, restarting it, or in-process). Afterwards every
memory id a writer was given back must be in the store.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
import time
from typing import Any

import pytest
from lsprotocol import types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from .conftest import EngineEnv
from .test_thin_lsp import window

WRITE_SECONDS = 6.0


def _memory_id(payload: Any) -> str | None:
    if isinstance(payload, dict):
        memory = payload.get("memory")
        if isinstance(memory, dict) and isinstance(memory.get("id"), str):
            return str(memory["id"])
        if isinstance(payload.get("id"), str):
            return str(payload["id"])
    return None


@pytest.mark.timeout(600)
async def test_kill_9_during_writes_from_every_kind_of_front_end(engine_env: EngineEnv) -> None:
    assert engine_env.run("stats").code == 0  # the engine runs
    (first_pid,) = engine_env.engine_pids()
    acked: dict[str, list[str]] = {"cli": [], "lsp": [], "mcp": [], "hook": []}
    lock = threading.Lock()
    stop_at = time.monotonic() + WRITE_SECONDS
    killed = threading.Event()

    def cli_writer(n: int) -> None:
        i = 0
        while time.monotonic() < stop_at or i == 0:
            run = engine_env.run("remember", f"cli writer {n} fact {i} about retries")
            if run.code == 0 and run.out.strip().startswith("m-"):
                with lock:
                    acked["cli"].append(run.out.strip())
            i += 1

    def hook_writer() -> None:
        inbox = engine_env.root / ".engram" / "agents" / "inbox"
        i = 0
        while time.monotonic() < stop_at or i == 0:
            inbox.mkdir(parents=True, exist_ok=True)
            payload = {
                "session_id": "fault",
                "hook_event_name": "PostToolUse",
                "tool_name": "Read",
                "tool_input": {"file_path": str(engine_env.root / "a.py")},
                "cwd": str(engine_env.root),
            }
            with (inbox / "fault.jsonl").open("a") as fh:
                fh.write(json.dumps(payload) + "\n")
            run = engine_env.run(
                "observe", "--format", "claude-code", "--drain-inbox", stdin=json.dumps(payload)
            )
            if run.code == 0:
                with lock:
                    acked["hook"].append(f"drain {i}")
            i += 1

    def killer() -> None:
        time.sleep(WRITE_SECONDS / 3)
        os.kill(first_pid, signal.SIGKILL)
        killed.set()

    async def lsp_writers() -> None:
        async with window(engine_env) as client:

            async def write(n: int) -> None:
                i = 0
                while time.monotonic() < stop_at or i == 0:
                    try:
                        result = await client.workspace_execute_command_async(
                            types.ExecuteCommandParams(
                                command="engram.remember",
                                arguments=[{"text": f"lsp writer {n} fact {i} about caching"}],
                            )
                        )
                    except Exception:
                        result = None
                    memory_id = _memory_id(result)
                    if memory_id:
                        with lock:
                            acked["lsp"].append(memory_id)
                    i += 1

            await asyncio.gather(write(0), write(1))

    async def mcp_writers() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "engram", "mcp-serve", "--workspace", str(engine_env.root)],
            env=engine_env.env,
            cwd=str(engine_env.root),
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()

            async def one(n: int) -> None:
                i = 0
                while time.monotonic() < stop_at or i == 0:
                    try:
                        result = await session.call_tool(
                            "engram_remember", {"text": f"mcp writer {n} fact {i} about queues"}
                        )
                        data = result.structured_content or json.loads(result.content[0].text)
                        payload = data.get("result", data) if isinstance(data, dict) else None
                    except Exception:
                        payload = None
                    memory_id = _memory_id(payload)
                    if memory_id:
                        with lock:
                            acked["mcp"].append(memory_id)
                    i += 1

            await asyncio.gather(one(0), one(1))

    threads = [threading.Thread(target=cli_writer, args=(n,)) for n in range(3)]
    threads += [threading.Thread(target=hook_writer), threading.Thread(target=killer)]
    for thread in threads:
        thread.start()
    await asyncio.gather(lsp_writers(), mcp_writers())
    for thread in threads:
        thread.join(timeout=300)
    assert killed.is_set()

    print("acknowledged:", {kind: len(ids) for kind, ids in acked.items()})  # shown with -s
    listed = engine_env.run("list", "--json", "--all", "--limit", "10000")
    assert listed.code == 0, listed.err
    stored = {m["id"] for m in json.loads(listed.out)["memories"]}
    for kind in ("cli", "lsp", "mcp"):
        assert acked[kind], f"no {kind} write was acknowledged"
        missing = [m for m in acked[kind] if m not in stored]
        assert not missing, f"{kind}: acknowledged but lost: {missing}"
    assert acked["hook"], "no hook drain finished"
    assert first_pid not in engine_env.engine_pids()


def test_an_engine_whose_workspace_moved_exits(engine_env: EngineEnv, tmp_path: Any) -> None:
    """``mv ws elsewhere`` while its engine runs: a command in the moved folder starts an
    engine there, and the old one kept the store open (and its memory) until its idle
    exit, minutes later; nothing can name its root to stop it. It now stops itself."""
    from engram.daemon.client import pid_alive

    (engine_env.root / "app.py").write_text("def main():\n    return 1\n")
    assert engine_env.run("remember", "main returns 1 on purpose").code == 0
    [old] = engine_env.engine_pids()
    moved = tmp_path / "moved"
    engine_env.root.rename(moved)
    deadline = time.monotonic() + 20
    while pid_alive(old) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(old), "the engine of a moved workspace stayed"
    log = (moved / ".engram" / "logs" / "engine.log").read_text()
    assert "is gone (moved or deleted)" in log
    # the moved workspace works, with its memories
    again = EngineEnv(moved, engine_env.runtime, engine_env.env)
    listed = again.run("list")
    assert listed.code == 0 and "main returns 1 on purpose" in listed.out, listed
    assert again.run("stop").code == 0
    moved.rename(engine_env.root)  # where the fixture's teardown looks
