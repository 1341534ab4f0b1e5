#!/usr/bin/env python3
"""Remember and search latency on a shared store (S3) next to local disk, in the same run.

An S3-compatible server (moto's server mode, from PyPI) is started on a free loopback port;
two scratch workspaces hold the same ``--preload`` memories, one in ``.engram/`` and one at
``s3://…``. Then, through the engine as the CLI and the language server use it (no
embedding model, so the figures are the store's own cost):

* ``remember``: ``Engine.remember`` of ``--writes`` new memories, one at a time;
* ``search``: ``Engine.search`` of ``--queries`` queries;
* ``open``: opening the store and reading its snapshot (a fresh process's first read).

A loopback server has no network latency: against a real bucket each remote request adds
its round trip (a remember makes about a dozen requests). The ratio in one run is the
point: what the object-store protocol costs beyond local files.

Usage: scripts/bench/shared_store.py [--preload 2000] [--writes 50] [--queries 100]
Last stdout line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

LETTERS = "bcdfghjklmnprstvz"


def words(rng: random.Random, n: int) -> str:
    return " ".join(
        "".join(rng.choice(LETTERS) + rng.choice("aeiou") for _ in range(3)) for _ in range(n)
    )


def percentiles(samples: list[float]) -> dict[str, float]:
    ms = np.asarray(samples) * 1000.0
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2),
        "n": len(samples),
    }


@contextmanager
def moto_server() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def measure(root: Path, overrides: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    from engram.app import Engine
    from engram.app.recall import search
    from engram.app.remember import remember
    from engram.model import Memory, MemoryType

    rng = random.Random(args.seed)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    with Engine.open(root, overrides=overrides) as engine:
        batch = [
            Memory(content=f"note {i}: {words(rng, 14)}", type=MemoryType.MODULE_INSIGHT)
            for i in range(args.preload)
        ]
        for start in range(0, len(batch), 1000):
            engine.store.add(batch[start : start + 1000])
    queries = [words(random.Random(q), 3) for q in range(args.queries)]
    result: dict[str, Any] = {}
    started = time.perf_counter()
    with Engine.open(root, overrides=overrides) as engine:
        engine.store.count()
        result["open_s"] = round(time.perf_counter() - started, 3)

        def timed(fn: Callable[[int], Any], n: int) -> list[float]:
            samples = []
            for i in range(n):
                t0 = time.perf_counter()
                fn(i)
                samples.append(time.perf_counter() - t0)
            return samples

        result["remember"] = percentiles(
            timed(lambda i: remember(engine, f"fresh {i}: {words(rng, 14)}"), args.writes)
        )
        result["search"] = percentiles(timed(lambda i: search(engine, queries[i]), args.queries))
        result["memories"] = engine.store.count()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preload", type=int, default=2000)
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    # dummy credentials for the loopback server, in the standard AWS variables (never in
    # Engram's settings); no instance-metadata probing
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench-secret")
    os.environ.setdefault("AWS_REGION", "us-east-1")
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    import boto3

    base = {"embed": {"model": "none"}, "index": {"embed_in_background": False}}
    out: dict[str, Any] = {"preload": args.preload}
    with moto_server() as endpoint, tempfile.TemporaryDirectory(prefix="bench-shared-") as tmp:
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="bench")
        out["local"] = measure(Path(tmp) / "local", base, args)
        remote = {
            **base,
            "store": {"uri": "s3://bench/engram", "endpoint": endpoint, "allow_http": True},
        }
        out["s3"] = measure(Path(tmp) / "s3", remote, args)
    for op in ("remember", "search"):
        out[f"{op}_p95_ratio"] = round(
            out["s3"][op]["p95_ms"] / max(out["local"][op]["p95_ms"], 1e-6), 2
        )
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
