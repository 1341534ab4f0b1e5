#!/usr/bin/env python3
"""Contradiction scanning: precision and recall on labelled pairs of memories.

Each line of a JSONL file is ``{"a": text, "b": text, "conflict": bool}``. Both texts
become gotchas; ``find_contradictions(b, [(a, cosine)])`` must flag exactly the pairs
labelled ``conflict``. Rows: ``engram`` (the scanner, with the cosine of the default
model when it is available, else none) and ``negation_only`` (a pair is a conflict when
one text has a negation word and the other has not: the rule near-duplicate merging uses).

Usage: scripts/eval/contradictions.py [FILE] [--json] [--no-model]
Default FILE: tests/lifecycle/data/contradiction_pairs.jsonl (50 pairs written with the
module, so these figures show the rules behave as designed, not how they generalise).
Last stdout line: {"dataset": ..., "items": N, "rows": {"engram": {...}, "negation_only": {...}}}
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "tests" / "lifecycle" / "data" / "contradiction_pairs.jsonl"


def scores(predicted: Sequence[bool], labels: Sequence[bool]) -> dict[str, float]:
    tp = sum(p and g for p, g in zip(predicted, labels, strict=True))
    fp = sum(p and not g for p, g in zip(predicted, labels, strict=True))
    fn = sum(g and not p for p, g in zip(predicted, labels, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
        "flagged": tp + fp,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--json", action="store_true", help="print the JSON summary line")
    parser.add_argument("--no-model", action="store_true", help="judge without cosines")
    args = parser.parse_args(argv)

    from engram.lifecycle.contradictions import find_contradictions
    from engram.lifecycle.dedup import _negations
    from engram.model import Memory, MemoryType

    try:
        rows = [json.loads(line) for line in args.file.read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        print(f"contradictions: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    embedder: Any = None
    if not args.no_model:
        from engram.config import EmbedConfig
        from engram.embed import load_embedder

        embedder = load_embedder(EmbedConfig(), None).embedder
    labels = [bool(r["conflict"]) for r in rows]
    cosines: list[float | None] = [None] * len(rows)
    if embedder is not None:
        vectors = embedder.embed([t for r in rows for t in (r["a"], r["b"])])
        cosines = [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(rows))]
    engram: list[bool] = []
    baseline: list[bool] = []
    misses: list[str] = []
    for row, cosine, label in zip(rows, cosines, labels, strict=True):
        old = Memory(row["a"], type=MemoryType.GOTCHA)
        new = Memory(row["b"], type=MemoryType.GOTCHA)
        flagged = bool(find_contradictions(new, [(old, cosine)]))
        engram.append(flagged)
        baseline.append(_negations(row["a"]) != _negations(row["b"]))
        if flagged != label:
            misses.append(f"{'missed' if label else 'false alarm'}: {row['a']!r} / {row['b']!r}")
    for line in misses:
        print(line, file=sys.stderr)
    summary = {
        "dataset": args.file.stem,
        "items": len(rows),
        "conflicts": sum(labels),
        "rows": {"engram": scores(engram, labels), "negation_only": scores(baseline, labels)},
        "cosine": embedder is not None,
    }
    print(json.dumps(summary) if args.json else json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
