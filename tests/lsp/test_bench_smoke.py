"""Smoke test of scripts/bench/lsp.py on a tiny repository (figures are not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engram.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
def test_bench_prints_one_json_object(app_workspace: Workspace) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "bench" / "lsp.py"),
            "--repo",
            str(app_workspace.root),
            "--file",
            "src/app.py",
            "--memories",
            "20",
            "--hovers",
            "3",
            "--init-runs",
            "1",
            "--skip-jedi",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=280,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    engram = result["engram"]
    assert engram["initialize_s"] > 0 and engram["peak_rss_mb"] > 0
    assert engram["did_open_to_diagnostics_ms"] is not None
    assert engram["diagnostics"] >= 1
    assert set(result["goals"]) >= {"hover_p95_le_20ms", "peak_rss_le_250mb"}
