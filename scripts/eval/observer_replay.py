#!/usr/bin/env python3
"""Replay recorded observer traces and score what the observer promotes.

Usage::

    scripts/eval/observer_replay.py tests/observer/traces/*.jsonl [--json]

A trace is JSON lines: a header ``{"trace": name, "labels": {...}, "config": {...}}``
followed by observer events (the same dicts ``engram observe`` accepts). Labels:
``expected`` (memories that should be promoted), ``acceptable`` (fine if promoted) and
``forbidden`` (must never be promoted); each is ``{"type": T?, "contains": [text…]?,
"needs_review": bool?}``. Every trace runs in a fresh temporary workspace with an
in-memory sink, so the figures measure the observer itself (signals, checkpoint append,
promotion decisions), not the store or the embedding model.

Printed: each promoted memory, precision (promoted memories matching an expected or
acceptable label / all promoted), recall of expected labels, forbidden promotions,
promotions without review from failed or web-tainted sessions, per-event cost p50/p95
(wall clock and CPU) and the promotion/finalize decision time (no writes, no LLM).
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from engram.config import ObserverConfig
from engram.model import Memory
from engram.observer import Observer
from engram.workspace import Workspace


@attrs.define
class _Result:
    memory: Memory
    merged: bool = False


class InMemorySink:
    """The Engine's sink surface, in memory: remember_many, list, memories_for_file."""

    def __init__(self) -> None:
        self.memories: dict[str, Memory] = {}

    def remember_many(self, memories: Sequence[Memory]) -> list[_Result]:
        for memory in memories:
            self.memories[memory.id] = memory
        return [_Result(m) for m in memories]

    def list(self, **kwargs: Any) -> list[Memory]:
        wanted = kwargs.get("type")
        return [m for m in self.memories.values() if not wanted or m.type.value == wanted]

    def memories_for_file(self, rel: str) -> list[Memory]:
        return [m for m in self.memories.values() if rel in m.related_files]


def _matches(memory: Memory, label: dict[str, Any]) -> bool:
    if label.get("type") and memory.type.value != label["type"]:
        return False
    contains = label.get("contains") or []
    if isinstance(contains, str):
        contains = [contains]
    text = memory.content.lower() + " " + " ".join(memory.related_files).lower()
    if not all(str(c).lower() in text for c in contains):
        return False
    return "needs_review" not in label or memory.needs_review == label["needs_review"]


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def replay(path: Path) -> dict[str, Any]:
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    header = json.loads(lines[0]) if lines and "trace" in json.loads(lines[0]) else {}
    events = [json.loads(ln) for ln in (lines[1:] if header else lines)]
    labels = header.get("labels", {})
    sink = InMemorySink()
    event_ms: list[float] = []
    event_cpu_ms: list[float] = []
    promote_ms: list[float] = []
    finalize_ms: list[float] = []
    write_ms: list[float] = []
    sessions: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="engram-replay-") as tmp:
        workspace = Workspace.open(tmp)
        observer = Observer(
            sink, workspace=workspace, config=ObserverConfig(**header.get("config", {}))
        )
        for event in events:
            started, cpu_started = time.perf_counter(), time.thread_time()
            result = observer.observe(event)
            elapsed = (time.perf_counter() - started) * 1000.0
            cpu = (time.thread_time() - cpu_started) * 1000.0
            report = result.promotion
            if report is None:
                event_ms.append(elapsed)
                event_cpu_ms.append(cpu)
            else:
                (finalize_ms if result.summary is not None else promote_ms).append(
                    report.elapsed_ms
                )
                write_ms.append(report.write_ms)
            if result.summary is not None:
                sessions[result.session_id] = {
                    "outcome": result.summary.outcome,
                    "tainted": result.summary.tainted,
                    "learned": [m.id for m in result.summary.learned],
                }
        for session_id in observer.active_sessions():
            report = observer.finalize(session_id)
            finalize_ms.append(report.elapsed_ms)
            summary = observer.session_summary(session_id) or {}
            sessions[session_id] = {
                "outcome": summary.get("outcome", report.outcome),
                "tainted": bool(summary.get("tainted")),
                "learned": [m["id"] for m in summary.get("learned", [])],
            }
        observer.close()
    promoted = list(sink.memories.values())
    good_labels = [*labels.get("expected", []), *labels.get("acceptable", [])]
    true_positive = [m for m in promoted if any(_matches(m, lab) for lab in good_labels)]
    forbidden = [
        m for m in promoted if any(_matches(m, lab) for lab in labels.get("forbidden", []))
    ]
    expected = labels.get("expected", [])
    found = [lab for lab in expected if any(_matches(m, lab) for m in promoted)]
    risky = {sid for sid, s in sessions.items() if s["outcome"] == "failure" or s["tainted"]}
    unreviewed = [m for m in promoted if m.provenance.session_id in risky and not m.needs_review]
    return {
        "trace": header.get("trace", path.stem),
        "events": len(events),
        "sessions": len(sessions),
        "promoted": [
            {
                "type": m.type.value,
                "content": m.content,
                "needs_review": m.needs_review,
                "confidence": m.confidence,
                "commit_sha": m.provenance.commit_sha,
                "ok": m in true_positive,
                "forbidden": m in forbidden,
            }
            for m in promoted
        ],
        "true_positive": len(true_positive),
        "expected": len(expected),
        "expected_found": len(found),
        "forbidden_promoted": len(forbidden),
        "unreviewed_from_failed_or_tainted": len(unreviewed),
        "event_ms": event_ms,
        "event_cpu_ms": event_cpu_ms,
        "promote_ms": promote_ms,
        "finalize_ms": finalize_ms,
        "write_ms": write_ms,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", type=Path, help="trace files (JSON lines)")
    parser.add_argument("--json", action="store_true", help="only the JSON summary line")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    results = [replay(p) for p in args.traces]
    all_events = [x for r in results for x in r["event_ms"]]
    all_cpu = [x for r in results for x in r["event_cpu_ms"]]
    decisions = [x for r in results for x in r["promote_ms"] + r["finalize_ms"]]
    finals = [x for r in results for x in r["finalize_ms"]]
    promoted = sum(len(r["promoted"]) for r in results)
    true_pos = sum(r["true_positive"] for r in results)
    expected = sum(r["expected"] for r in results)
    found = sum(r["expected_found"] for r in results)
    if not args.json:
        for r in results:
            print(f"== {r['trace']}: {r['events']} events, {r['sessions']} session(s)")
            for m in r["promoted"]:
                mark = "FORBIDDEN" if m["forbidden"] else ("ok" if m["ok"] else "unlabelled")
                review = " [review]" if m["needs_review"] else ""
                sha = f" @{m['commit_sha'][:7]}" if m["commit_sha"] else ""
                print(f"  {mark:>10}  {m['type']}{review}{sha}: {m['content'][:110]}")
            if not r["promoted"]:
                print("  (nothing promoted)")
            print(
                f"  precision {r['true_positive']}/{len(r['promoted'])}, "
                f"expected found {r['expected_found']}/{r['expected']}, "
                f"forbidden {r['forbidden_promoted']}, "
                f"unreviewed from failed/tainted {r['unreviewed_from_failed_or_tainted']}"
            )
    summary = {
        "dataset": "observer-traces",
        "items": len(results),
        "events": len(all_events),
        "promoted": promoted,
        "precision": round(true_pos / promoted, 4) if promoted else None,
        "recall": round(found / expected, 4) if expected else None,
        "forbidden_promoted": sum(r["forbidden_promoted"] for r in results),
        "unreviewed_from_failed_or_tainted": sum(
            r["unreviewed_from_failed_or_tainted"] for r in results
        ),
        "event_ms": {
            "p50": round(_percentile(all_events, 0.5), 4),
            "p95": round(_percentile(all_events, 0.95), 4),
            "max": round(max(all_events, default=0.0), 4),
            "mean": round(statistics.fmean(all_events), 4) if all_events else 0.0,
        },
        "event_cpu_ms": {
            "p50": round(_percentile(all_cpu, 0.5), 4),
            "p95": round(_percentile(all_cpu, 0.95), 4),
            "max": round(max(all_cpu, default=0.0), 4),
        },
        "promotion_ms": {
            "p95": round(_percentile(decisions, 0.95), 3),
            "max": round(max(decisions, default=0.0), 3),
        },
        "finalize_ms": {
            "p95": round(_percentile(finals, 0.95), 3),
            "max": round(max(finals, default=0.0), 3),
        },
        "rows": {
            r["trace"]: {
                "promoted": len(r["promoted"]),
                "precision": round(r["true_positive"] / len(r["promoted"]), 4)
                if r["promoted"]
                else None,
                "recall": round(r["expected_found"] / r["expected"], 4) if r["expected"] else None,
                "forbidden_promoted": r["forbidden_promoted"],
            }
            for r in results
        },
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
