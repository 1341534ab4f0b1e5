"""Smoke test of scripts/eval/cochange.py on a tiny synthetic history, plus its metrics."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from tests.history.conftest import RepoBuilder

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "eval" / "cochange.py"
METRICS = {"hit@1", "hit@3", "hit@5", "hit@10", "recall@10", "map"}


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cochange_eval", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_metrics_arithmetic() -> None:
    score = load_script().score_ranking
    perfect = score(["a", "b"], {"a", "b"})
    assert perfect == {
        "hit@1": 1.0, "hit@3": 1.0, "hit@5": 1.0, "hit@10": 1.0, "recall@10": 1.0, "map": 1.0,
    }  # fmt: skip
    second = score(["x", "a", "y", "b"], {"a", "b", "c"})
    assert second["hit@1"] == 0.0 and second["hit@3"] == 1.0
    assert second["recall@10"] == pytest.approx(2 / 3)
    assert second["map"] == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert score([], {"a"})["hit@10"] == 0.0


def test_cochange_script_on_a_tiny_repo(repo: RepoBuilder, tmp_path: Path) -> None:
    repo.commit(
        {
            "app/models.py": "class User:\n    pass\n",
            "app/views.py": "from app.models import User\n",
            "app/util.py": "def helper():\n    return 1\n",
            "tests/test_views.py": "from app.views import *\n",
        },
        "initial",
    )
    for _ in range(6):
        repo.touch("app/models.py", "app/views.py")
        repo.touch("app/views.py", "tests/test_views.py")
        repo.touch("app/util.py")
    for _ in range(2):
        repo.touch("app/models.py", "app/views.py", "tests/test_views.py")
        repo.touch("app/util.py", "app/models.py")
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--repo", str(repo.root), "--json", "--max-commits", "10"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(result) == {"dataset", "items", "rows"}
    assert result["dataset"] == "repo"
    assert set(result["rows"]) == {"engram", "rose", "imports"}
    for metrics in result["rows"].values():
        assert set(metrics) == METRICS
        assert all(0.0 <= value <= 1.0 for value in metrics.values())
    assert result["items"] > 0  # the last 20% holds multi-file commits of known files
    # models.py and views.py co-change in training: ROSE gets those right at rank 1
    assert result["rows"]["rose"]["hit@1"] > 0.5
    # the repository was only read
    assert (
        subprocess.run(
            ["git", "status", "--porcelain"], cwd=repo.root, capture_output=True, text=True
        ).stdout
        == ""
    )


def test_cochange_script_refuses_a_non_repository(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--repo", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert "not a git repository" in out.stderr
