"""Smoke test of scripts/bench/remember_contradictions.py on a tiny slice."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_remember_contradictions_bench_prints_both_rows() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/remember_contradictions.py"), "--memories",
         "4", "--json"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(summary["rows"]) == {"rules", "nli"}
    for row in summary["rows"].values():
        assert row["remembers"] == 4 and 0 < row["p50_ms"] <= row["p95_ms"] <= row["max_ms"]
    assert summary["rows"]["rules"]["nli_loaded"] is False
