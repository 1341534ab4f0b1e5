"""Smoke run of scripts/bench/scale.py on a tiny workspace assembled from two tiny mirrors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import git

ROOT = Path(__file__).resolve().parents[2]


def mirror(tmp: Path, name: str, files: dict[str, str], commits: int) -> Path:
    """A bare git directory like the fetch tool's ``<owner>+<name>/repo``."""
    work = tmp / f"{name}-work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    for n in range(commits):
        for rel, text in files.items():
            path = work / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.replace("N", str(n)))
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", f"change {n}")
    bare = tmp / name / "repo"
    bare.parent.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return bare


@pytest.mark.timeout(1200)  # ten child processes (index, LSP, embedding) on a shared machine
def test_scale_bench_smoke(tmp_path: Path) -> None:
    py = mirror(tmp_path, "owner+pyproj", {
        "pkg/__init__.py": "",
        "pkg/core.py": "def charge(x):\n    return x + N\n\n\nclass Account:\n    pass\n",
        "pkg/api.py": "from pkg.core import charge\n\n\ndef pay(x):\n    return charge(x)\n",
    }, 3)  # fmt: skip
    js = mirror(tmp_path, "owner+jsproj", {
        "src/a.js": "import { b } from './b.js';\nexport function a() { return b() + N; }\n",
        "src/b.js": "export function b() { return N; }\n",
        "cmd/main.go": "package main\n\nfunc main() { _ = N }\n",
    }, 2)  # fmt: skip
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/scale.py"), "--workspace",
         str(tmp_path / "ws"), "--mirror", str(py), "--mirror", str(js), "--min-files", "5",
         "--memories", "300", "--edits", "4", "--impacts", "10", "--hovers", "5",
         "--embed-seconds", "300", "--embed-sample", "3", "--kill-fraction", "0.2"],
        capture_output=True, text=True, timeout=1150, check=False,
        # parse workers even for six files: the setting reaches the measured children, and
        # their CPU is counted in the cold index's
        env={**os.environ, "ENGRAM_INDEX__WORKERS": "1", "ENGRAM_INDEX__WORKERS_MIN_FILES": "1"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["workspace"]["source_files"] == 6
    assert result["workspace"]["projects"] == {"owner+pyproj": 3, "owner+jsproj": 3}
    assert result["bare_tree_sitter"]["files"] == 6
    cold = result["cold_index"]
    assert cold["code"] == 0 and cold["files_indexed"] == 6 and cold["peak_rss_mb"] > 0
    assert cold["tree_peak_rss_mb"] > 0  # the whole process tree's, sampled
    assert cold["workers"] == 1 and cold["graph_cpu_seconds"] > cold["worker_cpu_seconds"] > 0
    # the ratio is computed from the two timings (six files: at load 12 a worker's start-up
    # made it round to 0.0, so its size says nothing here; the CI log of ba894cc)
    bare = result["bare_tree_sitter"]
    assert bare["seconds"] > 0 and cold["graph_seconds"] > 0
    assert result["graph_vs_bare"] == round(bare["seconds"] / cold["graph_seconds"], 3)
    # the index ran in the measured process, not in a detached engine it never sees
    assert cold["cpu_seconds"] >= cold["graph_cpu_seconds"] > 0, cold
    interrupted = result["interrupted"]
    assert interrupted["files_in_graph_after"] == 6
    assert interrupted["total_cpu_seconds"] >= interrupted["resume_cpu_seconds"] > 0
    history = result["history"]
    assert "error" not in history and history["cpu_seconds"] > 0, history
    assert history["report"]["commits"] == 5, history  # 3 + 2, mined from nothing
    assert result["memories"]["memories"] == 300
    # mirrored like memories written through the engine: what a server shows before ready
    assert result["memories"]["digest_memories"] == 300
    latency = result["latency"]
    assert latency["incremental_p95_ms"] > 0 and latency["impact_p95_ms"] > 0
    assert latency["incremental_shift_p95_ms"] > 0 and latency["impact_cpu_p95_ms"] > 0
    embedding = result["embedding"]
    assert embedding["sample_files"] == 3 and embedding["sample_chunks"] > 0, embedding
    assert embedding["embedded_after_second"] == embedding["sample_chunks"], embedding
    assert embedding["second_run"]["model"], embedding
    lsp = result["lsp"]
    assert "error" not in lsp, lsp
    assert lsp["initialize_s"] > 0 and lsp["file"].endswith(".py")
    # hovers wait for the folder to be ready and land on defined names: the 58k run
    # hovered 0.5 s after didOpen, before ready, and no hover had content
    assert lsp["ready_s"] is not None and lsp["ready_s"] > 0, lsp
    assert lsp["diagnostics"] > 0 and lsp["hovers_with_content"] == 5, lsp
    # every publish for the file is kept; the first is the one counted above, and each
    # carries what the default policy shows of the file's memories (the file is picked
    # by those: the loader gives a file only a few memory types, some never diagnostics)
    assert lsp["publishes"][0][1] == lsp["diagnostics"], lsp
    assert all(n == lsp["expected_diagnostics"] for _, n in lsp["publishes"]), lsp
    # the default set-up: a thin server linked to the workspace engine, measured apart
    served = result["lsp_engine"]
    assert "error" not in served, served
    assert served["diagnostics"] > 0 and served["hovers_with_content"] == 5, served
    assert served["engine_pid"] and served["engine_peak_rss_mb"] > 0, served
    assert set(result["goals"]) == {"index_vs_bare", "index_vs_bare_cpu", "index_rss_mb",
                                    "incremental_p95_ms", "impact_p95_ms"}  # fmt: skip
    assert result["bare_tree_sitter"]["cpu_seconds"] > 0 and cold["graph_cpu_seconds"] > 0
    assert result["bare_tree_sitter"]["combined_cpu_seconds"] > 0
    assert result["graph_vs_bare_combined_cpu"] == round(
        result["bare_tree_sitter"]["combined_cpu_seconds"] / cold["graph_cpu_seconds"], 3
    )
    assert "load_avg_1m" in cold


def test_scale_bench_resumes_from_its_results_file(tmp_path: Path) -> None:
    """A run cut into pieces: phases already in ``--results`` are not run again, and the
    ratios are computed from the stored figures (wall and CPU seconds)."""
    results = tmp_path / "scale.json"
    done = {
        "workspace": {"reused": True, "source_files": 6},
        "bare_tree_sitter": {"seconds": 10.0, "cpu_seconds": 8.0, "files": 6,
                             "combined_cpu_seconds": 6.0},
        "cold_index": {"seconds": 40.0, "cpu_seconds": 20.0, "graph_seconds": 20.0,
                       "graph_cpu_seconds": 9.0, "peak_rss_mb": 300.0},
        "latency": {"incremental_p95_ms": 12.0, "impact_p95_ms": 3.0},
    }  # fmt: skip
    results.write_text(json.dumps(done))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/scale.py"), "--workspace",
         str(tmp_path / "absent"), "--results", str(results),
         "--only", "bare_tree_sitter,cold_index,latency"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not (tmp_path / "absent").exists()  # nothing assembled, nothing run
    assert result["graph_vs_bare"] == 0.5 and result["graph_vs_bare_cpu"] == 0.889
    assert result["index_vs_bare_cpu"] == 0.4
    assert result["graph_vs_bare_combined_cpu"] == 0.667  # reported, not a goal
    assert result["index_vs_bare"] == 0.25  # the whole command: 10 s bare, 40 s index
    assert result["goals"] == {"index_vs_bare": False, "index_vs_bare_cpu": False,
                               "index_rss_mb": True, "incremental_p95_ms": True,
                               "impact_p95_ms": True}  # fmt: skip
    stored = json.loads(results.read_text())
    assert stored["bare_tree_sitter"] == done["bare_tree_sitter"]
    assert stored["goals"] == result["goals"]


def test_a_large_index_summary_reaches_the_bench_whole() -> None:
    """The 58k-file run lost its cold-index figures: ``engram index --json`` printed a
    summary longer than the 200,000 characters the RSS wrapper kept, so the bench read a
    JSON fragment and stopped. The wrapper now passes the child's output on whole."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("scale_bench", ROOT / "scripts/bench/scale.py")
    assert spec is not None and spec.loader is not None
    scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scale)
    child = "import json; print(json.dumps({'notes': ['x' * 99] * 3000, 'ok': 1}, indent=1))"
    info = scale.peak_rss_of([sys.executable, "-c", child], dict(os.environ))
    assert info["code"] == 0 and info["peak_rss_mb"] > 0
    summary = json.loads(info["stdout"])
    assert summary["ok"] == 1 and len(summary["notes"]) == 3000


def test_the_tree_peak_counts_every_process_of_the_tree() -> None:
    """A child that starts a grandchild, each holding ~80 MB at once: the largest single
    process's peak (``ru_maxrss``, what the bench reported alone before parse workers)
    sees one of them, the sampled tree peak both."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("proctree", ROOT / "scripts/bench/proctree.py")
    assert spec is not None and spec.loader is not None
    proctree = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(proctree)
    hold = "import time; b = bytearray(80 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
    grandchild = hold + "time.sleep(2.5)"
    child = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', {grandchild!r}]); " + hold + "p.wait()"
    )
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/proctree.py"), "run", "--",
         sys.executable, "-c", child],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert info["code"] == 0 and info["cpu_seconds"] > 0
    assert 80 <= info["peak_rss_mb"] < 150  # one process: ~80 MB plus an interpreter
    assert info["tree_peak_rss_mb"] >= 160, info  # both at once
    assert proctree.tree_rss_kb(os.getpid()) > 0
