"""Smoke test of scripts/bench/mcp_pinned_files.py on a tiny repository (times not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import git

ROOT = Path(__file__).resolve().parents[2]


def test_the_pinning_bench_counts_the_files_of_each_case(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    for name in ("srv.py", "a.py", "tools/srv.py", "tools/helper.py"):
        (repo / name).write_text("x = 1\n")
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "add", ".")
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/mcp_pinned_files.py"), str(repo), "srv.py",
         "tools/srv.py", "--runs", "1"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["root"]["files"] == 4 and figures["folder"]["files"] == 2, figures
