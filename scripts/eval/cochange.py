#!/usr/bin/env python3
"""Co-change prediction on a git history: ROSE rules, the import graph, and Engram's ranking.

Protocol (SPEC.md "Measuring"): take the repository's non-merge commits in date order
(``git log --no-merges --date-order``, ancestors of ``--rev``), train on the first 80%. For
each later commit that touches 2–30 files (the first ``--max-commits`` of them), query every
one of its files that existed at the split commit and rank the other files; the commit's
other files are the truth. Rows, all in one run:

* ``rose``    — association rules mined from the training commits only (Zimmermann et al.,
  ICSE 2004): ``GitHistory.ingest`` + ``cochange_partners``, ranked by confidence.
* ``imports`` — the code graph alone, built with ``engram.codegraph.build_graph_at`` on the
  tree of the split commit (``git archive`` into a temp dir; the repository is not touched),
  files ranked by graph proximity (``CodeGraph.neighbours`` depth 2, best weight first).
* ``engram``  — ``engram.codegraph.rank_related_files`` over that graph with the product's
  co-change ranking trained on the same commits (weights learned from the training
  commits alone, ``engram.history.cochange_model``): what ``engram impact`` ranks.
* ``engram_proposed`` (only with ``--proposed``) — ``GitHistory.rank_with_prior`` with the
  graph as prior: co-change smoothed toward graph proximity and change rate, the ranking
  proposed for ``engram impact``.

Metrics per query over the top 10: ``hit@k`` (a correct file in the top k), ``recall@10``
(share of the truth in the top 10), ``map`` (average precision over the top 10, divided by
min(|truth|, 10)); averaged over queries. The anchor: ROSE found 26% of the further files and
its top 3 held a correct one 64% of the time.

Usage: scripts/eval/cochange.py --repo /work/repos/flask --json [--max-commits 300]
Last stdout line: {"dataset": "flask", "items": N,
                   "rows": {"engram": {...}, "rose": {...}, "imports": {...}}}
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("cochange")

K = 10
HIT_KS = (1, 3, 5, 10)
ROWS = ("engram", "rose", "imports")


def git_bytes(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True).stdout


def load_commits(repo: Path, rev: str) -> list[Any]:
    """All non-merge commits reachable from ``rev``, oldest first, with their changed files."""
    import git  # GitPython opens the repository; one streamed `git log` does the mining

    from engram.history import parse_log
    from engram.history.gitlog import LOG_ARGS, LOG_FORMAT

    handle = git.Repo(repo)
    raw = handle.git.execute(
        ["git", *LOG_ARGS, f"--format={LOG_FORMAT}", rev, "--"],
        stdout_as_string=False,
        strip_newline_in_stdout=False,
    )
    handle.close()
    return list(parse_log([raw]))


def files_at(repo: Path, sha: str) -> set[str]:
    out = git_bytes(repo, "ls-tree", "-r", "-z", "--name-only", sha)
    return {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}


def export_tree(repo: Path, sha: str, dest: Path) -> None:
    """The tree at ``sha`` as plain files in ``dest`` (git archive: the repo stays untouched)."""
    proc = subprocess.Popen(["git", "archive", "--format=tar", sha], cwd=repo,
                            stdout=subprocess.PIPE)  # fmt: skip
    assert proc.stdout is not None
    with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
        tar.extractall(dest, filter="data")
    if proc.wait() != 0:
        raise RuntimeError(f"git archive {sha} failed")


def score_ranking(ranked: Sequence[str], truth: set[str]) -> dict[str, float]:
    top = list(dict.fromkeys(ranked))[:K]
    out: dict[str, float] = {}
    for k in HIT_KS:
        out[f"hit@{k}"] = 1.0 if any(f in truth for f in top[:k]) else 0.0
    found = [i for i, f in enumerate(top) if f in truth]
    out["recall@10"] = len(found) / len(truth)
    precision_sum = sum((n + 1) / (i + 1) for n, i in enumerate(found))
    out["map"] = precision_sum / min(len(truth), K)
    return out


def average(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = [f"hit@{k}" for k in HIT_KS] + ["recall@10", "map"]
    if not rows:
        return dict.fromkeys(keys, 0.0)
    return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in keys}


def structure_prior(graph: Any, target: str) -> dict[str, float]:
    """Graph evidence for ``GitHistory.rank_with_prior`` (the proposed impact ranking).

    Dependents (depth ≤ 2, halved per level), direct neighbours (×0.8) and test/source
    naming partners (1.0), normalised to the best one.
    """
    from engram.codegraph.impact import naming_partners

    found: dict[str, float] = {}
    for file, depth, weight, _path in graph.dependents(target, max_depth=2):
        found[file] = max(found.get(file, 0.0), weight * 0.5 ** (depth - 1))
    for file, weight in graph.neighbours([target], depth=1).items():
        found[file] = max(found.get(file, 0.0), 0.8 * weight)
    for file in naming_partners(target, graph):
        found[file] = 1.0
    found.pop(target, None)
    best = max(found.values(), default=0.0)
    return {f: w / best for f, w in found.items()} if best > 0 else {}


def evaluate(
    repo: Path,
    *,
    rev: str = "HEAD",
    train_fraction: float = 0.8,
    max_commits: int | None = None,
    min_files: int = 2,
    max_files: int = 30,
    with_graph: bool = True,
    proposed: bool = False,
    half_life: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    from engram.history import GitHistory, HistoryConfig
    from engram.workspace import Workspace

    say = progress or (lambda _msg: None)
    timings: dict[str, float] = {}
    started = time.monotonic()
    commits = load_commits(repo, rev)
    if len(commits) < 5:
        raise SystemExit(f"{repo}: too little history ({len(commits)} non-merge commits)")
    split = max(1, int(len(commits) * train_fraction))
    train, test = commits[:split], commits[split:]
    split_sha = train[-1].sha
    existing = files_at(repo, split_sha)
    test = [c for c in test if min_files <= len(c.paths) <= max_files]
    if max_commits is not None:
        test = test[:max_commits]
    timings["load_s"] = time.monotonic() - started
    say(f"{len(commits)} commits; train {len(train)}, test {len(test)}; split {split_sha[:10]}")

    with tempfile.TemporaryDirectory(prefix="engram-cochange-") as tmp:
        tmp_path = Path(tmp)
        t0 = time.monotonic()
        # the baseline is plain ROSE; Engram's ranking gets the product's co-change model
        rose = GitHistory(
            Workspace.open(repo),
            HistoryConfig(max_files_per_commit=max_files, auto_mine=False, recency_half_life=None),
            db_path=tmp_path / "rose.sqlite",
        )
        rose.ingest(train)
        product = HistoryConfig(max_files_per_commit=max_files, auto_mine=False)
        if half_life is not None:
            product.recency_half_life = half_life if half_life > 0 else None
        history = GitHistory(
            Workspace.open(repo),
            product,
            db_path=tmp_path / "history.sqlite",
        )
        history.ingest(train)
        timings["train_s"] = time.monotonic() - t0

        graph: Any = None
        if with_graph:
            from engram.codegraph import build_graph_at

            t0 = time.monotonic()
            tree = tmp_path / "tree"
            tree.mkdir()
            export_tree(repo, split_sha, tree)
            graph = build_graph_at(tree, tmp_path / "graph.sqlite")
            timings["graph_s"] = time.monotonic() - t0
            say(f"graph at split built in {timings['graph_s']:.1f}s")

        from engram.codegraph import rank_related_files

        if graph is not None:
            from engram.codegraph.impact import structure_prior as graph_evidence

            # the product fits its ranking during `engram index`; timed here on its own
            t0 = time.monotonic()
            history.cochange_model(structure_of=lambda f: graph_evidence(f, graph))
            timings["fit_s"] = time.monotonic() - t0

        rows = (*ROWS, "engram_proposed") if proposed and graph is not None else ROWS
        scores: dict[str, list[dict[str, float]]] = {row: [] for row in rows}
        t0 = time.monotonic()
        for commit in test:
            changed = commit.paths
            for query in changed:
                if query not in existing:
                    continue
                truth = set(changed) - {query}
                partners = rose.cochange_partners(query, k=K)
                scores["rose"].append(score_ranking([p for p, _, _ in partners], truth))
                if graph is not None:
                    near = graph.neighbours([query], depth=2)
                    by_weight = sorted(near.items(), key=lambda kv: (-kv[1], kv[0]))
                    scores["imports"].append(score_ranking([f for f, _ in by_weight], truth))
                    combined = rank_related_files(query, graph, history, k=K, ranking=history)
                    scores["engram"].append(score_ranking([f for f, _ in combined], truth))
                    if "engram_proposed" in scores:
                        prior = structure_prior(graph, query)
                        blended = history.rank_with_prior(query, prior, k=K)
                        ranked = [f for f, _, _ in blended]
                        scores["engram_proposed"].append(score_ranking(ranked, truth))
                else:
                    empty = score_ranking([], truth)
                    scores["imports"].append(empty)
                    own = history.cochange_partners(query, k=K)
                    scores["engram"].append(score_ranking([p for p, _, _ in own], truth))
        timings["query_s"] = time.monotonic() - t0
        history.close()
        rose.close()
        if graph is not None:
            graph.close()

    items = len(scores["rose"])
    say("timings " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    return {
        "dataset": repo.resolve().name,
        "items": items,
        "rows": {row: average(scores[row]) for row in rows},
        "_meta": {
            "commits": len(commits),
            "train_commits": len(train),
            "test_commits": len(test),
            "split": split_sha,
            "seconds": {k: round(v, 2) for k, v in timings.items()},
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a git repository (read only)")
    parser.add_argument("--rev", default="HEAD", help="evaluate history up to this revision")
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    parser.add_argument(
        "--max-commits",
        type=int,
        default=None,
        help="evaluate only the first N qualifying commits after the split",
    )
    parser.add_argument("--train-fraction", type=float, default=0.8)
    parser.add_argument(
        "--no-graph",
        action="store_true",
        help="skip the code graph (imports row empty, engram = co-change only)",
    )
    parser.add_argument(
        "--proposed",
        action="store_true",
        help="add a row for the proposed ranking (GitHistory.rank_with_prior + graph prior)",
    )
    parser.add_argument(
        "--half-life",
        type=float,
        default=None,
        help="recency half-life in commits for Engram's co-change model (0: off; "
        "default: the product default)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    repo = args.repo.expanduser()
    if not (repo / ".git").exists() and not (repo / "HEAD").exists():
        print(f"error: {repo} is not a git repository", file=sys.stderr)
        return 2
    result = evaluate(
        repo,
        rev=args.rev,
        train_fraction=args.train_fraction,
        max_commits=args.max_commits,
        with_graph=not args.no_graph,
        proposed=args.proposed,
        half_life=args.half_life,
        progress=lambda msg: print(msg, file=sys.stderr),
    )
    meta = result.pop("_meta")
    print(json.dumps(meta), file=sys.stderr)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['dataset']}: {result['items']} queries")
        for row, metrics in result["rows"].items():
            print(f"  {row:8} " + "  ".join(f"{k} {v:.3f}" for k, v in metrics.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
