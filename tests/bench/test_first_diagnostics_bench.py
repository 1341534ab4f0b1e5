"""Smoke test of scripts/bench/first_diagnostics.py on a tiny store: it runs, a fresh
server's first diagnostics come, and it prints its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_first_diagnostics_bench_prints_figures(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts/bench/agent_calls.py"),
            *("--memories", "30", "--files", "4", "--runs", "1", "--embed-model", "none"),
            *("--keep", str(tmp_path)),
        ],
        capture_output=True,
        check=True,
        timeout=300,
    )
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts/bench/first_diagnostics.py"),
            *("--keep", str(tmp_path), "--runs", "2", "--engine", "off", "--embed-model", "none"),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["benchmark"] == "first_diagnostics" and result["runs"] == 2
    for key in ("initialize_ms", "diagnostics_ms"):
        assert result[key]["missing"] == 0, result
    for row in result["each"]:
        assert 0 < row["initialize_ms"] < row["diagnostics_ms"], row
