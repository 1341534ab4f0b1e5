"""A settings change or a removed folder while a command runs on the engine (issue 14).

The server used to keep every engine a settings change replaced open until shutdown, and
closed a removed folder's engine while a command was still using it. Now new work goes to
the new engine at once, the running command finishes on the old one, and the old one is
closed right after, by its last user (engram.lsp.engines).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from tests.lsp.conftest import lsp_session, open_doc, seed, wait_for, wait_ready

from engram.workspace import Workspace

HELD_SERVER = Path(__file__).with_name("held_server.py")
GOTCHA_SEED = {
    "content": "parse_config must be called with an absolute path",
    "type": "gotcha",
    "file": "src/app.py",
    "start_line": 3,
    "end_line": 6,
}


def log_lines(hold: Path) -> list[str]:
    path = hold / "engines.log"
    return path.read_text().splitlines() if path.exists() else []


async def run_held_search(client: Any, hold: Path) -> tuple[asyncio.Task[Any], str]:
    """Start ``engram.search`` for HOLD; returns the task and the engine it runs on."""
    task = asyncio.ensure_future(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="engram.search", arguments=[{"query": "HOLD"}])
        )
    )
    started = hold / "started"
    # the engine's id, once written (an empty read is a file created but not yet written:
    # the CI failure of stop 20 read '' there and waited for "close " ever after)
    engine = await wait_for(
        lambda: started.read_text().strip() if started.exists() else "",
        what="the held search to start",
    )
    return task, str(engine)


async def closed(hold: Path, engine: str, what: str) -> None:
    """Until ``close ENGINE`` is logged; a timeout shows the log (and the server's stderr,
    at info, names who the engine still waited for)."""
    try:
        await wait_for(lambda: f"close {engine}" in log_lines(hold), what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; engines.log: {log_lines(hold)}") from None


def session_args(hold: Path) -> dict[str, Any]:
    # info: the server logs who a replaced engine waits for (in the captured stderr)
    env = {**os.environ, "ENGRAM_TEST_HOLD_DIR": str(hold), "ENGRAM_LOG_LEVEL": "info"}
    return {"server_command": [sys.executable, str(HELD_SERVER)], "server_env": env}


async def test_a_settings_change_lets_a_running_command_finish_then_closes_the_old_engine(
    app_workspace: Workspace, tmp_path: Path
) -> None:
    root = app_workspace.root
    seed(root, [dict(GOTCHA_SEED)])
    hold = tmp_path / "hold"
    hold.mkdir()
    async with lsp_session([root], configuration={}, **session_args(hold)) as client:
        await wait_ready(client)
        await open_doc(client, root / "src" / "app.py")
        task, old = await run_held_search(client, hold)

        # a section baked in at open (the embedder's) changes: a new engine for new work
        client.set_configuration({"embed": {"model": "none", "batch_size": 8}}, section="engram")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        await wait_for(
            lambda: sum(line.startswith("open ") for line in log_lines(hold)) >= 2,
            what="a new engine after the settings change",
        )
        await asyncio.sleep(0.5)
        assert f"close {old}" not in log_lines(hold)  # still in use: not closed under it

        (hold / "release").write_text("go")
        result = await asyncio.wait_for(task, 60)
        assert result is not None  # the command completed, no error
        await closed(hold, old, "the old engine closed")
        lines = log_lines(hold)
        assert lines.index(f"search done {old}") < lines.index(f"close {old}")
        # the new engine serves: a command after the change runs on it
        again = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="engram.search", arguments=[{"query": "paths"}])
        )
        assert again is not None


async def test_a_removed_folder_closes_its_engine_only_after_the_running_command(
    app_workspace: Workspace, tmp_path: Path
) -> None:
    root = app_workspace.root
    seed(root, [dict(GOTCHA_SEED)])
    hold = tmp_path / "hold"
    hold.mkdir()
    async with lsp_session([root], **session_args(hold)) as client:
        await wait_ready(client)
        task, old = await run_held_search(client, hold)
        folder = types.WorkspaceFolder(uri=root.resolve().as_uri(), name=root.name)
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(added=[], removed=[folder])
            )
        )
        await asyncio.sleep(1.0)
        assert f"close {old}" not in log_lines(hold)
        (hold / "release").write_text("go")
        result = await asyncio.wait_for(task, 60)
        assert result is not None
        await closed(hold, old, "the engine closed")
        lines = log_lines(hold)
        assert lines.index(f"search done {old}") < lines.index(f"close {old}")


async def test_a_retrieval_change_applies_at_once_on_the_open_engine(
    app_workspace: Workspace, tmp_path: Path
) -> None:
    """retrieval is read per request (config.SECTION_RELOAD): the open engine takes it in
    place, so the next context pack obeys it and no engine is opened or closed."""
    root = app_workspace.root
    seed(root, [dict(GOTCHA_SEED)])
    hold = tmp_path / "hold"
    hold.mkdir()
    context = types.ExecuteCommandParams(
        command="engram.context", arguments=[{"query": "parse_config path"}]
    )
    async with lsp_session([root], configuration={}, **session_args(hold)) as client:
        await wait_ready(client)
        await open_doc(client, root / "src" / "app.py")
        before = await client.workspace_execute_command_async(context)
        assert before["budget_tokens"] == 2000  # the default
        opened = [line for line in log_lines(hold) if line.startswith("open ")]
        assert len(opened) == 1

        client.set_configuration({"retrieval": {"default_budget_tokens": 123}}, section="engram")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

        async def budget() -> int:
            pack = await client.workspace_execute_command_async(context)
            return int(pack["budget_tokens"])

        for _ in range(600):  # the change is applied by a spawned task: poll the outcome
            if await budget() == 123:
                break
            await asyncio.sleep(0.05)
        assert await budget() == 123
        lines = log_lines(hold)
        assert [line for line in lines if line.startswith("open ")] == opened
        assert not any(line.startswith("close ") for line in lines)


async def change_settings(client: Any, settings: dict[str, Any]) -> None:
    client.set_configuration(settings, section="engram")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))


async def poll(read: Any, want: object) -> object:
    """``await read()`` until it equals ``want`` (a spawned task applies the change)."""
    got = await read()
    for _ in range(600):
        if got == want:
            break
        await asyncio.sleep(0.05)
        got = await read()
    return got


def engine_lines(hold: Path) -> list[str]:
    return [line for line in log_lines(hold) if line.startswith(("open ", "close "))]


async def test_an_mcp_change_rebuilds_only_the_hub(
    app_workspace: Workspace, tmp_path: Path
) -> None:
    """mcp is not baked into the engine (config.SECTION_RELOAD): the folder's MCP hub is
    closed and rebuilt with the new pool size; no engine is opened or closed."""
    root = app_workspace.root
    hold = tmp_path / "hold"
    hold.mkdir()
    status = types.ExecuteCommandParams(command="engram.mcp.status", arguments=[{}])
    async with lsp_session([root], configuration={}, **session_args(hold)) as client:
        await wait_ready(client)

        async def pool_size() -> int:
            reply = await client.workspace_execute_command_async(status)
            return int(reply["pool"]["max_connections"])

        assert await pool_size() == 10  # the default
        engines = engine_lines(hold)
        assert len(engines) == 1

        await change_settings(client, {"mcp": {"max_connections": 3}})
        assert await poll(pool_size, 3) == 3
        assert engine_lines(hold) == engines


async def test_an_index_change_applies_to_the_next_index_run_on_the_open_engine(
    app_workspace: Workspace, tmp_path: Path
) -> None:
    """index is read per run (config.SECTION_RELOAD): a new ``exclude`` applies to the next
    re-index on the same engine; no engine is opened or closed."""
    root = app_workspace.root
    hold = tmp_path / "hold"
    hold.mkdir()
    reindex = types.ExecuteCommandParams(command="engram.reindex", arguments=[{}])
    async with lsp_session([root], configuration={}, **session_args(hold)) as client:
        await wait_ready(client)
        first = await client.workspace_execute_command_async(reindex)
        assert first["files_seen"] == 2  # src/app.py, src/util.py
        engines = engine_lines(hold)
        assert len(engines) == 1

        await change_settings(client, {"index": {"exclude": ["src/util.py"]}})

        async def files_seen() -> int:
            report = await client.workspace_execute_command_async(reindex)
            return int(report["files_seen"])

        assert await poll(files_seen, 1) == 1
        assert engine_lines(hold) == engines
