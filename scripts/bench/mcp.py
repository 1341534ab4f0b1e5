#!/usr/bin/env python3
"""MCP hub: eager start against Engram's lazy start, registry load, tool search, tokens.

All in one run, on this machine:

* **eager vs lazy** with ``--servers N`` configured servers: ``mcp-server-time``,
  ``mcp-server-git`` and N-2 in-test servers (``tests/mcp/servers/fake_server.py`` with
  ``--tools-per-server`` generated tools each, plus its 9 fixed ones).
  *Eager* is what a client without a hub does at start: connect every server (concurrently),
  initialise, list its tools. *Lazy* is Engram: a fresh :class:`McpHub` loads the registry
  from the cache, searches, and calls one tool (connecting one server). The one-time
  introspection that fills the cache is timed separately (``introspection_once_ms``).
* **registry load** with ``--synthetic-servers`` (200) servers and ``--synthetic-tools``
  (1,000) tools: a synthetic user config plus registry cache, loaded by
  ``Registry.load`` (p50/p95 over ``--repeat`` runs; goal ≤ 100 ms);
* **tool search** p50/p95 over ``--queries`` queries against the same 1,000 tools (goal ≤ 50 ms);
* **tokens** of the tool definitions an agent receives: every tool against Engram's focused
  list (``mcp.search_limit``, 15), counted with ``engram.retrieval.estimate_tokens`` (a
  conservative BPE upper bound) over the JSON of each definition, for the real N servers
  and for the 1,000 synthetic tools.

Usage: scripts/bench/mcp.py [--servers 6] [--tools-per-server 10] [--queries 200]
Last stdout line: one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# This file is named mcp.py: drop its folder from the import path, or ``import mcp`` (the SDK)
# would find this script instead.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

ROOT = Path(__file__).resolve().parents[2]
FAKE_SERVER = ROOT / "tests" / "mcp" / "servers" / "fake_server.py"
BIN = Path(sys.executable).parent

log = logging.getLogger("bench.mcp")

VERBS = [
    "create",
    "get",
    "list",
    "update",
    "delete",
    "search",
    "run",
    "query",
    "fetch",
    "open",
    "close",
    "send",
    "read",
    "write",
]
NOUNS = [
    "issue",
    "page",
    "file",
    "table",
    "record",
    "branch",
    "commit",
    "comment",
    "message",
    "ticket",
    "document",
    "user",
    "project",
    "screenshot",
    "element",
    "query",
    "deployment",
    "build",
    "log",
    "metric",
    "alert",
    "secret",
    "bucket",
    "image",
    "invoice",
]
DOMAINS = [
    "github",
    "jira",
    "slack",
    "postgres",
    "browser",
    "docs",
    "kubernetes",
    "sentry",
    "stripe",
    "s3",
    "grafana",
    "notion",
    "linear",
    "figma",
    "vercel",
    "datadog",
    "redis",
    "mongo",
    "airtable",
    "gmail",
]


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def child_processes() -> int:
    """Live direct children of this process (to show how many servers run)."""
    me = str(os.getpid())
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me and fields[0] != "Z":
                count += 1
    return count


def real_servers(n: int, tools_per_server: int) -> dict[str, Any]:
    servers: dict[str, Any] = {
        "time": {"command": str(BIN / "mcp-server-time")},
        "git": {"command": str(BIN / "python"), "args": ["-m", "mcp_server_git"]},
    }
    for i in range(max(0, n - 2)):
        name = f"fake{i}"
        servers[name] = {
            "command": sys.executable,
            "args": [str(FAKE_SERVER), "--tools", str(tools_per_server), "--name", name],
        }
    return dict(list(servers.items())[:n])


def synthetic_tool(rng: random.Random, server: str, index: int) -> dict[str, Any]:
    verb, noun = rng.choice(VERBS), rng.choice(NOUNS)
    params = {
        p: {"type": "string", "description": f"The {p} of the {noun} to {verb}."}
        for p in rng.sample(["id", "name", "query", "path", "limit", "owner", "title", "body"], 3)
    }
    return {
        "name": f"{verb}_{noun}_{index}",
        "description": (
            f"{verb.capitalize()} a {noun} in {server.split('_')[0]}. Use it when you need to "
            f"{verb} {noun}s; returns the {noun} as JSON with its id, status and timestamps."
        ),
        "input_schema": {"type": "object", "properties": params, "required": [next(iter(params))]},
    }


def write_synthetic(
    workspace_root: Path, home: Path, servers: int, tools: int, seed: int = 7
) -> None:
    """A user config with ``servers`` servers and a registry cache with ``tools`` tools."""
    from engram.mcphub.sources import parse_server

    rng = random.Random(seed)
    config: dict[str, Any] = {}
    for i in range(servers):
        domain = DOMAINS[i % len(DOMAINS)]
        config[f"{domain}_{i}"] = {
            "command": "npx",
            "args": ["-y", f"@example/{domain}-mcp", f"--instance={i}"],
            "env": {f"{domain.upper()}_TOKEN": "secret"},
        }
    cfg_path = home / ".config" / "engram" / "mcp.json"
    cfg_path.parent.mkdir(parents=True, exist_ok=True)
    cfg_path.write_text(json.dumps({"mcpServers": config}), encoding="utf-8")
    cache_servers: dict[str, Any] = {}
    names = list(config)
    per = [tools // servers + (1 if i < tools % servers else 0) for i in range(servers)]
    for name, count in zip(names, per, strict=True):
        spec = parse_server(name, config[name], origin=str(cfg_path), scope="user")
        cache_servers[name] = {
            "config_hash": spec.config_hash,
            "transport": "stdio",
            "scope": "user",
            "introspected_at": time.time(),
            "server_info": {"name": name, "version": "1.0"},
            "error": None,
            "tools": [synthetic_tool(rng, name, j) for j in range(count)],
        }
    cache = workspace_root / ".engram" / "mcp" / "registry.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"version": 1, "servers": cache_servers}), encoding="utf-8")


def definition_tokens(definitions: Sequence[dict[str, Any]]) -> int:
    from engram.retrieval import estimate_tokens

    return sum(estimate_tokens(json.dumps(d, separators=(",", ":"))) for d in definitions)


def new_workspace(base: Path, name: str) -> tuple[Path, Path]:
    root = base / name
    home = base / f"{name}-home"
    root.mkdir()
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root, home


# --------------------------------------------------------------------------- eager vs lazy


async def eager_start(specs: Sequence[Any]) -> dict[str, Any]:
    """Connect every server at once and list its tools (what a hub-less client does)."""
    from engram.mcphub.pool import Connection
    from engram.mcphub.transport import sdk_opener

    opener = sdk_opener(workspace_root=Path.cwd(), home=Path.home(), environ=os.environ)
    start = time.perf_counter()
    conns = [Connection(s, opener, clock=time.monotonic, connect_timeout=60.0) for s in specs]
    await asyncio.gather(*(c.start() for c in conns))
    listings = await asyncio.gather(*(c.request("list_tools", timeout=60.0) for c in conns))
    elapsed = time.perf_counter() - start
    processes = child_processes()
    await asyncio.gather(*(c.close() for c in conns))
    return {
        "start_ms": ms(elapsed),
        "live_processes": processes,
        "tools": sum(len(tools) for tools in listings),
    }


async def lazy_start(
    root: Path,
    home: Path,
    environ: dict[str, str],
    query: str,
    tool: str,
    arguments: dict[str, Any],
) -> dict[str, Any]:
    from engram.config import McpConfig
    from engram.mcphub import McpHub
    from engram.workspace import Workspace

    start = time.perf_counter()
    hub = McpHub(Workspace.open(root), McpConfig(), home=home, environ=environ)
    snapshot = hub.snapshot()
    loaded = time.perf_counter()
    found = await hub.search(query)
    searched = time.perf_counter()
    result = await hub.call(tool, arguments)
    called = time.perf_counter()
    processes = child_processes()
    await hub.close()
    assert not result.get("isError"), result
    return {
        "registry_load_ms": ms(loaded - start),
        "search_ms": ms(searched - loaded),
        "first_call_ms": ms(called - searched),
        "start_to_first_result_ms": ms(called - start),
        "live_processes": processes,
        "tools_known": len(snapshot.tools),
        "top_hit": found["tools"][0]["name"] if found["tools"] else None,
    }


# --------------------------------------------------------------------------- main


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from engram.config import McpConfig
    from engram.mcphub import McpHub, Registry
    from engram.mcphub.registry import RegistryCache
    from engram.mcphub.search import ToolSearch
    from engram.mcphub.sources import parse_server
    from engram.mcphub.trust import ApprovalStore
    from engram.workspace import Workspace

    k = McpConfig().search_limit
    with tempfile.TemporaryDirectory(prefix="engram-bench-mcp-") as tmp:
        base = Path(tmp)

        # ---- real servers: eager vs lazy
        root, home = new_workspace(base, "real")
        environ = {"HOME": str(home), "PATH": os.environ.get("PATH", "")}
        servers = real_servers(args.servers, args.tools_per_server)
        cfg = home / ".config" / "engram" / "mcp.json"
        cfg.parent.mkdir(parents=True)
        cfg.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
        specs = [parse_server(n, s, origin=str(cfg), scope="user") for n, s in servers.items()]
        log.info("eager start of %d servers", len(specs))
        eager = await eager_start(specs)

        hub = McpHub(Workspace.open(root), McpConfig(), home=home, environ=environ)
        start = time.perf_counter()
        refreshed = await hub.refresh()
        introspection = time.perf_counter() - start
        await hub.close()
        if refreshed["failed"]:
            raise SystemExit(f"introspection failed: {refreshed['failed']}")
        lazy = await lazy_start(
            root,
            home,
            environ,
            "current time in a timezone",
            "time__get_current_time",
            {"timezone": "UTC"},
        )
        lazy["introspection_once_ms"] = ms(introspection)
        real_tools = (
            Registry(
                root,
                RegistryCache(root / ".engram" / "mcp" / "registry.json"),
                ApprovalStore(home / ".config" / "engram"),
                home=home,
                environ=environ,
            )
            .load()
            .tools
        )
        real_queries = [
            "current time in tokyo",
            "convert time zones",
            "git commit history",
            "show diff",
            "echo text",
            "add two numbers",
            "create a branch",
            "stage files",
        ]
        real_search = ToolSearch(real_tools)
        real_focused = [
            definition_tokens([h.tool.to_agent_definition() for h in real_search.search(q, k=k)])
            for q in real_queries
        ]
        real_all = definition_tokens([t.to_agent_definition() for t in real_tools])

        # ---- synthetic: registry load and search at scale
        sroot, shome = new_workspace(base, "synthetic")
        write_synthetic(sroot, shome, args.synthetic_servers, args.synthetic_tools)
        senv = {"HOME": str(shome), "PATH": os.environ.get("PATH", "")}
        registry = Registry(
            sroot,
            RegistryCache(sroot / ".engram" / "mcp" / "registry.json"),
            ApprovalStore(shome / ".config" / "engram"),
            home=shome,
            environ=senv,
        )
        load_times = timed(registry.load, args.repeat)
        snapshot = registry.load()
        start = time.perf_counter()
        search = ToolSearch(snapshot.tools)
        index_build = time.perf_counter() - start
        rng = random.Random(11)
        queries = []
        for _ in range(args.queries):
            tool = rng.choice(snapshot.tools)
            words = tool.description.split()[:12]
            queries.append(" ".join(rng.sample(words, min(3, len(words)))))
        search_times = []
        focused_tokens = []
        for q in queries:
            t0 = time.perf_counter()
            hits = search.search(q, k=k)
            search_times.append(time.perf_counter() - t0)
            focused_tokens.append(definition_tokens([h.tool.to_agent_definition() for h in hits]))
        synthetic_all = definition_tokens([t.to_agent_definition() for t in snapshot.tools])

    def reduction(all_tokens: int, focused: float) -> float:
        return round(1.0 - focused / all_tokens, 4) if all_tokens else 0.0

    real_focused_mean = statistics.fmean(real_focused)
    synthetic_focused_mean = statistics.fmean(focused_tokens)
    return {
        "benchmark": "mcp",
        "servers": len(specs),
        "eager": eager,
        "lazy": lazy,
        "speedup_start_to_first_result": round(
            eager["start_ms"] / max(lazy["start_to_first_result_ms"], 1e-9), 2
        ),
        "registry_load": {
            "servers": args.synthetic_servers,
            "tools": len(snapshot.tools),
            "p50_ms": ms(statistics.median(load_times)),
            "p95_ms": ms(percentile(load_times, 0.95)),
            "goal_ms": 100,
        },
        "search": {
            "tools": len(snapshot.tools),
            "queries": len(queries),
            "k": k,
            "index_build_ms": ms(index_build),
            "p50_ms": ms(statistics.median(search_times)),
            "p95_ms": ms(percentile(search_times, 0.95)),
            "goal_ms": 50,
        },
        "tokens": {
            "real": {
                "tools": len(real_tools),
                "all_tools": real_all,
                "focused_mean": round(real_focused_mean, 1),
                "reduction": reduction(real_all, real_focused_mean),
            },
            "synthetic": {
                "tools": len(snapshot.tools),
                "all_tools": synthetic_all,
                "focused_mean": round(synthetic_focused_mean, 1),
                "reduction": reduction(synthetic_all, synthetic_focused_mean),
            },
            "counter": "engram.retrieval.estimate_tokens over compact JSON definitions",
            "reference": "Anthropic reports 85% fewer tokens with tool search",
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=6, help="real servers to configure (>= 1)")
    parser.add_argument("--tools-per-server", type=int, default=10)
    parser.add_argument("--synthetic-servers", type=int, default=200)
    parser.add_argument("--synthetic-tools", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=50, help="registry loads to time")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.servers < 1:
        parser.error("--servers must be at least 1")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    logging.getLogger("mcp").setLevel(logging.CRITICAL)
    result = asyncio.run(run(args))
    e, lz = result["eager"], result["lazy"]
    print(
        f"eager start of {result['servers']} servers: {e['start_ms']:.0f} ms, "
        f"{e['live_processes']} processes; lazy start to first result: "
        f"{lz['start_to_first_result_ms']:.0f} ms, {lz['live_processes']} process"
    )
    r, s = result["registry_load"], result["search"]
    print(f"registry load {r['servers']} servers / {r['tools']} tools: p95 {r['p95_ms']:.1f} ms")
    print(f"tool search at {s['tools']} tools: p95 {s['p95_ms']:.1f} ms")
    t = result["tokens"]
    print(
        f"tokens, real: all {t['real']['all_tools']} vs focused {t['real']['focused_mean']:.0f}; "
        f"synthetic: all {t['synthetic']['all_tools']} vs focused "
        f"{t['synthetic']['focused_mean']:.0f} ({t['synthetic']['reduction']:.1%} fewer)"
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
