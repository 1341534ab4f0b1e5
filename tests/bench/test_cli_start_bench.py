"""Smoke test of scripts/bench/cli_start.py on a tiny workspace (figures are not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
def test_cli_start_bench_prints_one_json_object() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts/bench/cli_start.py"),
            "--runs",
            "1",
            "--memories",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["bench"] == "cli_start"
    assert set(result["rows"]) == {
        "python_floor",
        "help",
        "search_engine",
        "search_help",
        "search_round_trip",
    }
    assert all(row["runs"] == 1 for row in result["rows"].values())
    assert result["thin_cli_imports"]["modules"] > 0
