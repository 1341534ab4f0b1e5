"""Config discovery, dialects, identity hashing, approvals and the secret-free cache."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from mcp_helpers import WriteConfig

from engram.mcphub.registry import CachedServer, Registry, RegistryCache, ToolInfo
from engram.mcphub.sources import (
    UnresolvedVariable,
    config_hash,
    expand,
    parse_server,
    resolve_launch,
    scan_sources,
)
from engram.mcphub.trust import ApprovalStore
from engram.workspace import Workspace


def test_every_supported_config_file_is_read(
    tmp_workspace: Workspace, user_home: Path, environ: dict[str, str], write_config: WriteConfig
) -> None:
    root = tmp_workspace.root
    write_config(root / ".mcp.json", {"claude": {"command": "a"}})
    write_config(
        root / ".vscode" / "mcp.json",
        {
            "vscode": {
                "type": "http",
                "url": "https://x.invalid/mcp",
                "headers": {"Authorization": "Bearer t"},
            }
        },
        "servers",
    )
    write_config(root / ".cursor" / "mcp.json", {"cursor": {"command": "c", "args": ["--x"]}})
    write_config(root / ".engram" / "mcp.json", {"own": {"command": "d", "persistent": True}})
    write_config(user_home / ".config" / "engram" / "mcp.json", {"mine": {"command": "e"}})
    write_config(
        user_home / ".config" / "Claude" / "claude_desktop_config.json", {"desk": {"command": "f"}}
    )
    (user_home / ".claude.json").write_text(
        json.dumps(
            {
                "mcpServers": {"cc_user": {"command": "g"}},
                "projects": {str(root): {"mcpServers": {"cc_local": {"command": "h"}}}},
            }
        )
    )
    scan = scan_sources(root, home=user_home, environ=environ)
    by_name = {s.name: s for s in scan.servers}
    assert set(by_name) == {
        "claude",
        "vscode",
        "cursor",
        "own",
        "mine",
        "desk",
        "cc_user",
        "cc_local",
    }
    assert by_name["vscode"].transport == "http"
    assert by_name["vscode"].headers == {"Authorization": "Bearer t"}
    assert by_name["own"].persistent
    assert {n for n, s in by_name.items() if s.scope == "workspace"} == {
        "claude",
        "vscode",
        "cursor",
        "own",
    }
    assert {n for n, s in by_name.items() if s.scope == "user"} == {
        "mine",
        "desk",
        "cc_user",
        "cc_local",
    }
    assert scan.problems == []


def test_project_file_shadows_user_file_and_bad_entries_are_problems(
    tmp_workspace: Workspace, user_home: Path, environ: dict[str, str], write_config: WriteConfig
) -> None:
    root = tmp_workspace.root
    write_config(root / ".mcp.json", {"git": {"command": "project-git"}, "bad": {"args": ["x"]}})
    write_config(user_home / ".config" / "engram" / "mcp.json", {"git": {"command": "user-git"}})
    (root / ".cursor").mkdir()
    (root / ".cursor" / "mcp.json").write_text("{not json")
    scan = scan_sources(root, home=user_home, environ=environ)
    assert [s.command for s in scan.servers] == ["project-git"]
    assert scan.shadowed == [("git", str(user_home / ".config" / "engram" / "mcp.json"))]
    messages = " | ".join(p.message for p in scan.problems)
    assert "needs a 'command'" in messages
    assert "not valid JSON" in messages


def test_config_hash_covers_command_args_and_env_names_not_values() -> None:
    base = parse_server(
        "s", {"command": "run", "args": ["-v"], "env": {"TOKEN": "one"}}, origin="o", scope="user"
    )
    same_names = parse_server(
        "s", {"command": "run", "args": ["-v"], "env": {"TOKEN": "two"}}, origin="o", scope="user"
    )
    other_args = parse_server(
        "s", {"command": "run", "args": ["-q"], "env": {"TOKEN": "one"}}, origin="o", scope="user"
    )
    other_env = parse_server(
        "s", {"command": "run", "args": ["-v"], "env": {"KEY": "one"}}, origin="o", scope="user"
    )
    other_cmd = parse_server(
        "s", {"command": "evil", "args": ["-v"], "env": {"TOKEN": "one"}}, origin="o", scope="user"
    )
    assert config_hash(base) == config_hash(same_names)
    assert len({config_hash(x) for x in (base, other_args, other_env, other_cmd)}) == 4


def test_variables_expand_like_claude_code_and_vscode(tmp_path: Path) -> None:
    env = {"TOKEN": "t0k"}
    kw = {"environ": env, "workspace_root": tmp_path, "home": Path("/h")}
    assert expand("${TOKEN}-${MISSING:-dflt}-${env:TOKEN}", **kw) == "t0k-dflt-t0k"  # type: ignore[arg-type]
    assert expand("${workspaceFolder}/x ${userHome}", **kw) == f"{tmp_path}/x /h"  # type: ignore[arg-type]
    with pytest.raises(UnresolvedVariable, match="NOPE"):
        expand("${NOPE}", **kw)  # type: ignore[arg-type]
    with pytest.raises(UnresolvedVariable, match="input"):
        expand("${input:apiKey}", **kw)  # type: ignore[arg-type]
    spec = parse_server(
        "s",
        {"command": "${TOKEN}", "cwd": "sub"},
        origin=str(tmp_path / ".mcp.json"),
        scope="workspace",
    )
    launch = resolve_launch(spec, environ=env, workspace_root=tmp_path, home=Path("/h"))
    assert launch.command == "t0k" and launch.cwd == str(tmp_path / "sub")


def test_workspace_servers_need_approval_of_the_exact_config(tmp_path: Path) -> None:
    approvals = ApprovalStore(tmp_path / "user-config")
    ws = tmp_path / "ws"
    spec = parse_server(
        "x", {"command": "run", "env": {"K": "v1"}}, origin=str(ws / ".mcp.json"), scope="workspace"
    )
    assert not approvals.decide(ws, spec).trusted
    approvals.approve(ws, spec)
    assert approvals.decide(ws, spec).trusted
    # the approval is stored in the user's directory, keyed by workspace, never in the workspace
    assert approvals.path.parent == tmp_path / "user-config"
    assert not approvals.decide(tmp_path / "other-ws", spec).trusted
    changed_args = parse_server(
        "x",
        {"command": "run", "args": ["--evil"], "env": {"K": "v1"}},
        origin=spec.origin,
        scope="workspace",
    )
    assert approvals.decide(ws, changed_args).reason == "config changed since approval"
    changed_value = parse_server(
        "x",
        {"command": "run", "env": {"K": "--require ./evil.js"}},
        origin=spec.origin,
        scope="workspace",
    )
    decision = approvals.decide(ws, changed_value)
    assert not decision.trusted and "values changed" in decision.reason
    # the approvals file holds no env value
    assert "v1" not in approvals.path.read_text()
    user_spec = parse_server(
        "y", {"command": "run"}, origin="~/.config/engram/mcp.json", scope="user"
    )
    assert approvals.decide(ws, user_spec).trusted


def test_cache_never_contains_env_or_header_values(
    tmp_workspace: Workspace, user_home: Path, environ: dict[str, str], write_config: WriteConfig
) -> None:
    root = tmp_workspace.root
    write_config(
        user_home / ".config" / "engram" / "mcp.json",
        {
            "api": {
                "type": "http",
                "url": "https://example.invalid/mcp",
                "headers": {"Authorization": "Bearer hdr-SECRET-1"},
            },
            "local": {"command": "run", "env": {"API_KEY": "env-SECRET-2"}},
        },
    )
    cache = RegistryCache(root / ".engram" / "mcp" / "registry.json")
    registry = Registry(
        root, cache, ApprovalStore(user_home / "cfg"), home=user_home, environ=environ
    )
    snapshot = registry.load()
    updates = {
        name: CachedServer(
            e.spec.config_hash,
            e.spec.transport,
            e.spec.scope,
            time.time(),
            [ToolInfo(name, "t", "does t")],
        )
        for name, e in snapshot.servers.items()
    }
    registry.store(updates)
    text = cache.path.read_text()
    assert "SECRET" not in text and "Bearer" not in text
    snapshot = registry.load()
    assert {e.state for e in snapshot.servers.values()} == {"ready"}
    assert snapshot.resolve_tool("api__t") is not None
    assert snapshot.resolve_tool("local/t") is not None


def test_changed_config_is_detected_by_hash(
    tmp_workspace: Workspace, user_home: Path, environ: dict[str, str], write_config: WriteConfig
) -> None:
    root = tmp_workspace.root
    cfg = write_config(user_home / ".config" / "engram" / "mcp.json", {"s": {"command": "one"}})
    cache = RegistryCache(root / ".engram" / "mcp" / "registry.json")
    registry = Registry(
        root, cache, ApprovalStore(user_home / "cfg"), home=user_home, environ=environ
    )
    spec = registry.load().servers["s"].spec
    registry.store(
        {"s": CachedServer(spec.config_hash, "stdio", "user", 0.0, [ToolInfo("s", "t")])}
    )
    assert registry.load().servers["s"].state == "ready"
    write_config(cfg, {"s": {"command": "two"}})
    entry = registry.load().servers["s"]
    assert entry.state == "config_changed" and entry.tools == []


def test_registry_load_200_servers_1000_tools_is_fast(
    tmp_workspace: Workspace, user_home: Path, environ: dict[str, str], write_config: WriteConfig
) -> None:
    root = tmp_workspace.root
    servers = {f"srv{i}": {"command": "run", "args": [str(i)]} for i in range(200)}
    write_config(user_home / ".config" / "engram" / "mcp.json", servers)
    cache = RegistryCache(root / ".engram" / "mcp" / "registry.json")
    registry = Registry(
        root, cache, ApprovalStore(user_home / "cfg"), home=user_home, environ=environ
    )
    snap = registry.load()
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string", "description": "query " * 10}},
    }
    registry.store(
        {
            n: CachedServer(
                e.spec.config_hash,
                "stdio",
                "user",
                0.0,
                [ToolInfo(n, f"tool{j}", "does things " * 8, schema) for j in range(5)],
            )
            for n, e in snap.servers.items()
        }
    )
    best = min(_timed(registry.load) for _ in range(3))
    assert len(registry.load().tools) == 1000
    assert best < 0.5  # the goal is 100 ms (scripts/bench/mcp.py measures it); CI machines vary


def _timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start
