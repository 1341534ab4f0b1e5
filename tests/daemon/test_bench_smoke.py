"""Smoke test of scripts/bench/frontends.py on a tiny workspace (figures are not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import git

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(900)
def test_frontends_bench_prints_one_json_object(tmp_path: Path) -> None:
    repo = tmp_path / "tiny"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text(
        "def make_str(x):\n    return str(x)\n\n\nclass LazyFile:\n    pass\n"
    )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
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
            "--repo",
            str(repo),
            "--file",
            "src/app.py",
            "--lsp-memories",
            "10",
            "--hovers",
            "3",
            "--init-runs",
            "1",
            "--command-runs",
            "2",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=880,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    cli = result["cli"]
    assert cli["search_engine"]["runs"] == 2 and cli["search_in_process"]["runs"] == 1
    assert cli["remember_engine"]["p50_ms"] > 0
    # the thin CLI imports nothing heavy before forwarding
    assert result["thin_cli_imports"]["heavy_imported"] == []
    assert result["engine"]["rss_mb"] > 0
    lsp = result["lsp"]
    assert lsp["engine_cold_window"]["did_open_to_first_memory_diagnostic_ms"] is not None
    assert lsp["together"]["engine_clients"] == ["lsp", "lsp"]
    assert set(lsp["initialize_median_s"]) == {"engram", "bare_pygls"}
    for window in ("engine_warm_window", "in_process_window"):
        assert lsp[window]["commands"]["remember"]["runs"] == 2
    for where in ("engine", "in_process"):
        assert result["mcp"][where]["search"]["runs"] == 2
        assert result["mcp"][where]["first_call_ms"] > 0
    # no engine the bench started outlives it (they used to live on for 600 s)
    assert not [p for p in result["engines_ended"] if Path(f"/proc/{p}").exists()]
