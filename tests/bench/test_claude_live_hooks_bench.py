"""Smoke test of scripts/bench/claude_live_hooks.py: one live session, its JSON printed.

Needs the Claude Code CLI from scripts/setup-e2e (scripts/test runs it); the bench exits
non-zero when it is missing, so this fails rather than skips.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_claude_live_hooks_bench_prints_figures() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/claude_live_hooks.py"), "--runs", "1"],
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # every hook the session fires was timed once, as Claude Code ran it
    assert set(result["hooks"]) == {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse:Write",
        "PostToolUse:Write",
        "PreToolUse:Edit",
        "PostToolUse:Edit",
        "Stop",
        "SessionEnd",
    }
    assert all(row["n"] == 1 for row in result["hooks"].values())
    # the baseline: the hooks that answer, started alone with the payloads Claude Code sent
    assert set(result["direct"]) == set(result["hooks"]) - {"Stop", "SessionEnd"}
    assert set(result["session"]) == {
        "to_first_request_ms",
        "after_write_gap_ms",
        "after_edit_gap_ms",
        "session_ms",
    }
