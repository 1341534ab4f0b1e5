"""The hub against real MCP servers: mcp-server-time, mcp-server-git and the in-test server.

Every test closes its hub and checks that no child process survives.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import VENV_BIN, WriteConfig, alive, fake_server, pids_in

from engram.config import McpConfig
from engram.mcphub import (
    CallTimeout,
    ConfigChanged,
    McpHub,
    ObservationDraft,
    ServerNotTrusted,
    ServerUnavailable,
    ToolNotFound,
)
from engram.workspace import Workspace


def child_pids() -> set[int]:
    """Live (non-zombie) direct children of this test process."""
    me = str(os.getpid())
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            found.add(int(entry.name))
    return found


def make_hub(ws: Workspace, home: Path, environ: dict[str, str], **config: Any) -> McpHub:
    settings: dict[str, Any] = {"connect_timeout_seconds": 20.0, "call_timeout_seconds": 20.0}
    settings.update(config)
    return McpHub(ws, McpConfig(**settings), home=home, environ=environ)


def user_config(home: Path) -> Path:
    return home / ".config" / "engram" / "mcp.json"


async def test_time_and_git_servers_lazy_call_and_clean_shutdown(
    tmp_workspace: Workspace, user_home: Path, environ: dict[str, str], write_config: WriteConfig
) -> None:
    (tmp_workspace.root / "a.txt").write_text("hello\n")
    write_config(
        user_config(user_home),
        {
            "time": {"command": str(VENV_BIN / "mcp-server-time")},
            "git": {"command": str(VENV_BIN / "python"), "args": ["-m", "mcp_server_git"]},
        },
    )
    before = child_pids()
    hub = make_hub(tmp_workspace, user_home, environ)
    try:
        assert (await hub.list())["tools"] == []
        report = await hub.refresh()
        assert report["refreshed"] == ["git", "time"], report
        assert child_pids() == before  # introspection disconnects again
        names = {t["name"] for t in (await hub.list())["tools"]}
        assert {"time__get_current_time", "git__git_status"} <= names
        found = await hub.search("current time in a timezone", k=3)
        assert found["tools"][0]["name"] == "time__get_current_time"
        assert found["tools"][0]["input_schema"]["required"] == ["timezone"]
        result = await hub.call("time__get_current_time", {"timezone": "Asia/Tokyo"})
        assert not result["isError"] and "+09:00" in str(result["structuredContent"])
        git = await hub.call("git__git_status", {"repo_path": str(tmp_workspace.root)})
        assert "a.txt" in str(git["content"])
        live = (await hub.status())["pool"]
        assert live["live"] == 2
        assert len(child_pids() - before) == 2
    finally:
        await hub.close()
    assert child_pids() == before


async def test_untrusted_workspace_server_is_never_started_until_approved(
    tmp_workspace: Workspace,
    user_home: Path,
    environ: dict[str, str],
    write_config: WriteConfig,
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "pids"
    cfg = write_config(
        tmp_workspace.root / ".mcp.json", {"repo": fake_server(env={"FAKE_PIDFILE": str(pidfile)})}
    )
    hub = make_hub(tmp_workspace, user_home, environ)
    try:
        report = await hub.refresh()
        assert "repo" in report["skipped"] and report["refreshed"] == []
        with pytest.raises(ServerNotTrusted, match="engram mcp trust repo"):
            await hub.call("repo__echo", {"text": "x"})
        assert (await hub.search("echo text"))["tools"] == []
        assert not pidfile.exists()  # nothing was spawned, not even for introspection

        approved = await hub.trust(["repo"])
        assert approved["approved"][0]["name"] == "repo"
        # the approval lives in the user's config dir, not in the workspace
        assert (user_home / ".config" / "engram" / "approvals.json").exists()
        assert not list(tmp_workspace.root.rglob("approvals.json"))
        assert (await hub.refresh())["refreshed"] == ["repo"]
        assert len(pids_in(pidfile)) == 1
        assert (await hub.call("repo__echo", {"text": "hi"}))["content"][0]["text"] == "hi"
        assert len(pids_in(pidfile)) == 2

        # the repository changes the command line: blocked until re-approved
        write_config(cfg, {"repo": fake_server("--tools", "1", env={"FAKE_PIDFILE": str(pidfile)})})
        with pytest.raises(ServerNotTrusted, match="config changed since approval"):
            await hub.call("repo__echo", {"text": "x"})
        assert (await hub.refresh())["skipped"]
        assert len(pids_in(pidfile)) == 2
        await hub.trust(["repo"])
        with pytest.raises(ConfigChanged, match="engram mcp refresh"):
            await hub.call("repo__echo", {"text": "x"})
        await hub.refresh(["repo"])
        assert (await hub.call("repo__gen_0", {"value": "v"}))["content"][0]["text"] == "fake-0:v"
    finally:
        await hub.close()
    assert not [p for p in pids_in(pidfile) if alive(p)]


async def test_child_gets_only_allow_listed_env_and_cache_has_no_secret(
    tmp_workspace: Workspace, user_home: Path, environ: dict[str, str], write_config: WriteConfig
) -> None:
    env = dict(environ, PARENT_ONLY_SECRET="do-not-leak", MY_TOKEN="tok-VALUE-123")
    write_config(
        user_config(user_home), {"f": fake_server(env={"API_TOKEN": "${MY_TOKEN}", "MODE": "x"})}
    )
    hub = McpHub(tmp_workspace, McpConfig(), home=user_home, environ=env)
    try:
        await hub.refresh()
        names = (await hub.call("f__env_names", {}))["structuredContent"]["result"]
        assert "API_TOKEN" in names and "MODE" in names and "PATH" in names
        assert "PARENT_ONLY_SECRET" not in names
        value = await hub.call("f__env_value", {"name": "API_TOKEN"})
        assert value["content"][0]["text"] == "tok-VALUE-123"
    finally:
        await hub.close()
    cache = (tmp_workspace.root / ".engram" / "mcp" / "registry.json").read_text()
    assert "tok-VALUE-123" not in cache and "MY_TOKEN" not in cache


async def test_crash_mid_call_is_reconnected_once_then_reported(
    tmp_workspace: Workspace,
    user_home: Path,
    environ: dict[str, str],
    write_config: WriteConfig,
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "pids"
    write_config(user_config(user_home), {"f": fake_server(env={"FAKE_PIDFILE": str(pidfile)})})
    hub = make_hub(tmp_workspace, user_home, environ)
    try:
        await hub.refresh()
        with pytest.raises(ServerUnavailable, match="crashed twice"):
            await asyncio.wait_for(hub.call("f__crash", {}), 60)
        assert hub.pool.reconnects == 1
        # concurrent calls after the crash share one fresh connection
        results = await asyncio.gather(*(hub.call("f__add", {"a": i, "b": 1}) for i in range(8)))
        assert [r["structuredContent"]["result"] for r in results] == [i + 1 for i in range(8)]
        pids = {
            r["structuredContent"]["result"]
            for r in await asyncio.gather(*(hub.call("f__pid", {}) for _ in range(4)))
        }
        assert len(pids) == 1
    finally:
        await hub.close()
    assert not [p for p in pids_in(pidfile) if alive(p)]


async def test_hanging_tool_times_out_and_the_server_is_killed(
    tmp_workspace: Workspace,
    user_home: Path,
    environ: dict[str, str],
    write_config: WriteConfig,
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "pids"
    write_config(user_config(user_home), {"f": fake_server(env={"FAKE_PIDFILE": str(pidfile)})})
    hub = make_hub(tmp_workspace, user_home, environ, call_timeout_seconds=1.0)
    try:
        await hub.refresh()
        with pytest.raises(CallTimeout, match="timed out after 1s"):
            await asyncio.wait_for(hub.call("f__hang", {}), 30)
        assert (await hub.call("f__echo", {"text": "again"}))["content"][0]["text"] == "again"
    finally:
        await hub.close()
    assert len(pids_in(pidfile)) == 3 and not [p for p in pids_in(pidfile) if alive(p)]


async def test_junk_and_dead_servers_fail_refresh_with_a_clear_error(
    tmp_workspace: Workspace,
    user_home: Path,
    environ: dict[str, str],
    write_config: WriteConfig,
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "pids"
    write_config(
        user_config(user_home),
        {
            "junk": fake_server("junk", env={"FAKE_PIDFILE": str(pidfile)}),
            "dead": fake_server("exit"),
            "missing": {"command": str(tmp_path / "no-such-binary")},
        },
    )
    hub = make_hub(tmp_workspace, user_home, environ, connect_timeout_seconds=1.5)
    try:
        report = await asyncio.wait_for(hub.refresh(), 60)
        assert set(report["failed"]) == {"junk", "dead", "missing"}
        assert "handshake" in report["failed"]["junk"]
        assert "could not start" in report["failed"]["missing"]
        states = {s["name"]: s["state"] for s in (await hub.status())["servers"]}
        assert states == {"junk": "error", "dead": "error", "missing": "error"}
        with pytest.raises(ServerUnavailable, match="failed its last introspection"):
            await hub.call("junk__anything", {})
        with pytest.raises(ToolNotFound):
            await hub.call("nobody__tool", {})
    finally:
        await hub.close()
    assert not [p for p in pids_in(pidfile) if alive(p)]


async def test_notable_result_becomes_a_memory_draft(
    tmp_workspace: Workspace, user_home: Path, environ: dict[str, str], write_config: WriteConfig
) -> None:
    write_config(user_config(user_home), {"f": fake_server()})
    drafts: list[ObservationDraft] = []
    hub = McpHub(
        tmp_workspace, McpConfig(), home=user_home, environ=environ, memory_sink=drafts.append
    )
    try:
        await hub.refresh()
        plain = await hub.call("f__echo", {"text": "fine"}, file="src/app.py")
        assert plain["observation"] is None
        failed = await hub.call("f__fail", {}, file="src/app.py")
        assert failed["isError"] and failed["observation"] == "precondition"
    finally:
        await hub.close()
    [draft] = drafts
    declared = draft.declared_args()  # what both hubs send to the declared remember
    assert declared["observed_by"] == "mcp_hub" and declared["tool"] == "f__fail"
    assert declared["type"] == "e2e_observation" and declared["related_files"] == ["src/app.py"]
    assert "dev server must be running" in draft.content
    # usage was recorded per module, and lifts the tool for that module
    hub2 = McpHub(tmp_workspace, McpConfig(), home=user_home, environ=environ)
    usage = hub2.usage()
    assert usage.popularity()["f__echo"] == 1
    assert usage.for_module("src") == {"f__echo": 1}
    await hub2.close()


async def test_streamable_http_server_is_searched_and_called(
    tmp_workspace: Workspace, user_home: Path, environ: dict[str, str], write_config: WriteConfig
) -> None:
    """A server the user runs over streamable HTTP: no process for the hub to start."""
    import socket
    import subprocess
    import sys

    from mcp_helpers import FAKE_SERVER

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, str(FAKE_SERVER), "ok", "--name", "web", "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):  # until it listens
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the HTTP MCP server did not start")
        write_config(
            user_config(user_home), {"web": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}}
        )
        before = child_pids()
        hub = make_hub(tmp_workspace, user_home, environ)
        try:
            report = await hub.refresh()
            assert report["refreshed"] == ["web"], report
            found = await hub.search("echo the given text back", k=3)
            assert found["tools"][0]["name"] == "web__echo"
            result = await hub.call("web__echo", {"text": "over http"})
            assert not result["isError"] and "over http" in str(result["content"])
            added = await hub.call("web__add", {"a": 2, "b": 40})
            assert "42" in str(added["content"])
            assert child_pids() == before  # nothing spawned: the server is the user's
        finally:
            await hub.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
