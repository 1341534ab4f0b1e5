#!/usr/bin/env python3
"""Choose the contradiction judges' gate and the NLI threshold by cross-validation on dev.

The rules decide alone what they can; the pairs they leave open reach the NLI judge only
through a gate (``ContradictionJudges``: ``min_overlap``, ``subject_cosine``,
``require_cue``) and count when the model's score is at least its ``threshold``. This script
picks those four on the **dev** part of the public pairs only (docs/lifecycle.md):

* a grid of candidate settings (the one before included);
* repeated stratified k-fold CV on dev: on each training part the setting with the highest
  recall at precision >= ``--min-precision`` is chosen (ties: precision, then the setting
  before this CV), and scored on the left-out part; the mean and sd of the test parts are
  reported;
* the setting chosen on the whole of dev, and (``--heldout``) its score on the held-out part,
  computed once with that setting and never used to choose anything; held-out figures are
  broken down by source category only.

NLI scores are computed once per pair and cached, so the grid costs only the rules.

* ``--dev-also FILE`` (repeatable): every pair of another file joins dev (a set that was
  scored once and looked at is development data from then on: the fresh set after the
  fourth pass); the folds are drawn over all of dev, and ``dev_full`` is also given per file.

* ``--fresh FILE``: every pair of another frozen file (the fresh unseen set,
  ``contradiction_fresh_pairs.jsonl``), scored the same way, once the rule is fixed.

* ``--fix-grid``: with the gate as shipped, every on/off combination of the readings of edits
  that change no claim (``FIXES``, docs/lifecycle.md eighth pass); ``dev_cv.today`` is the
  detector as shipped on the same folds, ``fixes_picked`` how many training parts turned
  each reading on.

* ``--grouped``: folds by repository (``--folds 0``: leave one repository out), so a test
  fold holds only repositories its training part never saw: folds that share repositories
  and phrasings estimated 0.99 recall where an unseen set gave 0.56 (docs/lifecycle.md,
  sixth pass). ``pooled`` scores every pair once, with the setting its training part chose.
  ``--public-all``: FILE's held-out part joins dev (it is spent).

Usage: scripts/eval/contradictions_cv.py [FILE] [--folds 5] [--repeats 5] [--heldout]
       [--dev-also FILE ...] [--fresh FILE] [--grouped] [--fix-grid] [--public-all] [--no-model]
       [--mirrors DIR] [--json]
Last stdout line: {"dev_cv": {...}, "chosen": {...}, "dev_full": {...}, "heldout": {...},
"fresh": {...}}
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import contradictions as base

PUBLIC = base.ROOT / "tests" / "lifecycle" / "data" / "contradiction_public_pairs.jsonl"

THRESHOLDS = (0.95, 0.97, 0.98, 0.99, 0.993, 0.995, 0.997, 1.01)  # 1.01: NLI off
MIN_OVERLAPS = (0.0, 0.15, 0.25, 0.35)
SUBJECT_COSINES = (0.5, 0.6, 0.7, 1.01)  # 1.01: identifiers and symbols only
REQUIRE_CUE = (True, False)
#: the edit reader's reach (``--edit-grid``): other words an edit may change around the
#: swapped values, and whether a word swapped for its opposite is a swapped value
EDIT_EXTRA = (0, 2, 4, 8)
EDIT_OPPOSITES = (False, True)
EDIT_SLOTS = (False, True)
#: the smaller gate grid searched together with the edit reader's settings. The flip cue
#: stays required: without it the NLI judge reads twice the pairs (47 instead of 24 of 60
#: remembers in scripts/bench/remember_contradictions.py --model), a p95 cost the budget
#: does not allow; --no-cue-too searches it anyway (docs/lifecycle.md, sixth pass)
EDIT_GRID_GATES = ((0.98, 0.99, 0.993, 0.995, 1.01), (0.0, 0.25), (0.5, 0.6, 1.01), (True,))
#: the readings of edits that change no claim (eighth pass, ``--fix-grid``): each on or off
#: (fields of ``engram.lifecycle.contradictions.Readings`` of the same names)
FIXES = (
    "spelling_fixes", "same_literals", "quoted_names", "hyphenated_names",
    "value_lists", "only_added",
)  # fmt: skip
#: the readings of values no reader recognised (ninth pass, ``--recall-grid``): each on or
#: off, with the eighth pass's readings as shipped; ``edit_opposites`` (sixth pass, off) is
#: searched again with them, since held-out 5's and 6's misses hold "before" / "after" swaps
RECALLS = (
    "named_versions", "prereleases", "distinct_empties", "same_units", "short_slots",
    "name_slots", "opposite_parts", "path_values", "issue_refs", "edit_opposites",
)  # fmt: skip
#: the ``Readings`` fields ``predict`` builds from a setting (key: field name)
FIELDS = {"edit_extra": "edit_extra_tokens", "edit_opposites": "edit_opposites",
          "edit_slots": "edit_slots"} | {fix: fix for fix in FIXES + RECALLS}  # fmt: skip
#: the setting before this CV (issue 12, second pass): ties go to it
BEFORE = {
    "threshold": 0.993, "min_overlap": 0.25, "subject_cosine": 0.6, "require_cue": True,
    "edit_extra": 0, "edit_opposites": False, "edit_slots": False,
} | dict.fromkeys(FIXES, False)  # fmt: skip


def defaults() -> dict[str, Any]:
    """The setting Engram ships now (``ContradictionJudges`` and the NLI threshold)."""
    from engram.lifecycle.contradictions import ContradictionJudges
    from engram.lifecycle.nli import DEFAULT_THRESHOLD

    judges = ContradictionJudges()
    return {"threshold": DEFAULT_THRESHOLD, "min_overlap": judges.min_overlap,
            "subject_cosine": judges.subject_cosine, "require_cue": judges.require_cue} | {
            key: getattr(judges.readings, name) for key, name in FIELDS.items()}  # fmt: skip


class CachedNli:
    """The NLI judge's scores, computed once per pair, with a threshold of the grid's."""

    def __init__(self, judge: Any, cache: dict[tuple[str, str], float], threshold: float) -> None:
        self.judge = judge
        self.cache = cache
        self.threshold = threshold

    def contradiction(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        todo = [p for p in pairs if p not in self.cache]
        if todo:
            for pair, score in zip(todo, self.judge.contradiction(todo), strict=True):
                self.cache[pair] = float(score)
        return [self.cache[p] for p in pairs]


def predict(rows: list[dict[str, Any]], cosines: list[float | None], setting: dict[str, Any],
            nli: Any, cache: dict[tuple[str, str], float]) -> list[bool]:  # fmt: skip
    """What the detector says on each row with ``setting`` (the gate, the threshold and the
    readings; a reading the setting leaves out stays as shipped). The readings are a value
    the judges carry, part of every cached reader's key: nothing to set or clear."""
    from engram.lifecycle.contradictions import ContradictionJudges, Readings, find_contradictions
    from engram.model import Memory, MemoryType

    shipped = Readings()
    readings = Readings(**{
        name: setting.get(key, getattr(shipped, name)) for key, name in FIELDS.items()
    })  # fmt: skip
    judge = None if nli is None else CachedNli(nli, cache, setting["threshold"])
    judges = ContradictionJudges(
        nli=judge,  # type: ignore[arg-type]
        min_overlap=setting["min_overlap"],
        subject_cosine=setting["subject_cosine"],
        require_cue=setting["require_cue"],
        readings=readings,
    )
    out = []
    for row, cosine in zip(rows, cosines, strict=True):
        old = Memory(row["a"], type=MemoryType.GOTCHA)
        new = Memory(row["b"], type=MemoryType.GOTCHA)
        out.append(bool(find_contradictions(new, [(old, cosine)], judges=judges)))
    return out


def choose(table: dict[int, list[bool]], settings: list[dict[str, Any]], labels: list[bool],
           index: list[int], min_precision: float) -> int:  # fmt: skip
    """The setting with the best recall at precision >= min_precision on ``index``."""
    gold = [labels[i] for i in index]
    best: tuple[Any, ...] | None = None
    pick = 0
    for k, setting in enumerate(settings):
        s = base.scores([table[k][i] for i in index], gold)
        key = (
            s["precision"] >= min_precision,
            s["recall"] if s["precision"] >= min_precision else s["precision"],
            s["precision"],
            setting == BEFORE,
            -sum(bool(setting.get(fix)) for fix in FIXES + RECALLS),  # fewer readings on
        )
        if best is None or key > best:
            best, pick = key, k
    return pick


def folds(labels: list[bool], k: int, rng: random.Random) -> list[list[int]]:
    """Stratified: each fold gets its share of contradictions and of look-alikes."""
    parts: list[list[int]] = [[] for _ in range(k)]
    for value in (True, False):
        idx = [i for i, y in enumerate(labels) if y is value]
        rng.shuffle(idx)
        for j, i in enumerate(idx):
            parts[j % k].append(i)
    return parts


def grouped_folds(groups: list[str], k: int, rng: random.Random) -> list[list[int]]:
    """Folds by repository: every pair of one repository in one fold, so a test fold holds
    only repositories the training part never saw (``k`` <= 0: one fold a repository)."""
    members: dict[str, list[int]] = {}
    for i, group in enumerate(groups):
        members.setdefault(group, []).append(i)
    names = sorted(members)
    if k <= 0 or k >= len(names):
        return [members[name] for name in names]
    rng.shuffle(names)
    parts: list[list[int]] = [[] for _ in range(k)]
    for name in sorted(names, key=lambda n: -len(members[n])):  # stable: shuffled ties
        smallest = min(range(k), key=lambda j: len(parts[j]))
        parts[smallest].extend(members[name])
    return parts


def cosine_reader(
    no_model: bool,
) -> tuple[Callable[[list[dict[str, Any]]], list[float | None]], bool]:
    """The embedding cosine of each pair's two texts (None each without the default model),
    as the subject gate reads it, and whether the model loaded; shared with
    ``contradiction_combine.py``."""
    embedder: Any = None
    if not no_model:
        from engram.config import EmbedConfig
        from engram.embed import load_embedder

        embedder = load_embedder(EmbedConfig(), None).embedder

    def cosines_of(rows: list[dict[str, Any]]) -> list[float | None]:
        if embedder is None:
            return [None] * len(rows)
        vectors = embedder.embed([t for r in rows for t in (r["a"], r["b"])])
        return [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(rows))]

    return cosines_of, embedder is not None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", type=Path, default=PUBLIC)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--min-precision", type=float, default=0.9)
    parser.add_argument("--heldout", action="store_true", help="score the chosen setting once")
    parser.add_argument(
        "--dev-also", type=Path, action="append", default=[], help="more dev pairs (all rows)"
    )
    parser.add_argument("--fresh", type=Path, help="another pair file to score once")
    parser.add_argument(
        "--grouped",
        action="store_true",
        help="folds by repository (--folds 0: leave one repository out); pooled figures too",
    )
    parser.add_argument(
        "--edit-grid",
        action="store_true",
        help="search the edit reader's reach too (a smaller gate grid); else it stays as shipped",
    )
    parser.add_argument(
        "--fix-grid",
        action="store_true",
        help="search which readings of look-alike edits to turn on (the gate as shipped)",
    )
    parser.add_argument(
        "--recall-grid",
        action="store_true",
        help="search which readings of unrecognised values to turn on (the rest as shipped)",
    )
    parser.add_argument(
        "--no-cue-too",
        action="store_true",
        help="with --edit-grid: also settings that send pairs without a flip cue to the NLI",
    )
    parser.add_argument(
        "--public-all", action="store_true", help="FILE's held-out part is dev too (spent)"
    )
    parser.add_argument("--no-model", action="store_true", help="no embeddings (no cosines)")
    parser.add_argument("--no-nli", action="store_true", help="the gate only matters with NLI")
    parser.add_argument("--mirrors", type=Path, default=base.DEFAULT_MIRRORS)
    parser.add_argument(
        "--nli-cache", type=Path, help="a JSON file keeping the NLI scores between runs"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from engram.lifecycle.nli import load_nli

    dev = base.load(args.file, "all" if args.public_all else "dev", args.mirrors)
    origin = [args.file.stem] * len(dev)
    for extra in args.dev_also:
        more = base.load(extra, "all", args.mirrors)
        dev += more
        origin += [extra.stem] * len(more)
    nli = None if args.no_nli else load_nli(verify=True).judge
    cosines_of, has_model = cosine_reader(args.no_model)

    shipped = defaults()
    if args.edit_grid:
        settings = [
            {"threshold": t, "min_overlap": o, "subject_cosine": c, "require_cue": q}
            | {"edit_extra": e, "edit_opposites": p, "edit_slots": v}
            for t, o, c, q in itertools.product(
                *EDIT_GRID_GATES[:3], (True, False) if args.no_cue_too else EDIT_GRID_GATES[3]
            )
            for e, p, v in itertools.product(EDIT_EXTRA, EDIT_OPPOSITES, EDIT_SLOTS)
        ]
    elif args.recall_grid:
        # 2**10 combinations cost ~1 h on this machine: none, each alone, each left out of
        # all, all (the readings touch disjoint pairs on dev, so they hardly interact)
        choices = [frozenset(), frozenset(RECALLS)]
        choices += [frozenset({name}) for name in RECALLS]
        choices += [frozenset(RECALLS) - {name} for name in RECALLS]
        settings = [shipped | {name: name in on for name in RECALLS} for on in choices]
    elif args.fix_grid:
        settings = [
            shipped | dict(zip(FIXES, flags, strict=True))
            for flags in itertools.product((False, True), repeat=len(FIXES))
        ]
    else:
        settings = [
            {"threshold": t, "min_overlap": o, "subject_cosine": c, "require_cue": q}
            | {key: shipped[key] for key in ("edit_extra", "edit_opposites", "edit_slots")}
            | {fix: shipped[fix] for fix in FIXES + RECALLS}
            for t, o, c, q in itertools.product(
                THRESHOLDS, MIN_OVERLAPS, SUBJECT_COSINES, REQUIRE_CUE
            )
        ]
    for extra in (BEFORE, shipped):  # both always in the grid (the fix grid: today's gate)
        if extra not in settings and not ((args.fix_grid or args.recall_grid) and extra is BEFORE):
            settings.append(dict(extra))
    cache: dict[tuple[str, str], float] = {}
    if args.nli_cache is not None and args.nli_cache.is_file():
        cache = {(a, b): score for a, b, score in json.loads(args.nli_cache.read_text())}
    labels = [bool(r["conflict"]) for r in dev]
    dev_cos = cosines_of(dev)
    table = {k: predict(dev, dev_cos, s, nli, cache) for k, s in enumerate(settings)}

    rng = random.Random(12)
    tests: list[dict[str, float]] = []
    # the detector as shipped, on the same test folds: what a change must beat
    today = settings.index(shipped)
    tests_today: list[dict[str, float]] = []
    picked: list[int] = []
    pooled: list[dict[str, float]] = []
    groups = [str(r.get("repo") or "written") for r in dev]
    # leave-one-repository-out has one partition only: repeating it repeats the same folds
    repeats = 1 if args.grouped and args.folds <= 0 else args.repeats
    for _ in range(repeats):
        if args.grouped:
            parts = grouped_folds(groups, args.folds, rng)
        else:
            parts = folds(labels, args.folds, rng)
        out_of_fold = [False] * len(dev)
        for j, test in enumerate(parts):
            train = [i for p, part in enumerate(parts) if p != j for i in part]
            k = choose(table, settings, labels, train, args.min_precision)
            picked.append(k)
            tests.append(base.scores([table[k][i] for i in test], [labels[i] for i in test]))
            tests_today.append(
                base.scores([table[today][i] for i in test], [labels[i] for i in test])
            )
            for i in test:
                out_of_fold[i] = table[k][i]
        pooled.append(base.scores(out_of_fold, labels))

    def mean_sd(key: str, of: list[dict[str, float]] | None = None) -> dict[str, float]:
        values = [t[key] for t in (tests if of is None else of)]
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        return {"mean": round(statistics.mean(values), 3), "sd": round(sd, 3)}

    everything = list(range(len(dev)))
    chosen = choose(table, settings, labels, everything, args.min_precision)
    before = settings.index(shipped if args.fix_grid or args.recall_grid else BEFORE)
    summary: dict[str, Any] = {
        "dataset": args.file.stem,
        "dev_items": len(dev),
        "dev_conflicts": sum(labels),
        "nli": nli is not None,
        "cosine": has_model,
        "dev_cv": {
            "folds": len(tests) // repeats,
            "repeats": repeats,
            "grouped_by_repository": args.grouped,
            "repositories": len(set(groups)),
            "min_precision": args.min_precision,
            "precision": mean_sd("precision"),
            "recall": mean_sd("recall"),
            "f1": mean_sd("f1"),
            "settings_picked": len(set(picked)),
            # how many training parts turned each reading of look-alike edits on
            "fixes_picked": {fix: sum(bool(settings[k].get(fix)) for k in picked) for fix in FIXES},
            # and each reading of unrecognised values (``--recall-grid``)
            "recalls_picked": {
                name: sum(bool(settings[k].get(name)) for k in picked) for name in RECALLS
            },
            "today": {key: mean_sd(key, tests_today) for key in ("precision", "recall", "f1")},
            "before_picked": sum(k == before for k in picked),
            # every pair scored once, by the setting its own training part chose
            "pooled": {key: mean_sd(key, pooled) for key in ("precision", "recall", "f1")},
        },
        "chosen": settings[chosen],
        "chosen_is_the_default": settings[chosen] == defaults(),
        "dev_full": {
            "chosen": base.scores(table[chosen], labels),
            "before": base.scores(table[before], labels),
        },
    }
    if args.dev_also:
        summary["dev_files"] = [args.file.stem] + [f.stem for f in args.dev_also]
        # the last repeat's out-of-fold predictions, per file (held-out 3's pairs are the
        # only dev pairs no rule was written from)
        summary["dev_cv"]["pooled_per_file"] = {
            name: base.scores(
                [out_of_fold[i] for i in everything if origin[i] == name],
                [labels[i] for i in everything if origin[i] == name],
            )
            for name in summary["dev_files"]
        }
        summary["dev_full"]["per_file"] = {
            name: base.scores(
                [table[chosen][i] for i in everything if origin[i] == name],
                [labels[i] for i in everything if origin[i] == name],
            )
            for name in summary["dev_files"]
        }

    def score_once(rows: list[dict[str, Any]]) -> dict[str, Any]:
        """The chosen setting and the one before on ``rows``, by source category."""
        gold = [bool(r["conflict"]) for r in rows]
        row_cos = cosines_of(rows)
        result: dict[str, Any] = {"items": len(rows), "conflicts": sum(gold)}
        for name, setting in (
            ("chosen", settings[chosen]),
            ("before", BEFORE),
            ("shipped", shipped),
        ):
            pred = predict(rows, row_cos, setting, nli, cache)
            by_source: dict[str, dict[str, int]] = {}
            for row, p, y in zip(rows, pred, gold, strict=True):
                cell = by_source.setdefault(
                    str(row.get("source")), {"caught": 0, "missed": 0, "false_alarms": 0}
                )
                if y:
                    cell["caught" if p else "missed"] += 1
                elif p:
                    cell["false_alarms"] += 1
            result[name] = {**base.scores(pred, gold), "by_source": by_source}
        return result

    if args.heldout:
        summary["heldout"] = score_once(base.load(args.file, "heldout", args.mirrors))
    if args.fresh is not None:
        # another frozen set (every row, whatever its split), scored with the setting fixed
        # on dev: docs/lifecycle.md "A fresh unseen set"
        try:
            fresh = base.load(args.fresh, "all", args.mirrors)
        except base.MissingSource as exc:
            print(f"contradictions_cv: {exc} (fetch it, or pass --mirrors)", file=sys.stderr)
            return 2
        summary["fresh"] = {"dataset": args.fresh.stem, **score_once(fresh)}
    if args.nli_cache is not None:
        args.nli_cache.write_text(json.dumps([[a, b, v] for (a, b), v in cache.items()]))
    print(json.dumps(summary) if args.json else json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
