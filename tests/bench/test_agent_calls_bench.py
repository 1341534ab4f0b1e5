"""Smoke test of scripts/bench/agent_calls.py on a tiny store: it runs and prints its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_agent_calls_bench_prints_figures() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts/bench/agent_calls.py"),
            *("--memories", "30", "--files", "4", "--runs", "2", "--embed-model", "none"),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(result["mcp"]) == {"engram_context", "engram_search"}
    assert set(result["hooks"]) == {"SessionStart", "UserPromptSubmit", "PreToolUse"}
    for row in [*result["mcp"].values(), *result["hooks"].values(), result["lsp_hover"]]:
        assert row["p50_ms"] > 0
    assert result["mcp"]["engram_search"]["chars_max"] > 0
    assert result["hooks"]["PreToolUse"]["chars_max"] > 0
