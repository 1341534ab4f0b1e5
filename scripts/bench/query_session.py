#!/usr/bin/env python3
"""What the one-thread query session costs and gives: RSS, load time, batch and query speed.

Loads the default embedder in this (fresh) process and prints, as one JSON line:

* ``rss_before_mb`` / ``rss_after_mb``: resident memory before and after loading the model
  (so running it with ``--query-threads 1`` and ``--query-threads 0`` gives the second
  session's extra RSS), and ``rss_end_mb`` after the batch and the queries;
* ``pss_*_mb`` / ``anon_*_mb`` after loading and at the end: the proportional set (a page
  mapped twice, as the folded model's ``weights.bin`` is by two sessions, counts once) and
  the private anonymous memory, because RSS counts a file page once per mapping;
* ``load_s``: wall clock of ``load_embedder`` (the model's sha256 check, both sessions);
* ``batch_texts_per_s``: embedding ``--chunks`` code chunks of ~600 characters (cut from the
  Python files under ``--source``) in one call, as indexing does;
* ``query_p50_ms`` / ``query_p95_ms``: ``--queries`` single short queries, one call each.

Without ``--query-threads`` the config's default is used, so the script also runs against a
checkout older than ``embed.query_threads`` (for an old-vs-new comparison).

Usage: scripts/bench/query_session.py [--query-threads N] [--chunks 500] [--queries 100]
       [--source DIR]  (default: this checkout's server/engram)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path

CHUNK_CHARS = 600


def rss_mb() -> float:
    """This process's resident set from /proc (Linux), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def smaps_mb() -> dict[str, float]:
    """``Pss`` and ``Anonymous`` of this process from /proc/self/smaps_rollup, in MB."""
    found = {"Pss": float("nan"), "Anonymous": float("nan")}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in found:
                found[key] = int(value.split()[0]) / 1024
    return found


def code_chunks(source: Path, count: int) -> list[str]:
    """``count`` consecutive ~600-character slices of the Python files under ``source``."""
    chunks: list[str] = []
    for path in sorted(source.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for start in range(0, len(text), CHUNK_CHARS):
            chunks.append(text[start : start + CHUNK_CHARS])
            if len(chunks) == count:
                return chunks
    return chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query-threads", type=int, default=None)
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--source", type=Path, default=Path(__file__).resolve().parents[2] / "server"
    )
    args = parser.parse_args()

    import numpy as np

    from engram.config import EmbedConfig
    from engram.embed import load_embedder

    chunks = code_chunks(args.source, args.chunks)
    queries = [f"where is the retry policy for request {i} configured" for i in range(args.queries)]
    config = (
        EmbedConfig()
        if args.query_threads is None
        else EmbedConfig(query_threads=args.query_threads)
    )
    before = rss_mb()
    start = time.perf_counter()
    status = load_embedder(config, None)
    load_s = time.perf_counter() - start
    embedder = status.embedder
    if embedder is None:
        raise SystemExit(f"no embedder: {status.reason}")
    after = rss_mb()
    after_smaps = smaps_mb()
    embedder.embed([queries[0]])  # first-call set-up of both sessions is not timed
    embedder.embed(chunks[:4])
    start = time.perf_counter()
    embedder.embed(chunks)
    batch_s = time.perf_counter() - start
    times = []
    for query in queries:
        start = time.perf_counter()
        embedder.embed([query])
        times.append((time.perf_counter() - start) * 1000)
    end_smaps = smaps_mb()
    print(
        json.dumps(
            {
                "query_threads": args.query_threads,
                "chunks": len(chunks),
                "rss_before_mb": round(before, 1),
                "rss_after_mb": round(after, 1),
                "rss_model_mb": round(after - before, 1),
                "rss_end_mb": round(rss_mb(), 1),
                "pss_after_mb": round(after_smaps["Pss"], 1),
                "anon_after_mb": round(after_smaps["Anonymous"], 1),
                "pss_end_mb": round(end_smaps["Pss"], 1),
                "anon_end_mb": round(end_smaps["Anonymous"], 1),
                "load_s": round(load_s, 3),
                "batch_texts_per_s": round(len(chunks) / batch_s, 1),
                "query_p50_ms": round(float(np.percentile(times, 50)), 2),
                "query_p95_ms": round(float(np.percentile(times, 95)), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
