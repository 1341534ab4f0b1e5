"""Smoke run of scripts/bench/query_session.py on a tiny slice (the brief: every benchmark
script has one in the suite; the figures themselves are the script's, quoted in
docs/retrieval.md, issue 17 rounds 6 and 7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_query_session(cache: Path, *args: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/query_session.py"), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        # the folded model goes to this test's cache, not the user's
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_query_session_prints_costs_for_both_settings(tmp_path: Path) -> None:
    """One session or two: the script loads the default model in a fresh process, embeds a
    small batch and single queries, and prints memory, load time and speed for each."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.py").write_text("def retry(policy):\n    return policy\n" * 100)
    for threads in ("1", "0"):
        out = run_query_session(
            tmp_path / "cache",
            "--query-threads",
            threads,
            "--chunks",
            "4",
            "--queries",
            "3",
            "--source",
            str(source),
        )
        assert out["query_threads"] == int(threads)
        assert out["chunks"] == 4
        for key in ("rss_before_mb", "rss_after_mb", "rss_end_mb", "load_s"):
            assert isinstance(out[key], float) and out[key] > 0, (key, out)
        assert isinstance(out["batch_texts_per_s"], float) and out["batch_texts_per_s"] > 0
        p50, p95 = out["query_p50_ms"], out["query_p95_ms"]
        assert isinstance(p50, float) and isinstance(p95, float) and 0 < p50 <= p95
    # the first run folded the model into the given cache: both runs loaded that copy
    assert list((tmp_path / "cache" / "engram" / "models").glob("folded-*/weights.bin"))
