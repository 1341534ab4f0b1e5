"""Smoke test of scripts/bench/agent_calls.py on a tiny store: it runs, and each call it
measures answered with text within its budget (a figure of nothing is no figure)."""

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
    assert set(result["mcp"]) == {"engram_context", "engram_search", "records"}
    assert all(chars > 0 for chars in result["mcp"]["records"].values())
    assert set(result["hooks"]) == {"SessionStart", "UserPromptSubmit", "PreToolUse"}
    calls = {k: v for k, v in result["mcp"].items() if k != "records"}
    rows = {**calls, **result["hooks"], "hover": result["lsp_hover"]}
    for name, row in rows.items():
        # every call answered with something: a hook exits 0 with nothing on any failure,
        # and a hover off the anchored lines shows nothing, so a time alone proves neither
        assert 0 < row["p50_ms"] <= row["p95_ms"], (name, row)
        assert 0 < row["chars_p50"] <= row["chars_max"], (name, row)
        assert 0 < row["tokens_max"] <= row.get("budget_tokens", row["tokens_max"]), (name, row)
    budgeted = {name for name, row in rows.items() if "budget_tokens" in row}
    assert budgeted == {"engram_context", "SessionStart", "UserPromptSubmit", "PreToolUse"}
