#!/usr/bin/env python3
"""Front ends with the workspace engine next to today's in-process path, in one run.

On a temporary git workspace holding MEMORIES memories (embedded with the configured
model, ``default`` unless ``--model none``), it measures fresh ``engram`` processes exactly
as a person or an agent's shell tool runs them:

* ``search`` and ``remember`` end to end with the engine warm (RUNS each, after one warm-up
  call that starts the engine), and with ``ENGRAM_ENGINE=off`` (IN_PROCESS_RUNS each), the
  two alternated so machine load hits both alike;
* ``python -c pass`` in the same run, the floor any fresh process pays;
* ``python -X importtime`` of a forwarded ``search``: what the thin CLI imports before its
  request is on the wire (total and the largest modules);
* the engine's resident and peak memory after the runs (``engram status``).

With ``--repo`` (default ``/work/repos/click`` when it exists; ``--no-lsp`` skips it), the
language server on a private copy of it (code graph indexed, LSP_MEMORIES memories, six
anchored in ``--file``), next to a bare pygls server in the same run:

* spawn -> ``initialize`` (median of INIT_RUNS, alternated with the bare server);
* ``didOpen`` -> first *memory* diagnostic: in-process (today's path, cold), with no engine
  running (the digest answers while the engine starts), and with the engine warm;
* hover p50/p95 on the anchored lines; peak RSS of each ``engram serve``;
* memory of two windows + one MCP server + CLI calls on one workspace (peak RSS of the
  windows, the MCP server and the engine) next to one in-process window;
* ``workspace/executeCommand`` p50/p95 of ``engram.search`` and ``engram.remember``
  (COMMAND_RUNS each) in a window the warm engine serves and in an in-process window.

And an agent's MCP server (``engram mcp-serve``): its first tool call, then p50/p95 of
``engram_search`` and ``engram_remember`` (COMMAND_RUNS each), with the engine warm and
with ``ENGRAM_ENGINE=off`` (its own engine in its own process), and its peak RSS.

Every engine the run started is stopped at the end (each has a pid file in the run's
private runtime directory), so none outlives the bench.

The machine is shared: compare rows of one run. Targets (issue 15): search <= 150 ms,
remember <= 200 ms end to end with the engine warm; serve <= 100 MB; two windows + MCP +
CLI <= 1.3x one window today; cold didOpen -> first memory diagnostic <= 300 ms;
initialize <= 1.15x and hover p95 <= 2x the bare pygls server's.

Usage: scripts/bench/frontends.py [--memories N] [--runs N] [--in-process-runs N]
                                  [--model NAME] [--repo PATH] [--file REL]
                                  [--lsp-memories N] [--hovers N] [--init-runs N] [--no-lsp]
                                  [--command-runs N]
Last stdout line: one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENGRAM = Path(sys.executable).with_name("engram")
TOPICS = [
    "payment API wants integer cents",
    "retry the flaky upload twice before failing",
    "the cache key includes the tenant id",
    "timestamps are stored in UTC, shown in local time",
    "the importer skips rows without an email",
    "feature flags are read once at start-up",
    "never log the raw request body: it holds tokens",
    "the nightly job holds the write lock for minutes",
]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values) * 1000, 1),
        "p95_ms": round(percentile(values, 0.95) * 1000, 1),
        "min_ms": round(min(values) * 1000, 1),
        "runs": len(values),
    }


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, timeout=600)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {proc.stderr.decode()[-400:]}")
    return elapsed


def seed(root: Path, count: int, env: dict[str, str]) -> None:
    """``count`` memories through one ``engram import`` (fast, and embedded as usual)."""
    lines = ["# Notes", ""]
    for i in range(count):
        topic = TOPICS[i % len(TOPICS)]
        lines.append(f"- never forget note {i}: {topic} (module m{i % 37})")
    notes = root / "NOTES.md"
    notes.write_text("\n".join(lines) + "\n", encoding="utf-8")
    subprocess.run(
        [str(ENGRAM), "import", str(notes)], cwd=root, env=env, check=True, capture_output=True
    )


def import_profile(root: Path, env: dict[str, str]) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", str(ENGRAM), "search", "cents"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "self" in line:
            continue
        _, self_us, cumulative, name = (
            part.strip() for part in line.replace(":", "|", 1).split("|")
        )
        rows.append((name, int(self_us), int(cumulative)))
    total_us = sum(r[1] for r in rows)
    engram = [r for r in rows if r[0].strip().startswith("engram")]
    largest = sorted(rows, key=lambda r: -r[1])[:8]
    heavy = [r[0].strip() for r in rows if r[0].strip().split(".")[0] in HEAVY]
    return {
        "modules": len(rows),
        "total_ms": round(total_us / 1000, 1),
        "engram_modules": [r[0].strip() for r in engram],
        "largest": {r[0].strip(): round(r[1] / 1000, 1) for r in largest},
        "heavy_imported": heavy,
    }


HEAVY = {
    "lancedb",
    "pyarrow",
    "numpy",
    "onnxruntime",
    "fastembed",
    "tree_sitter",
    "attrs",
    "cattrs",
}


# --------------------------------------------------------------------------- language server

BARE_PYGLS = """
from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("bare", "1")


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls, params):
    rng = types.Range(types.Position(0, 0), types.Position(0, 1))
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=params.text_document.uri, diagnostics=[types.Diagnostic(rng, "bare")]
        )
    )


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls, params):
    return types.Hover(contents=types.MarkupContent(kind="markdown", value="**bare**"))


server.start_io()
"""


def _bench_lsp_module():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import lsp as lsp_bench  # scripts/bench/lsp.py: workspace preparation, client, helpers

    return lsp_bench


async def window(
    lsp_bench,
    command: list[str],
    root: Path,
    rel: str,
    env: dict[str, str],
    hovers: list[tuple[int, int]],
) -> tuple[dict[str, object], object]:
    """One editor window: initialize, didOpen -> first non-empty diagnostics, hovers."""
    from typing import Any

    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("engram-bench", "1")
    first_memory: dict[str, float] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _diagnostics(params: types.PublishDiagnosticsParams) -> None:
        if params.diagnostics and params.uri not in first_memory:
            first_memory[params.uri] = time.perf_counter()

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def _create(params: types.WorkDoneProgressCreateParams) -> None:
        return None

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def _configuration(params: types.ConfigurationParams) -> list[Any]:
        return [None for _ in params.items]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:
        return None

    class _Rec:
        pass

    rec = _Rec()
    rec.client = client  # type: ignore[attr-defined]

    started = time.perf_counter()
    await rec.client.start_io(*command, cwd=str(root), env=env)
    pid = rec.client._server.pid
    await rec.client.initialize_async(
        types.InitializeParams(
            capabilities=lsp_bench.CAPABILITIES,
            process_id=os.getpid(),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            client_info=types.ClientInfo(name="engram-bench"),
        )
    )
    initialize_s = time.perf_counter() - started
    rec.client.initialized(types.InitializedParams())
    path = root / rel
    uri = path.as_uri()
    opened = time.perf_counter()
    rec.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=path.read_text()
            )
        )
    )
    deadline = time.perf_counter() + 120
    while uri not in first_memory and time.perf_counter() < deadline:
        await asyncio.sleep(0.002)
    diag_ms = round((first_memory[uri] - opened) * 1000, 1) if uri in first_memory else None
    await asyncio.sleep(1.0)  # the engine's own answer, impact summaries
    latencies = []
    with_content = 0
    for line, character in hovers:
        t0 = time.perf_counter()
        result = await rec.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=character),
            )
        )
        latencies.append((time.perf_counter() - t0) * 1000)
        with_content += result is not None
    row = {
        "initialize_s": round(initialize_s, 3),
        "did_open_to_first_memory_diagnostic_ms": diag_ms,
        "hover_p50_ms": round(percentile(latencies, 0.5), 2) if latencies else None,
        "hover_p95_ms": round(percentile(latencies, 0.95), 2) if latencies else None,
        "hovers_with_content": with_content,
        "pid": pid,
    }
    return row, rec.client


async def command_rows(client, runs: int, rel: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """``workspace/executeCommand`` round trips of ``engram.search`` and ``engram.remember``
    (the warm engine runs them for a linked window; an in-process window on its own)."""
    from lsprotocol import types

    async def one(command: str, argument: dict[str, object]) -> float:
        t0 = time.perf_counter()
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=command, arguments=[argument])
        )
        return time.perf_counter() - t0

    search: list[float] = []
    remember: list[float] = []
    for i in range(runs):
        query = TOPICS[i % len(TOPICS)].split(" ", 2)[-1]
        search.append(await one("engram.search", {"query": query}))
        text = f"editor note {i} {time.time_ns()}: {TOPICS[i % len(TOPICS)]}"
        remember.append(await one("engram.remember", {"text": text, "file": rel}))
    return {"search": summary(search), "remember": summary(remember)}


def mcp_call(
    proc: subprocess.Popen[bytes], request_id: int, tool: str, args: dict[str, object]
) -> float:
    """One ``tools/call`` on a running ``engram mcp-serve``; its round trip in seconds."""
    assert proc.stdin is not None and proc.stdout is not None
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": args},
    }
    t0 = time.perf_counter()
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"mcp-serve ended during {tool}")
        reply = json.loads(line)
        if reply.get("id") == request_id:
            break
    elapsed = time.perf_counter() - t0
    result = reply.get("result") or {}
    if "error" in reply or result.get("isError"):
        raise SystemExit(f"{tool} failed over MCP: {json.dumps(reply)[:400]}")
    return elapsed


def bench_mcp(root: Path, env: dict[str, str], runs: int) -> dict[str, object]:
    """An agent's MCP server: its first tool call (start-up work included), then RUNS
    ``engram_search`` and ``engram_remember`` calls; peak RSS of the server process."""
    proc = mcp_server(root, env)
    try:
        ids = iter(range(10, 10_000))
        first = mcp_call(proc, next(ids), "engram_search", {"query": "warm up"})
        search: list[float] = []
        remember: list[float] = []
        for i in range(runs):
            query = TOPICS[i % len(TOPICS)].split(" ", 2)[-1]
            search.append(mcp_call(proc, next(ids), "engram_search", {"query": query}))
            text = f"agent note {i} {time.time_ns()}: {TOPICS[i % len(TOPICS)]}"
            remember.append(mcp_call(proc, next(ids), "engram_remember", {"text": text}))
        lsp_bench = _bench_lsp_module()
        return {
            "first_call_ms": round(first * 1000, 1),
            "search": summary(search),
            "remember": summary(remember),
            "peak_rss_mb": lsp_bench.peak_rss_mb(proc.pid),
        }
    finally:
        proc.kill()
        proc.wait(timeout=30)


def stop_engines(runtime: Path, seconds: float = 20.0) -> list[int]:
    """End every engine this run started: each has a pid file in the run's private
    runtime directory, whatever settings (engine key) it was started with. ``engram stop``
    reaches only the engine of its own settings, and an engine left behind would live on
    for its idle time (ENGRAM_ENGINE_IDLE_SECONDS) after the bench."""
    import signal

    pids = []
    for pid_file in runtime.glob("*.pid"):
        try:
            pid = int(json.loads(pid_file.read_text(encoding="utf-8"))["pid"])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if b"engine" not in cmdline:  # a reused pid: not ours
            continue
        try:
            os.kill(pid, signal.SIGTERM)
            pids.append(pid)
        except OSError:
            continue
    deadline = time.monotonic() + seconds
    for pid in pids:
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    return pids


async def close_window(client) -> None:  # type: ignore[no-untyped-def]
    try:
        await asyncio.wait_for(client.shutdown_async(None), 15)
        client.exit(None)
    except Exception:
        pass
    await client.stop()


async def initialize_only(command: list[str], root: Path, env: dict[str, str], lsp_bench) -> float:  # type: ignore[no-untyped-def]
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("engram-bench", "1")
    started = time.perf_counter()
    await client.start_io(*command, cwd=str(root), env=env)
    await client.initialize_async(
        types.InitializeParams(
            capabilities=lsp_bench.CAPABILITIES, process_id=os.getpid(), root_uri=root.as_uri()
        )
    )
    elapsed = time.perf_counter() - started
    await close_window(client)
    return elapsed


def mcp_server(root: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``engram mcp-serve``, initialized and its tools listed (as an agent starts it)."""
    proc = subprocess.Popen(
        [str(ENGRAM), "mcp-serve"],
        cwd=root,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    for message in messages:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
        if "id" in message:
            proc.stdout.readline()
    return proc


def bench_lsp(
    args: argparse.Namespace, engine_env: dict[str, str], local_env: dict[str, str], runtime: Path
) -> dict[str, object]:
    lsp_bench = _bench_lsp_module()
    print(f"preparing {args.repo} for the language server", file=sys.stderr)
    root = lsp_bench.prepare(args.repo, args.file, args.lsp_memories)
    bare = root.parent / "bare_pygls.py"
    bare.write_text(BARE_PYGLS)
    serve = [sys.executable, "-m", "engram", "serve"]
    bare_cmd = [sys.executable, str(bare)]
    hovers = lsp_bench.anchored_hover_positions(root, args.file, args.hovers)
    rows: dict[str, object] = {}

    async def run() -> None:
        init: dict[str, list[float]] = {"engram": [], "bare_pygls": []}
        for _ in range(args.init_runs):
            init["engram"].append(await initialize_only(serve, root, engine_env, lsp_bench))
            init["bare_pygls"].append(await initialize_only(bare_cmd, root, engine_env, lsp_bench))
        rows["initialize_median_s"] = {k: round(statistics.median(v), 3) for k, v in init.items()}
        # today's path: one window, its own engine (cold)
        row, client = await window(lsp_bench, serve, root, args.file, local_env, hovers)
        await asyncio.sleep(1.0)
        row["commands"] = await command_rows(client, args.command_runs, args.file)
        row["peak_rss_mb"] = lsp_bench.peak_rss_mb(row["pid"])
        await close_window(client)
        rows["in_process_window"] = row
        # no engine running: the digest answers first
        subprocess.run([str(ENGRAM), "stop"], cwd=root, env=engine_env, capture_output=True)
        row, client = await window(lsp_bench, serve, root, args.file, engine_env, hovers)
        row["peak_rss_mb"] = lsp_bench.peak_rss_mb(row["pid"])
        await close_window(client)
        rows["engine_cold_window"] = row
        # the engine warm: two windows, an MCP server and CLI calls on one workspace
        a_row, a = await window(lsp_bench, serve, root, args.file, engine_env, hovers)
        b_row, b = await window(lsp_bench, serve, root, args.file, engine_env, hovers)
        mcp = mcp_server(root, engine_env)
        for query in ("stream encoding", "retry path"):
            subprocess.run(
                [str(ENGRAM), "search", query], cwd=root, env=engine_env, capture_output=True
            )
        subprocess.run(
            [str(ENGRAM), "remember", "--file", args.file, "bench write"],
            cwd=root,
            env=engine_env,
            capture_output=True,
        )
        await asyncio.sleep(1.0)
        status = json.loads(
            subprocess.run(
                [str(ENGRAM), "status", "--json"],
                cwd=root,
                env=engine_env,
                capture_output=True,
                text=True,
            ).stdout
        )
        for r in (a_row, b_row):
            r["peak_rss_mb"] = lsp_bench.peak_rss_mb(r["pid"])
        # after the memory figures: the commands' own allocations are not the window's
        a_row["commands"] = await command_rows(a, args.command_runs, args.file)
        mcp_mb = lsp_bench.peak_rss_mb(mcp.pid)
        engine_mb = round((status.get("peak_rss_bytes") or 0) / 1_048_576, 1)
        rows["engine_warm_window"] = a_row
        rows["engine_warm_second_window"] = b_row
        rows["together"] = {
            "windows_mb": [a_row["peak_rss_mb"], b_row["peak_rss_mb"]],
            "mcp_server_mb": mcp_mb,
            "engine_mb": engine_mb,
            "total_mb": round(
                sum(
                    x or 0 for x in (a_row["peak_rss_mb"], b_row["peak_rss_mb"], mcp_mb, engine_mb)
                ),
                1,
            ),
            "engine_clients": sorted(c["kind"] for c in status.get("clients", [])),
        }
        mcp.kill()
        await close_window(a)
        await close_window(b)
        row, client = await window(lsp_bench, bare_cmd, root, args.file, engine_env, hovers)
        row["peak_rss_mb"] = lsp_bench.peak_rss_mb(row["pid"])
        await close_window(client)
        rows["bare_pygls"] = row

    try:
        asyncio.run(run())
    finally:
        subprocess.run([str(ENGRAM), "stop"], cwd=root, env=engine_env, capture_output=True)
        rows["engines_ended"] = stop_engines(runtime)
        shutil.rmtree(root.parent, ignore_errors=True)
    today = rows["in_process_window"]["peak_rss_mb"] or 0  # type: ignore[index]
    warm = rows["engine_warm_window"]
    bare_row = rows["bare_pygls"]
    init = rows["initialize_median_s"]
    rows["targets"] = {
        "serve_peak_le_100mb": (warm["peak_rss_mb"] or 0) <= 100,  # type: ignore[index]
        "together_le_1_3x_one_window_today": rows["together"]["total_mb"] <= 1.3 * today,  # type: ignore[index]
        "together_over_one_window_today": round(rows["together"]["total_mb"] / today, 2)
        if today
        else None,  # type: ignore[index]
        "cold_did_open_le_300ms": (
            rows["engine_cold_window"]["did_open_to_first_memory_diagnostic_ms"] or 1e9
        )
        <= 300,  # type: ignore[index]
        "initialize_ratio": round(init["engram"] / init["bare_pygls"], 2),  # type: ignore[index]
        "hover_p95_ratio": round(
            (warm["hover_p95_ms"] or 0) / max(bare_row["hover_p95_ms"] or 1e-9, 1e-9), 2
        ),  # type: ignore[index]
    }
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--in-process-runs", type=int, default=3)
    parser.add_argument("--model", default="default", help="embed.model (default: the bundled one)")
    default_repo = Path("/work/repos/click")
    parser.add_argument(
        "--repo", type=Path, default=default_repo if default_repo.is_dir() else None
    )
    parser.add_argument("--file", default="src/click/utils.py")
    parser.add_argument("--lsp-memories", type=int, default=1000)
    parser.add_argument("--hovers", type=int, default=50)
    parser.add_argument("--init-runs", type=int, default=5)
    parser.add_argument("--no-lsp", action="store_true")
    parser.add_argument(
        "--command-runs",
        type=int,
        default=10,
        help="MCP tool calls and LSP executeCommands of each kind, per front end",
    )
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="engram-fe-bench-"))
    runtime = Path(tempfile.mkdtemp(prefix="efb-", dir="/tmp"))
    root = work / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    base["ENGRAM_EMBED__MODEL"] = args.model
    base["ENGRAM_RUNTIME_DIR"] = str(runtime)
    engine_env = {**base, "ENGRAM_ENGINE": "auto", "ENGRAM_ENGINE_IDLE_SECONDS": "600"}
    local_env = {**base, "ENGRAM_ENGINE": "off"}
    try:
        print(f"seeding {args.memories} memories in {root}", file=sys.stderr)
        seed(root, args.memories, local_env)
        started = time.perf_counter()
        timed([str(ENGRAM), "search", "warm up"], root, engine_env)  # starts the engine
        cold_start = time.perf_counter() - started
        timed([str(ENGRAM), "remember", "warm up the write path"], root, engine_env)

        floor = [timed([sys.executable, "-c", "pass"], root, base) for _ in range(args.runs)]
        engine_search: list[float] = []
        engine_remember: list[float] = []
        local_search: list[float] = []
        local_remember: list[float] = []
        for i in range(args.runs):
            query = TOPICS[i % len(TOPICS)].split(" ", 2)[-1]
            engine_search.append(timed([str(ENGRAM), "search", query], root, engine_env))
            engine_remember.append(
                timed(
                    [str(ENGRAM), "remember", f"engine note {i}: {TOPICS[i % 8]} #{i}"],
                    root,
                    engine_env,
                )
            )
            if i < args.in_process_runs:
                local_search.append(timed([str(ENGRAM), "search", query], root, local_env))
                local_remember.append(
                    timed(
                        [str(ENGRAM), "remember", f"local note {i}: {TOPICS[i % 8]} #{i}"],
                        root,
                        local_env,
                    )
                )
        profile = import_profile(root, engine_env)
        status = json.loads(
            subprocess.run(
                [str(ENGRAM), "status", "--json"],
                cwd=root,
                env=engine_env,
                capture_output=True,
                text=True,
            ).stdout
        )
        result = {
            "bench": "frontends",
            "memories": args.memories,
            "model": args.model,
            "cli": {
                "search_engine": summary(engine_search),
                "search_in_process": summary(local_search),
                "remember_engine": summary(engine_remember),
                "remember_in_process": summary(local_remember),
                "python_floor": summary(floor),
                "engine_cold_start_ms": round(cold_start * 1000, 1),
            },
            "thin_cli_imports": profile,
            "engine": {
                "rss_mb": round((status.get("rss_bytes") or 0) / 1_048_576, 1),
                "peak_rss_mb": round((status.get("peak_rss_bytes") or 0) / 1_048_576, 1),
                "requests": status.get("requests"),
            },
            "targets": {
                "search_engine_p50_le_150ms": summary(engine_search)["p50_ms"] <= 150,
                "remember_engine_p50_le_200ms": summary(engine_remember)["p50_ms"] <= 200,
            },
        }
        # an agent's MCP server: tools through the warm engine, and in its own process
        result["mcp"] = {
            "engine": bench_mcp(root, engine_env, args.command_runs),
            "in_process": bench_mcp(root, local_env, args.command_runs),
        }
        subprocess.run([str(ENGRAM), "stop"], cwd=root, env=engine_env, capture_output=True)
        if args.repo is not None and not args.no_lsp:
            result["lsp"] = bench_lsp(args, engine_env, local_env, runtime)
    finally:
        subprocess.run([str(ENGRAM), "stop"], cwd=root, env=engine_env, capture_output=True)
        ended = stop_engines(runtime)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
    # the pids of engines still running at the end, now ended (a smoke test checks them)
    result["engines_ended"] = ended + list(result.get("lsp", {}).get("engines_ended", []))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
