"""Smoke test of scripts/bench/frontends.py on a tiny workspace (figures are not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
def test_frontends_bench_prints_one_json_object() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "bench" / "frontends.py"),
            "--memories",
            "5",
            "--runs",
            "2",
            "--in-process-runs",
            "1",
            "--model",
            "none",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=580,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    cli = result["cli"]
    assert cli["search_engine"]["runs"] == 2 and cli["search_in_process"]["runs"] == 1
    assert cli["remember_engine"]["p50_ms"] > 0
    # the thin CLI imports nothing heavy before forwarding
    assert result["thin_cli_imports"]["heavy_imported"] == []
    assert result["engine"]["rss_mb"] > 0
