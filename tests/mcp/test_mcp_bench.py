"""Smoke test of scripts/bench/mcp.py on a tiny slice: it runs and its last line is JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "mcp.py"


def test_bench_smoke() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--servers",
            "2",
            "--tools-per-server",
            "2",
            "--synthetic-servers",
            "10",
            "--synthetic-tools",
            "40",
            "--queries",
            "5",
            "--repeat",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["servers"] == 2
    assert result["eager"]["live_processes"] == 2 and result["lazy"]["live_processes"] == 1
    assert result["lazy"]["top_hit"] == "time__get_current_time"
    assert result["registry_load"]["tools"] == 40
    assert result["search"]["p95_ms"] > 0
    tokens = result["tokens"]["synthetic"]
    assert 0 < tokens["focused_mean"] < tokens["all_tools"]
