"""Store and embedding figures for docs/storage.md (not a test; run it by hand).

    .venv/bin/python tests/store/bench_store.py --sizes 10000 100000 --embed 256

Builds a throwaway workspace per size with random 384-d vectors and 25-word texts, then
measures keyword/vector search p50/p95 (plain and filtered) next to raw NumPy exact search
on the same matrix, a single add + immediate keyword search, the open + snapshot load, and
a refresh after another instance wrote. ``--embed N`` times the default model on N texts.
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from engram.model import CodeAnchor, Memory, MemoryType
from engram.store import MemoryFilter, MemoryStore
from engram.workspace import Workspace


def pct(samples: list[float], p: float) -> float:
    return round(float(np.percentile(np.array(samples) * 1000, p)), 2)


def timed(fn: Any, repeat: list[Any]) -> list[float]:
    out = []
    for arg in repeat:
        t = time.perf_counter()
        fn(arg)
        out.append(time.perf_counter() - t)
    return out


def bench_store(n: int, dim: int = 384, batch: int = 2000) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(5000)] + ["auth", "token", "jwt", "payment", "retry", "cache"]
    root = Path(tempfile.mkdtemp(prefix=f"engram-bench{n}-"))
    try:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        ws = Workspace.open(root)
        store = MemoryStore(ws)
        types = list(MemoryType)
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            m = min(batch, n - start)
            mems = [
                Memory(
                    " ".join(rng.choice(vocab, 25)),
                    type=types[(start + i) % len(types)],
                    anchors=[CodeAnchor(f"src/f{(start + i) % 500}.py")],
                )
                for i in range(m)
            ]
            store.add(mems, rng.normal(size=(m, dim)).astype(np.float32), "bench")
        res: dict[str, Any] = {"n": n, "build_s": round(time.perf_counter() - t0, 1)}
        store.compact()
        t = time.perf_counter()
        other = MemoryStore(ws)
        other.count()
        res["open_and_load_ms"] = round((time.perf_counter() - t) * 1000)
        queries = [" ".join(rng.choice(vocab, 4)) for _ in range(100)]
        vectors = list(rng.normal(size=(100, dim)).astype(np.float32))
        flt = MemoryFilter(types=[MemoryType.GOTCHA], include_stale=False)
        for name, fn in (
            ("keyword", lambda q: store.keyword_search(q, 10)),
            ("keyword_filtered", lambda q: store.keyword_search(q, 10, flt)),
        ):
            samples = timed(fn, queries)
            res[f"{name}_p50_ms"], res[f"{name}_p95_ms"] = pct(samples, 50), pct(samples, 95)
        block = store._snap.blocks[dim]
        matrix = block.matrix[: block.size]

        def numpy_exact(q: np.ndarray) -> None:
            scores = matrix @ q
            top = np.argpartition(-scores, 9)[:10]
            top[np.argsort(-scores[top])]

        for name, fn in (
            ("vector", lambda q: store.vector_search(q, 10)),
            ("vector_filtered", lambda q: store.vector_search(q, 10, flt)),
            ("numpy_exact", numpy_exact),
        ):
            samples = timed(fn, vectors)
            res[f"{name}_p50_ms"], res[f"{name}_p95_ms"] = pct(samples, 50), pct(samples, 95)
        fresh = []
        for i in range(20):
            memory = Memory(f"fresh{i} unique memory about kiwis")
            t = time.perf_counter()
            store.add([memory], rng.normal(size=(1, dim)).astype(np.float32), "bench")
            hits = store.keyword_search(f"fresh{i}", 5)
            fresh.append(time.perf_counter() - t)
            assert hits and hits[0][0] == memory.id
        res["add_then_keyword_p50_ms"], res["add_then_keyword_p95_ms"] = (
            pct(fresh, 50),
            pct(fresh, 95),
        )
        other.add([Memory("written by a second instance")])
        t = time.perf_counter()
        store.count()
        res["refresh_after_foreign_write_ms"] = round((time.perf_counter() - t) * 1000)
        store.close()
        other.close()
        return res
    finally:
        shutil.rmtree(root, ignore_errors=True)


def bench_embed(count: int) -> dict[str, Any]:
    from engram.config import EmbedConfig
    from engram.embed import load_embedder

    t = time.perf_counter()
    status = load_embedder(EmbedConfig(), None)
    load_s = time.perf_counter() - t
    if status.embedder is None:
        return {"embed_error": status.reason}
    texts = [
        f"Type: gotcha | Files: src/mod{i}.py\n\nmemory {i}: retry the payment call when the "
        f"gateway returns 502, the token cache expires after {i % 24} hours"
        for i in range(count)
    ]
    status.embedder.embed(texts[:8])
    t = time.perf_counter()
    status.embedder.embed(texts)
    secs = time.perf_counter() - t
    return {
        "embed_load_s": round(load_s, 2),
        "embed_texts": count,
        "embed_texts_per_s": round(count / secs, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[10000])
    parser.add_argument("--embed", type=int, default=0)
    args = parser.parse_args()
    result: dict[str, Any] = {"store": [bench_store(n) for n in args.sizes]}
    if args.embed:
        result.update(bench_embed(args.embed))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
