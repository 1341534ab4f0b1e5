#!/usr/bin/env python3
"""What the contradiction judges cost ``remember``: latency with and without the NLI model.

A scratch git workspace per row; the same notes are remembered one at a time (each a full
``app.remember.remember``: redaction, candidates, contradictions, dedup, embedding, store write).
The notes are the labelled pairs in ``tests/lifecycle/data/contradiction_pairs.jsonl``
(every other note contradicts or resembles the one before it, so the judges have pairs to
read) plus unrelated notes, cycled to ``--memories``. Rows:

* ``rules``: ``[contradictions] nli = false``;
* ``nli``: the NLI model on (when ``engram[nli]`` is installed), including its first load.

Figures: p50 / p95 / max milliseconds per remember, how many pairs the rules left open
(on one subject, with a flip cue: what the NLI judge reads when it is on), the process's
peak RSS growth. The embedding model is off unless ``--model``.

Usage: scripts/bench/remember_contradictions.py [--memories N] [--model] [--json]
Last stdout line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PAIRS = ROOT / "tests" / "lifecycle" / "data" / "contradiction_pairs.jsonl"


def notes(count: int) -> list[str]:
    rows = [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]
    texts = [t for row in rows for t in (row["a"], row["b"])]
    return [
        texts[i % len(texts)] + ("" if i < len(texts) else f" (case {i})") for i in range(count)
    ]


def run_row(texts: Sequence[str], *, nli: bool, model: bool) -> dict[str, Any]:
    from engram.app import Engine
    from engram.app.remember import remember
    from engram.lifecycle import contradictions

    asked = 0
    real = contradictions._ask_judges

    def counting(new: Any, pairs: Any, judges: Any) -> Any:
        nonlocal asked
        asked += len(pairs)
        return real(new, pairs, judges)

    contradictions._ask_judges = counting  # count, do not change, what reaches the judges
    try:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
            overrides = {
                "contradictions": {"nli": nli},
                "embed": {"model": "default" if model else "none"},
                "index": {"embed_in_background": False},
            }
            engine = Engine.open(root, overrides)
            rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            latencies = []
            for text in texts:
                start = time.perf_counter()
                remember(engine, text, type="gotcha")
                latencies.append(1000 * (time.perf_counter() - start))
            rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            judge = engine.contradiction_judges.nli
            engine.close()
    finally:
        contradictions._ask_judges = real
    ordered = sorted(latencies)
    return {
        "remembers": len(texts),
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[max(0, int(0.95 * len(ordered)) - 1)], 1),
        "max_ms": round(ordered[-1], 1),
        "open_pairs": asked,
        "nli_loaded": judge is not None,
        "peak_rss_growth_mb": round((rss_after - rss_before) / 1024, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100)
    parser.add_argument("--model", action="store_true", help="embed with the default model")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    texts = notes(args.memories)
    # rules first: the NLI row's peak RSS growth then includes the model, not the store
    summary = {
        "memories": args.memories,
        "model": args.model,
        "rows": {
            "rules": run_row(texts, nli=False, model=args.model),
            "nli": run_row(texts, nli=True, model=args.model),
        },
    }
    print(json.dumps(summary) if args.json else json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
