"""Smoke test of scripts/bench/agent_hooks.py on a tiny slice: it runs and prints its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_agent_hooks_bench_prints_figures() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts/bench/agent_hooks.py"),
            "--memories",
            "20",
            "--files",
            "4",
            "--runs",
            "1",
            "--events",
            "3",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=240,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(result["rows"]) == {
        "help",
        "session_start",
        "user_prompt_submit",
        "pre_tool_use_edit",
        "post_tool_use_read",
        "stop",
    }
    for row in result["rows"].values():
        assert row["cold_ms"] > 0 and row["p50_ms"] > 0
    assert result["session"]["over_budget_calls"] == 0
