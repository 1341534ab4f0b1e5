#!/usr/bin/env python3
"""What agents and editors call most, on one 1,000-memory store: latency and size.

On a synthetic git repository (``--files`` Python files, indexed with ``engram index
--no-embed``) holding ``--memories`` memories (embedded with the configured model, as
``engram remember`` would; a contradicting pair among them), it measures, in one run:

* **MCP**: ``engram mcp-serve`` started as an agent starts it, driven by the official MCP
  SDK client: ``engram_context`` (a file) and ``engram_search`` (a query) ``--runs`` times
  each: p50/p95 of the round trip, the characters each result carries (what the agent
  pays for: the text blocks and the structured content) and the memories table's versions
  written while they ran, per 100 calls (a use counted is a store write);
* **hooks**: ``engram hook claude-code`` run as Claude Code runs it (``/bin/sh -c``,
  ``PATH=/usr/bin:/bin``, the JSON payload on stdin, engram found by the plugin's
  ``find-engram`` through ``ENGRAM_PYTHON``) for SessionStart, UserPromptSubmit and
  PreToolUse(Edit), each in a new session: p50/p95 and the characters of
  ``additionalContext``;
* **LSP hover**: ``engram serve`` with a pygls client, hovers on anchored lines: p50/p95.

The workspace engine runs as in use (``ENGRAM_RUNTIME_DIR`` a private folder; stopped at the
end); ``--engine off`` measures the in-process fallback instead. Figures are wall
milliseconds on a shared machine: the load average is printed with them; compare only
within one run. ``records``: the characters of results that carry memory records.

Usage: scripts/bench/agent_calls.py [--memories 1000] [--files 60] [--runs 30]
                                    [--embed-model default|none] [--keep DIR]
                                    [--server DIR] [--engine auto|off]
                                    [--only mcp|hooks|hover]
Last stdout line: one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# scripts/bench/mcp.py would shadow the MCP SDK: drop this folder from the import path
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

ROOT = Path(__file__).resolve().parents[2]
#: the Engram code measured (``--server``: another checkout's, for a before/after in one run)
SERVER = ROOT / "server"
HOOK = ROOT / "clients" / "claude-code" / "hooks" / "engram-hook"

WORDS = [
    "cache",
    "config",
    "parser",
    "retry",
    "timeout",
    "session",
    "token",
    "billing",
    "invoice",
    "currency",
    "rounding",
    "encoding",
    "stream",
    "buffer",
    "lock",
    "thread",
    "queue",
    "worker",
    "schedule",
    "migration",
    "schema",
    "index",
    "payload",
    "header",
    "cookie",
    "tenant",
    "region",
    "replica",
    "shard",
    "batch",
    "flush",
    "commit",
    "rollback",
]
TEMPLATES = (
    "{fn} in {file} must not be called before init(): it returns stale {w0} data",
    "{fn} rounds {w0} amounts half-even; the {w1} service expects half-up, so totals drift",
    "we chose {w0} over {w1} in {fn} because the {w2} path deadlocked under load",
    "retrying {fn} on {w0} errors made it worse: the {w1} lock is held across the retry",
    "{w0}Error from {fn} means the {w1} {w2} is missing; run the migration first",
    "tests for {fn} need the {w0} fixture; without it the {w1} queue is shared across tests",
)
TYPES = ("gotcha", "decision", "dead_end", "error_pattern", "requirement", "pattern")


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered), 1), "p95_ms": round(p95, 1)}


def sizes(texts: list[str]) -> dict[str, int]:
    """Characters, and tokens as every budget counts them (``engram.tokens``)."""
    sys.path.insert(0, str(SERVER))
    from engram.tokens import estimate_tokens

    chars = [len(t) for t in texts]
    return {
        "chars_p50": int(statistics.median(chars)),
        "chars_max": max(chars),
        "tokens_max": max(estimate_tokens(t) for t in texts),
    }


def table_version(root: Path) -> int:
    """The memories table's LanceDB version (each store write makes one)."""
    hint = root / ".engram" / "memories.lance" / "_versions" / "latest_version_hint.json"
    return int(json.loads(hint.read_text())["version"])


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def budgets() -> dict[str, int]:
    """The token budgets the tools and hooks say they keep (their defaults)."""
    sys.path.insert(0, str(SERVER))
    from engram.agents import HookBudget
    from engram.config import RetrievalConfig

    hooks = HookBudget()
    return {
        "context": RetrievalConfig().default_budget_tokens,
        "SessionStart": hooks.session_tokens,
        "UserPromptSubmit": hooks.prompt_tokens,
        "PreToolUse": hooks.file_tokens,
    }


def make_repository(root: Path, n_files: int) -> list[str]:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    files = [f"src/pkg{i % 6}/module_{i}.py" for i in range(n_files)]
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(f"def f{j}(value):\n    return value + {j}\n" for j in range(30)))
    git = ["git", "-C", str(root), "-c", "user.name=Bench", "-c", "user.email=b@example.com"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return files


def seed(root: Path, files: list[str], count: int, rng: random.Random, model: str) -> None:
    """``count`` memories through the remember pipeline's embedding, stored in bulk."""
    sys.path.insert(0, str(SERVER))
    from engram.app import Engine
    from engram.app.indexing import rebuild_digest
    from engram.app.records import embed_memories
    from engram.app.remember import remember
    from engram.model import CodeAnchor, Memory, MemoryScope, MemoryType

    with Engine.open(root, {"embed": {"model": model}}) as engine:
        memories = []
        for i in range(count - 2):
            file = files[i % len(files)] if i % 10 else files[i % min(8, len(files))]
            fn = f"f{i % 30}"
            words = rng.sample(WORDS, 3)
            text = rng.choice(TEMPLATES).format(
                fn=fn, file=file, w0=words[0], w1=words[1], w2=words[2]
            )
            global_ = i % 25 == 0
            memories.append(
                Memory(
                    content=f"{text} (note {i})",
                    type=MemoryType.DECISION if global_ else MemoryType(TYPES[i % len(TYPES)]),
                    scope=MemoryScope.GLOBAL if global_ else MemoryScope.MODULE,
                    anchors=[] if global_ else [CodeAnchor(file, fn, (i % 30) * 3, None)],
                    confidence=round(rng.uniform(0.5, 0.95), 2),
                )
            )
        vectors = embed_memories(engine, memories, None)
        model_id = engine.embedder.model_id if engine.embedder is not None else None
        for start in range(0, len(memories), 500):
            part = None if vectors is None else vectors[start : start + 500]
            engine.store.add(memories[start : start + 500], part, model_id)
        engine.store.compact()
        for seconds in (30, 60):  # a contradicting pair, linked by the pipeline
            remember(engine, f"The job timeout in f1 is {seconds}s.", file=files[0], symbol="f1")
        rebuild_digest(engine)


def engram_env(runtime: Path, home: Path, model: str, engine: str = "auto") -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        # bytecode is written as an install's is: without it every start compiles Engram
        if not k.startswith("ENGRAM_")
        and k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
    }
    return env | {
        "PYTHONPATH": str(SERVER),
        "ENGRAM_RUNTIME_DIR": str(runtime),
        "HOME": str(home),
        "ENGRAM_EMBED__MODEL": model,
        "ENGRAM_ENGINE": engine,
    }


def cli(env: dict[str, str], *args: str, cwd: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "engram", *args], env=env, cwd=cwd, check=True, capture_output=True
    )


# --------------------------------------------------------------------------- MCP


async def bench_mcp(root: Path, env: dict[str, str], files: list[str], runs: int) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "engram", "mcp-serve", "--workspace", str(root)],
        env=env,
        cwd=str(root),
    )
    rng = random.Random(11)
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("engram_search", {"query": "warm up"})  # engine reached
        calls = {
            "engram_context": lambda: {"file": rng.choice(files[:8])},
            "engram_search": lambda: {"query": " ".join(rng.sample(WORDS, 2)) + " stale data"},
        }
        for name, make in calls.items():
            times: list[float] = []
            chars: list[str] = []
            structured: list[int] = []
            version = table_version(root)
            for _ in range(runs):
                args = make()
                started = time.perf_counter()
                result = await session.call_tool(name, args)
                times.append((time.perf_counter() - started) * 1000)
                if result.is_error:
                    raise SystemExit(f"{name} failed: {result.content}")
                chars.append("".join(getattr(c, "text", "") for c in result.content))
                data = result.structured_content
                structured.append(0 if data is None else len(json.dumps(data)))
            out[name] = {
                **percentiles(times),
                **sizes(chars),
                **({"budget_tokens": budgets()["context"]} if name == "engram_context" else {}),
                "structured_chars_max": max(structured),
                "table_versions_per_100": round((table_version(root) - version) * 100 / runs),
                "load": load(),
            }
        out["records"] = await record_sizes(session)
    return out


async def record_sizes(session: Any) -> dict[str, int]:
    """Characters of the results that carry memory records (the text block; the structured
    copy is the same object): one memory's ``engram_show`` and ``engram_log``, the review
    queue. They change nothing, so A and B of a before/after read the same store."""
    found = await session.call_tool("engram_search", {"query": "job timeout in f1", "k": 1})
    mid = json.loads(found.content[0].text)["hits"][0]["id"]
    out: dict[str, int] = {}
    for name, args in (
        ("engram_show", {"id": mid}),
        ("engram_log", {"id": mid}),
        ("engram_review", {}),
    ):
        result = await session.call_tool(name, args)
        if result.is_error:
            raise SystemExit(f"{name} failed: {result.content}")
        out[f"{name}_chars"] = len("".join(getattr(c, "text", "") for c in result.content))
    return out


# --------------------------------------------------------------------------- hooks


def bench_hooks(root: Path, env: dict[str, str], files: list[str], runs: int) -> dict[str, Any]:
    hook_env = {
        "PATH": "/usr/bin:/bin",
        "HOME": env["HOME"],
        "PYTHONPATH": env["PYTHONPATH"],
        "ENGRAM_PYTHON": sys.executable,
        "ENGRAM_RUNTIME_DIR": env["ENGRAM_RUNTIME_DIR"],
        "ENGRAM_EMBED__MODEL": env["ENGRAM_EMBED__MODEL"],
        "CLAUDE_PLUGIN_ROOT": str(HOOK.parents[1]),
    }
    command = ["/bin/sh", "-c", shlex.quote(str(HOOK))]
    rng = random.Random(5)

    def payload(event: str, session: str) -> dict[str, Any]:
        body: dict[str, Any] = {"session_id": session, "hook_event_name": event, "cwd": str(root)}
        if event == "SessionStart":
            body["source"] = "startup"
        elif event == "UserPromptSubmit":
            fn = f"f{rng.randrange(30)}"
            body["prompt"] = f"why does {fn} return stale {rng.choice(WORDS)} data after init?"
        else:
            body |= {
                "tool_name": "Edit",
                "tool_input": {"file_path": str(root / rng.choice(files[:8]))},
            }
        return body

    out: dict[str, Any] = {}
    for event in ("SessionStart", "UserPromptSubmit", "PreToolUse"):
        times: list[float] = []
        chars: list[str] = []
        for run in range(runs):
            body = payload(event, f"bench-{event}-{run}-{os.getpid()}")
            started = time.perf_counter()
            done = subprocess.run(
                command,
                input=json.dumps(body),
                capture_output=True,
                text=True,
                env=hook_env,
                cwd=root,
                check=False,
            )
            times.append((time.perf_counter() - started) * 1000)
            context = ""
            if done.stdout.strip():
                answer = json.loads(done.stdout)
                context = answer.get("hookSpecificOutput", {}).get("additionalContext", "")
            chars.append(context)
        out[event] = {
            **percentiles(times),
            **sizes(chars),
            "budget_tokens": budgets()[event],
            "load": load(),
        }
    return out


# --------------------------------------------------------------------------- LSP hover


def _lsp_bench() -> Any:
    """scripts/bench/lsp.py as a module (this folder is off the import path: mcp.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_lsp", _HERE / "lsp.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def anchored_lines(root: Path, rel: str) -> list[int]:
    """The lines of ``rel`` that memories are anchored to (what a hover shows)."""
    sys.path.insert(0, str(SERVER))
    from engram.agents import Digest
    from engram.workspace import Workspace

    digest = Digest(Workspace.open(root))
    try:
        found = {b.line for b in digest.for_file(rel, list(TYPES), 50)}
    finally:
        digest.close()
    return sorted(line for line in found if line is not None) or [0]


async def bench_hover(root: Path, env: dict[str, str], rel: str, runs: int) -> dict[str, Any]:
    from lsprotocol import types

    rec = _lsp_bench().Recorder()  # scripts/bench/lsp.py's client: progress, diagnostics
    client = rec.client
    await client.start_io(sys.executable, "-m", "engram", "serve", cwd=str(root), env=env)
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                text_document=types.TextDocumentClientCapabilities(
                    hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown])
                ),
                window=types.WindowClientCapabilities(work_done_progress=True),
                workspace=types.WorkspaceClientCapabilities(configuration=True),
            ),
            process_id=os.getpid(),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        )
    )
    client.initialized(types.InitializedParams())
    deadline = time.perf_counter() + 120  # past it, hovers answer as before "ready"
    while rec.ready_at is None and time.perf_counter() < deadline:
        await asyncio.sleep(0.05)
    path = root / rel
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=path.read_text()
            )
        )
    )
    await asyncio.sleep(1.0)
    times: list[float] = []
    chars: list[str] = []
    lines = anchored_lines(root, rel)
    for run in range(runs):
        line = lines[run % len(lines)]
        started = time.perf_counter()
        hover = await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=5),
            )
        )
        times.append((time.perf_counter() - started) * 1000)
        contents = getattr(hover, "contents", None)
        chars.append(getattr(contents, "value", "") or "")
    await asyncio.wait_for(client.shutdown_async(None), 10)
    client.exit(None)
    await client.stop()
    return {**percentiles(times), **sizes(chars), "load": load()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embed-model", default="default", help='"none": keyword search only')
    parser.add_argument(
        "--keep", help="build the store in this folder and keep it (reused when it is there)"
    )
    parser.add_argument("--server", help="the server/ folder of the Engram code to measure")
    parser.add_argument(
        "--engine", choices=("auto", "off"), default="auto", help="off: every front end in-process"
    )
    parser.add_argument("--only", choices=("mcp", "hooks", "hover"), help="measure this alone")
    args = parser.parse_args()
    global SERVER
    SERVER = Path(args.server).resolve() if args.server else SERVER
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="engram-agentcalls-") as tmp:
        base = Path(args.keep) if args.keep else Path(tmp)
        root, runtime, home = base / "repo", base / "run", base / "home"
        runtime.mkdir(parents=True, exist_ok=True)
        home.mkdir(exist_ok=True)
        env = engram_env(runtime, home, args.embed_model, args.engine)
        started = time.perf_counter()
        if (root / ".engram").is_dir():  # --keep: the store an earlier run built
            files = [f"src/pkg{i % 6}/module_{i}.py" for i in range(args.files)]
        else:
            files = make_repository(root, args.files)
            cli(env | {"ENGRAM_ENGINE": "off"}, "index", "--no-embed", cwd=root)
            seed(root, files, args.memories, rng, args.embed_model)
        built_s = round(time.perf_counter() - started, 1)
        try:
            result: dict[str, Any] = {
                "benchmark": "agent_calls",
                "server": str(SERVER),
                "memories": args.memories,
                "runs": args.runs,
                "engine": args.engine,
                "build_seconds": built_s,
            }
            if args.only in (None, "mcp"):
                result["mcp"] = asyncio.run(bench_mcp(root, env, files, args.runs))
            if args.only in (None, "hooks"):
                result["hooks"] = bench_hooks(root, env, files, args.runs)
            if args.only in (None, "hover"):
                result["lsp_hover"] = asyncio.run(bench_hover(root, env, files[0], args.runs))
        finally:
            subprocess.run(
                [sys.executable, "-m", "engram", "stop", "--workspace", str(root)],
                env=env,
                capture_output=True,
                check=False,
            )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
