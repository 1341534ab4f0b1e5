"""Smoke test of scripts/eval/cochange_lab.py (feature choice by leave-one-repository-out)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
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
    assert "today's default" in result["configs"]
    # the default changes only when the selection's held-out mean beats it
    assert result["adopt"] == (result["fold_ratio_mean"] > result["default_ratio_mean"])
    for name in ("one", "two"):
        row = result["dev"][name]
        assert 0.0 < row["rose"]["map"] <= 1.0 and 0.0 < row["engram"]["map"] <= 1.0
        assert row["map_ratio"] > 0


def lab_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cochange_lab", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_boosted_stumps_learn_what_the_linear_scores_miss() -> None:
    lab = lab_module()
    # the true partner is the one whose feature sits in the middle: no linear weight on
    # the feature ranks it first in every query, a threshold pair does
    groups = []
    for far in range(20):
        x = np.asarray([[0.0], [5.0], [10.0 + far]])
        groups.append((x, np.asarray([0.0, 1.0, 0.0])))
    base = [np.zeros(3) for _ in groups]
    stumps = lab.fit_stumps(groups, base, 50)
    assert stumps
    for x, y in groups:
        scores = lab._apply_stumps(stumps, x)
        assert int(np.argmax(scores)) == int(np.argmax(y))


def test_rank_fusion_moves_towards_roses_order() -> None:
    lab = lab_module()
    model_scores = np.asarray([3.0, 2.0, 1.0])
    support = [1, 2, 9]
    alone = lab._fused(model_scores, support, 0.0)
    rose = lab._fused(model_scores, support, 1.0)
    assert alone[0] > alone[1] > alone[2]
    assert rose[2] > rose[1] > rose[0]
