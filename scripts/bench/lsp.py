#!/usr/bin/env python3
"""Language-server benchmark: Engram next to jedi-language-server on the same file, same run.

On a private copy of REPO (default ``/work/repos/click``; REPO is never modified) with
MEMORIES background memories plus a few anchored in FILE (default
``src/click/utils.py``), and the code graph indexed (``engram index``), it measures for
each server, as an editor would see it:

* spawn -> ``initialize`` result (process start, imports, capability negotiation): the
  median of INIT_RUNS spawns, alternating the two servers so machine load hits both alike;
* ``didOpen`` -> first ``publishDiagnostics`` for the file (Engram: once its start-up
  "ready" progress has ended, i.e. indexed; jedi: its own first publish, if any);
* hover p50/p95/max over HOVERS hovers (Engram: on anchored lines; jedi: on identifiers);
* peak RSS of the server process (``VmHWM``).

Both servers run with the same client (pygls) and the same capabilities. Engram runs with
``embed.model = none`` so the start-up index does not embed code chunks (the hover and
diagnostics paths never touch the model).

Usage: scripts/bench/lsp.py [--repo PATH] [--file REL] [--memories N] [--hovers N]
                            [--init-runs N] [--skip-jedi]
Last stdout line: one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

ANCHORED = [
    (
        "gotcha",
        "make_str",
        "decode with the filesystem encoding first; latin-1 fallback hides bugs",
    ),
    ("dead_end", "LazyFile", "opening the file eagerly broke '-' (stdin) handling; keep it lazy"),
    ("decision", "echo", "echo writes bytes directly on Windows consoles; do not route via print"),
    ("gotcha", "safecall", "safecall swallows every exception: never wrap code that must fail"),
    ("error_pattern", "open_stream", "PermissionError here means the parent dir is read-only"),
    ("requirement", "format_filename", "filenames shown to users must go through this"),
]


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def peak_rss_mb(pid: int, field: str = "VmHWM") -> float | None:
    """Peak RSS (``VmHWM``), or with ``field="VmRSS"`` the RSS now, in MB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(rf"{field}:\s+(\d+) kB", status)
    return round(int(match.group(1)) / 1024, 1) if match else None


def prepare(repo: Path, rel: str, memories: int) -> Path:
    """Copy REPO, seed memories, index the code graph; returns the copy's root."""
    work = Path(tempfile.mkdtemp(prefix="engram-lsp-bench-")) / repo.name
    shutil.copytree(repo, work, ignore=shutil.ignore_patterns(".engram"), symlinks=True)
    # prepared in-process: no workspace engine outlives the preparation (docs/engine.md)
    env = {**os.environ, "ENGRAM_EMBED__MODEL": "none", "ENGRAM_ENGINE": "off"}
    subprocess.run(
        [sys.executable, "-m", "engram", "index", "--workspace", str(work)],
        check=True,
        capture_output=True,
        env=env,
    )
    seed_memories(work, rel, memories)
    return work


def seed_memories(root: Path, rel: str, count: int) -> None:
    from engram.app import Engine
    from engram.app.remember import remember
    from engram.errors import InvalidInput
    from engram.model import CodeAnchor, Memory, MemoryType

    with Engine.open(root, {"embed": {"model": "none"}}) as engine:
        for mtype, symbol, text in ANCHORED:
            try:
                remember(engine, text, type=mtype, file=rel, symbol=symbol)
            except InvalidInput:  # another repository's file: anchors are validated
                remember(engine, text, type=mtype, file=rel)
        files = [
            p.relative_to(root).as_posix()
            for p in root.rglob("*.py")
            if ".engram" not in p.parts and ".git" not in p.parts
        ]
        rng = random.Random(7)
        words = [
            "cache",
            "config",
            "parser",
            "option",
            "command",
            "context",
            "stream",
            "encoding",
            "retry",
            "path",
        ]
        batch: list[Memory] = []
        for i in range(count):
            path = rng.choice(files)
            batch.append(
                Memory(
                    content=f"note {i}: {' '.join(rng.sample(words, 5))} in {path}",
                    type=rng.choice(list(MemoryType)),
                    anchors=[CodeAnchor(path, None, rng.randint(0, 50), None)],
                    confidence=rng.uniform(0.3, 0.95),
                )
            )
        store = engine.store
        for start in range(0, len(batch), 2000):
            store.add(batch[start : start + 2000])  # bulk load: no dedup, no vectors
        store.compact()


class Recorder:
    """A pygls client that timestamps diagnostics and progress."""

    def __init__(self) -> None:
        self.client = LanguageClient("engram-bench", "1")
        self.diagnostics: dict[str, tuple[float, list[types.Diagnostic]]] = {}
        #: every publish per document: (time, number of diagnostics)
        self.publishes: dict[str, list[tuple[float, int]]] = {}
        self.ready_at: float | None = None
        self.tokens: set[Any] = set()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _diagnostics(params: types.PublishDiagnosticsParams) -> None:
            now = time.perf_counter()
            self.diagnostics.setdefault(params.uri, (now, params.diagnostics))
            self.publishes.setdefault(params.uri, []).append((now, len(params.diagnostics)))

        @self.client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def _create(params: types.WorkDoneProgressCreateParams) -> None:
            self.tokens.add(params.token)

        @self.client.feature(types.PROGRESS)
        def _progress(params: types.ProgressParams) -> None:
            value = params.value
            kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
            message = (
                value.get("message") if isinstance(value, dict) else getattr(value, "message", "")
            )
            if kind == "end" and message == "ready":
                self.ready_at = time.perf_counter()

        @self.client.feature(types.WORKSPACE_CONFIGURATION)
        def _configuration(params: types.ConfigurationParams) -> list[Any]:
            return [None for _ in params.items]

        @self.client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def _register(params: types.RegistrationParams) -> None:
            return None

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def _log(params: types.LogMessageParams) -> None:
            return None


CAPABILITIES = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(
        hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(related_information=True),
        synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
    ),
    window=types.WindowClientCapabilities(work_done_progress=True),
    workspace=types.WorkspaceClientCapabilities(configuration=True, workspace_folders=True),
)


async def measure(
    name: str,
    command: list[str],
    root: Path,
    rel: str,
    hover_lines: list[tuple[int, int]],
    options: dict[str, Any] | None,
    wait_ready: bool,
) -> dict[str, Any]:
    rec = Recorder()
    started = time.perf_counter()
    await rec.client.start_io(*command, cwd=str(root))
    server = rec.client._server
    assert server is not None
    pid = server.pid
    await rec.client.initialize_async(
        types.InitializeParams(
            capabilities=CAPABILITIES,
            process_id=os.getpid(),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            initialization_options=options,
            client_info=types.ClientInfo(name="engram-bench"),
        )
    )
    initialize_s = time.perf_counter() - started
    rec.client.initialized(types.InitializedParams())
    ready_s: float | None = None
    if wait_ready:
        deadline = time.perf_counter() + 300
        while rec.ready_at is None and time.perf_counter() < deadline:
            await asyncio.sleep(0.01)
        ready_s = None if rec.ready_at is None else rec.ready_at - started
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
    deadline = time.perf_counter() + 10
    while uri not in rec.diagnostics and time.perf_counter() < deadline:
        await asyncio.sleep(0.001)
    first = rec.diagnostics.get(uri)
    diag_ms = None if first is None else round((first[0] - opened) * 1000, 1)
    diag_count = 0 if first is None else len(first[1])
    await asyncio.sleep(0.5)  # let background work (impact summaries) settle
    publishes = [(round((t - opened) * 1000, 1), n) for t, n in rec.publishes.get(uri, [])]
    latencies: list[float] = []
    non_empty = 0
    for line, character in hover_lines:
        t0 = time.perf_counter()
        result = await rec.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=character),
            )
        )
        latencies.append((time.perf_counter() - t0) * 1000)
        non_empty += result is not None
    rss = peak_rss_mb(pid)
    rss_now = peak_rss_mb(pid, "VmRSS")  # what it keeps once ready and serving
    try:
        await asyncio.wait_for(rec.client.shutdown_async(None), 10)
        rec.client.exit(None)
    except Exception:
        pass
    await rec.client.stop()
    return {
        "server": name,
        "initialize_s": round(initialize_s, 3),
        "ready_s": None if ready_s is None else round(ready_s, 3),
        "did_open_to_diagnostics_ms": diag_ms,
        "diagnostics": diag_count,
        # every publish for the file up to the first hover: (ms after didOpen, diagnostics)
        "publishes": publishes,
        "hover_p50_ms": round(percentile(latencies, 0.5), 2),
        "hover_p95_ms": round(percentile(latencies, 0.95), 2),
        "hover_max_ms": round(max(latencies), 2) if latencies else None,
        "hovers_with_content": non_empty,
        "peak_rss_mb": rss,
        "rss_after_hovers_mb": rss_now,
    }


async def initialize_once(command: list[str], root: Path, options: dict[str, Any] | None) -> float:
    """Seconds from spawn to the ``initialize`` result (then the server is told to exit)."""
    client = LanguageClient("engram-bench", "1")
    started = time.perf_counter()
    await client.start_io(*command, cwd=str(root))
    await client.initialize_async(
        types.InitializeParams(
            capabilities=CAPABILITIES,
            process_id=os.getpid(),
            root_uri=root.as_uri(),
            initialization_options=options,
        )
    )
    elapsed = time.perf_counter() - started
    try:
        await asyncio.wait_for(client.shutdown_async(None), 10)
        client.exit(None)
    except Exception:
        pass
    await client.stop()
    return elapsed


async def initialize_runs(
    commands: dict[str, tuple[list[str], dict[str, Any] | None]], root: Path, runs: int
) -> dict[str, list[float]]:
    """Alternate the servers so machine load affects both alike."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (command, options) in commands.items():
            times[name].append(round(await initialize_once(command, root, options), 3))
    return times


def anchored_hover_positions(root: Path, rel: str, count: int) -> list[tuple[int, int]]:
    """Lines of the seeded symbols' definitions (Engram has memories there)."""
    lines = (root / rel).read_text().splitlines()
    targets = [
        i
        for i, text in enumerate(lines)
        if re.match(r"\s*(def|class) (\w+)", text)
        and any(re.match(rf"\s*(def|class) {sym}\b", text) for _t, sym, _c in ANCHORED)
    ]
    return [(targets[i % len(targets)], 6) for i in range(count)] if targets else []


def identifier_positions(root: Path, rel: str, count: int) -> list[tuple[int, int]]:
    """Identifier use sites spread over the file (what jedi answers hovers on)."""
    lines = (root / rel).read_text().splitlines()
    spots = [
        (i, m.start())
        for i, text in enumerate(lines)
        for m in re.finditer(r"\b[a-z_]{4,}\b", text)
        if not text.lstrip().startswith("#")
    ]
    rng = random.Random(3)
    return [rng.choice(spots) for _ in range(count)] if spots else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path("/work/repos/click"))
    parser.add_argument("--file", default="src/click/utils.py")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--hovers", type=int, default=50)
    parser.add_argument("--skip-jedi", action="store_true")
    parser.add_argument("--init-runs", type=int, default=5, help="spawn->initialize samples")
    args = parser.parse_args(argv)
    if not (args.repo / args.file).is_file():
        print(f"error: {args.repo / args.file} does not exist", file=sys.stderr)
        return 2
    root = prepare(args.repo.resolve(), args.file, args.memories)
    try:
        results: dict[str, Any] = {
            "repo": str(args.repo),
            "file": args.file,
            "memories": args.memories + len(ANCHORED),
            "hovers": args.hovers,
        }
        engram = asyncio.run(
            measure(
                "engram",
                [sys.executable, "-m", "engram", "serve"],
                root,
                args.file,
                anchored_hover_positions(root, args.file, args.hovers),
                {"embed": {"model": "none"}},
                wait_ready=True,
            )
        )
        results["engram"] = engram
        jedi_bin = Path(sys.executable).with_name("jedi-language-server")
        if not args.skip_jedi and jedi_bin.exists():
            results["jedi"] = asyncio.run(
                measure(
                    "jedi-language-server",
                    [str(jedi_bin)],
                    root,
                    args.file,
                    identifier_positions(root, args.file, args.hovers),
                    None,
                    wait_ready=False,
                )
            )
        commands: dict[str, tuple[list[str], dict[str, Any] | None]] = {
            "engram": ([sys.executable, "-m", "engram", "serve"], {"embed": {"model": "none"}})
        }
        if "jedi" in results:
            commands["jedi"] = ([str(jedi_bin)], None)
        runs = asyncio.run(initialize_runs(commands, root, max(1, args.init_runs)))
        for name, samples in runs.items():
            results[name]["initialize_runs_s"] = samples
            results[name]["initialize_s"] = round(percentile(samples, 0.5), 3)
        jedi = results.get("jedi")
        results["goals"] = {
            "initialize_not_slower_than_jedi": None
            if jedi is None
            else engram["initialize_s"] <= jedi["initialize_s"],
            "hover_p95_le_20ms": engram["hover_p95_ms"] <= 20.0,
            "did_open_to_diagnostics_le_100ms": engram["did_open_to_diagnostics_ms"] is not None
            and engram["did_open_to_diagnostics_ms"] <= 100.0,
            "peak_rss_le_250mb": engram["peak_rss_mb"] is not None
            and engram["peak_rss_mb"] <= 250.0,
        }
        for name in ("engram", "jedi"):
            if name in results:
                r = results[name]
                print(
                    f"{r['server']:>22}: initialize {r['initialize_s']}s, "
                    f"didOpen->diagnostics {r['did_open_to_diagnostics_ms']} ms "
                    f"({r['diagnostics']}), hover p50/p95/max {r['hover_p50_ms']}/"
                    f"{r['hover_p95_ms']}/{r['hover_max_ms']} ms, peak RSS {r['peak_rss_mb']} MB",
                    file=sys.stderr,
                )
        print(json.dumps(results))
    finally:
        # the servers measured here may have started the workspace engine: end it
        subprocess.run(
            [sys.executable, "-m", "engram", "stop", "--workspace", str(root)],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(root.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
