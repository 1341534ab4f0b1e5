"""Smoke test of scripts/eval/observer_replay.py on one labelled trace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_replay_one_trace_prints_json_last() -> None:
    trace = ROOT / "tests" / "observer" / "traces" / "bugfix_false_start.jsonl"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "eval" / "observer_replay.py"), str(trace)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = proc.stdout.strip().splitlines()
    summary = json.loads(lines[-1])
    assert summary["items"] == 1 and summary["promoted"] >= 3
    assert summary["precision"] == 1.0 and summary["recall"] == 1.0
    assert summary["forbidden_promoted"] == 0
    # the figure is reported, not judged here: speed belongs to the script, not the suite
    assert summary["event_cpu_ms"]["p95"] > 0
    assert "dead_end" in proc.stdout


def test_all_traces_are_valid_events() -> None:
    from engram.observer import parse_event

    traces = sorted((ROOT / "tests" / "observer" / "traces").glob("*.jsonl"))
    assert len(traces) >= 5
    for trace in traces:
        lines = trace.read_text(encoding="utf-8").splitlines()
        header = json.loads(lines[0])
        assert header["labels"]["expected"], trace.name
        for line in lines[1:]:
            parse_event(json.loads(line))
