"""Smoke test of scripts/eval/cochange_lab.py (feature choice by leave-one-repository-out)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.history.conftest import RepoBuilder

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "eval" / "cochange_lab.py"


def tiny_history(root: Path, rounds: int) -> Path:
    repo = RepoBuilder(root)
    repo.commit({"src/core.py": "x = 1\n", "src/api.py": "y = 2\n", "tests/test_api.py": ""})
    for i in range(rounds):
        repo.touch("src/core.py", "src/api.py")
        repo.touch("src/api.py", "tests/test_api.py")
        if i % 3 == 0:
            repo.touch("README.md", "src/core.py")
    return root


def test_cochange_lab_on_two_tiny_repositories(tmp_path: Path) -> None:
    first = tiny_history(tmp_path / "one", 12)
    second = tiny_history(tmp_path / "two", 10)
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--dev", str(first), str(second), "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["dataset"] == "cochange-lab"
    assert [fold["held_out"] for fold in result["folds"]] == ["one", "two"]
    assert result["chosen"]["label"] in result["configs"]
    for name in ("one", "two"):
        row = result["dev"][name]
        assert 0.0 < row["rose"]["map"] <= 1.0 and 0.0 < row["engram"]["map"] <= 1.0
        assert row["map_ratio"] > 0
