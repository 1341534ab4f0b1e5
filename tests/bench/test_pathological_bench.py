"""Smoke test of scripts/bench/pathological.py (its times are printed, not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pathological_bench_indexes_its_files_and_notes_the_deep_ones() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/pathological.py"), "--runs", "1"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    [run] = json.loads(out.stdout.strip().splitlines()[-1])["runs"]
    assert run["files"] == 9 and run["partly_indexed"] == 4, run
    assert run["nodes"] >= 1 and run["edges"] >= 1, run
