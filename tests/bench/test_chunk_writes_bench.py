"""Smoke run of scripts/bench/chunk_writes.py: both variants store and find every chunk."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_chunk_writes_bench_smoke() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/chunk_writes.py"), "--batches", "3",
         "--rows", "40"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    for variant in ("bulk", "per_write_upkeep"):
        assert result[variant]["rows"] == 120 and result[variant]["found"] == 5
        assert result[variant]["cpu_seconds"] > 0
    assert result["cpu_ratio"] > 0
