#!/usr/bin/env python3
"""LoCoMo evidence retrieval: recall@5, recall@10 and MRR for Engram, BM25 alone, dense alone.

Every turn of a conversation becomes one memory through the product path
(``engram.app.remember.remember_many``: redaction, near-duplicate merge, contextual embedding, one
batched store write), the way an observer would record an episode: content = the turn
text, the speaker as a tag, the session as ``provenance.session_id``, the session date as
``valid_from``, ``dia_id``/speaker/session date in ``extra``, and the session's turns linked
as one episode (``engram.embed.text.link_episode``: the ids of the turns before and after in
``extra["adjacent"]``, an excerpt of the previous turn in ``extra["episode_before"]``, which
the contextual embedding text carries). Each QA question with evidence is then asked three
ways in the same run, with default settings:

* ``engram``: ``engram.app.recall.search`` (the full retrieval pipeline);
* ``bm25``: the store's keyword search alone (same index);
* ``dense``: the store's vector search alone (same vectors, the query embedded by the
  same model).

A question is a hit at k when any of its evidence turns is in the top k (a turn merged into
another memory counts through that memory); MRR is the reciprocal rank of the first
evidence turn within the top 10 (0 beyond). ``evidence_recall@10`` (the fraction of a
question's evidence turns found) is reported too.

Each conversation gets a fresh temporary workspace; embeddings go through a persistent
cache (``--cache``) so reruns only embed what changed.

``--queries FILE`` runs any split: a JSON list whose entries are conversation names (all
their questions) or ``{"conversation": NAME, "question": TEXT}`` objects; only the named
conversations are indexed and only the listed questions asked. Each conversation is one
fold: ``folds`` in the summary holds the per-conversation rows and ``fold_mean`` /
``fold_sd`` their mean and standard deviation.

Usage: scripts/eval/locomo.py --data ../shared/data/locomo-dev --json
           [--queries FILE] [--limit-conversations N] [--limit-questions N] [--embed-model NAME]
Last stdout line: {"dataset": "locomo-dev", "items": N,
                   "rows": {"engram": {...}, "bm25": {...}, "dense": {...}}}
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROWS = ("engram", "bm25", "dense")
K = 10
DEFAULT_CACHE = Path.home() / ".cache" / "engram" / "eval_embed_cache.sqlite"
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DIA = re.compile(r"D\d+:\d+")

log = logging.getLogger("locomo")


def parse_date(text: str) -> datetime | None:
    """LoCoMo session dates look like ``1:56 pm on 8 May, 2023``."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def conversation_turns(conv: dict[str, Any], with_captions: bool = True) -> list[dict[str, Any]]:
    """All turns in session order, each with its session number and date."""
    sessions = sorted((int(m.group(1)), key) for key in conv if (m := _SESSION_KEY.match(key)))
    turns: list[dict[str, Any]] = []
    for number, key in sessions:
        if not isinstance(conv[key], list):
            continue
        date_text = str(conv.get(f"{key}_date_time", ""))
        for turn in conv[key]:
            if not isinstance(turn, dict) or not turn.get("text") or not turn.get("dia_id"):
                continue
            text = str(turn["text"]).strip()
            caption = str(turn.get("blip_caption") or "").strip()
            if caption and with_captions:
                text = f"{text} [shared an image: {caption}]"
            turns.append(
                {
                    "dia_id": str(turn["dia_id"]).strip(),
                    "speaker": str(turn.get("speaker", "")).strip(),
                    "text": text,
                    "session": number,
                    "date_text": date_text,
                    "date": parse_date(date_text),
                }
            )
    return turns


def evidence_ids(raw: Any) -> list[str]:
    """Evidence dia_ids; a few entries in LoCoMo hold several ids or stray text."""
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        out.extend(_DIA.findall(str(item)))
    return list(dict.fromkeys(out))


def turn_memories(conv_name: str, turns: Sequence[dict[str, Any]]) -> list[Any]:
    from engram.embed.text import link_episode
    from engram.model import Memory, MemoryScope, MemorySource, MemoryType, Provenance

    memories = []
    for turn in turns:
        when = turn["date"]
        extra = {
            "dia_id": turn["dia_id"],
            "speaker": turn["speaker"],
            "session_date": turn["date_text"],
        }
        kwargs: dict[str, Any] = {}
        if when is not None:
            kwargs["valid_from"] = when
        memories.append(
            Memory(
                content=turn["text"],
                type=MemoryType.MODULE_INSIGHT,
                source=MemorySource.OBSERVER_INFERRED,
                scope=MemoryScope.SESSION,
                tags=[f"speaker:{turn['speaker']}"] if turn["speaker"] else [],
                provenance=Provenance(session_id=f"{conv_name}/session_{turn['session']}"),
                extra=extra,
                **kwargs,
            )
        )
    # the turns before and after in the same session are its episode neighbours
    # (``extra["adjacent"]``, lifted by retrieval) and the previous turn's excerpt goes into
    # the contextual embedding text, as an observer recording a conversation links them
    link_episode(memories)
    return memories


class Scores:
    def __init__(self) -> None:
        self.n = 0
        self.hit5 = 0
        self.hit10 = 0
        self.rr = 0.0
        self.fraction10 = 0.0
        self.seconds = 0.0

    def add(self, ranked_turns: Sequence[set[str]], evidence: set[str], seconds: float) -> None:
        self.n += 1
        self.seconds += seconds
        first = next((i for i, turns in enumerate(ranked_turns[:K]) if turns & evidence), None)
        if first is not None:
            self.rr += 1.0 / (first + 1)
            self.hit5 += first < 5
            self.hit10 += 1
        found = set().union(*ranked_turns[:K]) & evidence if ranked_turns else set()
        self.fraction10 += len(found) / len(evidence)

    def merge(self, other: Scores) -> None:
        self.n += other.n
        self.hit5 += other.hit5
        self.hit10 += other.hit10
        self.rr += other.rr
        self.fraction10 += other.fraction10
        self.seconds += other.seconds

    def row(self) -> dict[str, float]:
        n = max(self.n, 1)
        return {
            "recall@5": round(self.hit5 / n, 4),
            "recall@10": round(self.hit10 / n, 4),
            "mrr": round(self.rr / n, 4),
            "evidence_recall@10": round(self.fraction10 / n, 4),
            "ms_per_query": round(1000 * self.seconds / n, 2),
        }


def read_selection(path: Path) -> dict[str, set[str] | None]:
    """``--queries``: conversation name -> the questions to ask (None: all of them)."""
    entries = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(entries, list):
        raise SystemExit(f"locomo: {path} must hold a JSON list")
    selection: dict[str, set[str] | None] = {}
    for entry in entries:
        if isinstance(entry, str):
            selection[entry] = None
        elif isinstance(entry, dict) and "conversation" in entry:
            name = str(entry["conversation"])
            if "question" not in entry:
                selection[name] = None
            elif selection.get(name, set()) is not None:
                chosen = selection.setdefault(name, set())
                assert chosen is not None
                chosen.add(str(entry["question"]).strip())
        else:
            raise SystemExit(f"locomo: bad entry in {path}: {entry!r}")
    return selection


def fold_summary(folds: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Mean and standard deviation over folds (conversations) of each row's metrics."""
    import statistics

    mean: dict[str, dict[str, float]] = {}
    sd: dict[str, dict[str, float]] = {}
    for row in ROWS:
        present = [f[row] for f in folds.values() if f.get(row)]
        if not present:
            continue
        mean[row] = {}
        sd[row] = {}
        for metric in ("recall@5", "recall@10", "mrr"):
            values = [p[metric] for p in present]
            mean[row][metric] = round(statistics.fmean(values), 4)
            sd[row][metric] = round(statistics.pstdev(values), 4) if len(values) > 1 else 0.0
    return {"fold_mean": mean, "fold_sd": sd}


def load_embedder(model: str, cache_path: Path | None) -> Any | None:
    from engram.config import EmbedConfig
    from engram.embed import CachedEmbedder, EmbeddingCache, load_embedder

    status = load_embedder(EmbedConfig(model=model), None)
    if status.embedder is None:
        log.warning("no embedding model: %s", status.reason)
        return None
    if cache_path is None:
        return status.embedder
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    return CachedEmbedder(status.embedder, EmbeddingCache(cache_path))


def run_conversation(
    name: str,
    conv: dict[str, Any],
    embedder: Any | None,
    limit_questions: int | None,
    scores: dict[str, Scores],
    progress: Callable[[str], None],
    with_captions: bool = True,
    only: set[str] | None = None,
) -> tuple[int, int]:
    from engram.app import Engine
    from engram.app.recall import search
    from engram.app.remember import remember_many
    from engram.config import EngramConfig
    from engram.workspace import Workspace

    turns = conversation_turns(conv, with_captions)
    known = {t["dia_id"] for t in turns}
    questions = []
    skipped = 0
    for qa in conv.get("qa", []):
        evidence = set(evidence_ids(qa.get("evidence"))) & known
        if not evidence or not str(qa.get("question", "")).strip():
            skipped += 1
            continue
        if only is not None and str(qa["question"]).strip() not in only:
            continue
        questions.append((str(qa["question"]).strip(), evidence))
    if limit_questions is not None:
        questions = questions[:limit_questions]

    with tempfile.TemporaryDirectory(prefix=f"locomo-{name}-") as tmp:
        ws = Workspace.open(tmp)
        config = EngramConfig()
        if embedder is None:
            config.embed.model = "none"
        engine = Engine(ws, config, embedder=embedder)
        try:
            started = time.perf_counter()
            results = remember_many(engine, turn_memories(name, turns))
            memory_turns: dict[str, set[str]] = {}
            for turn, result in zip(turns, results, strict=True):
                memory_turns.setdefault(result.memory.id, set()).add(turn["dia_id"])
            merged = len(turns) - len(memory_turns)
            progress(
                f"{name}: {len(turns)} turns -> {len(memory_turns)} memories "
                f"({merged} merged) in {time.perf_counter() - started:.1f}s; "
                f"{len(questions)} questions"
            )
            store = engine.store
            if embedder is not None:  # one batched call fills the cache for every row
                embedder.embed([q for q, _ in questions])
            for question, evidence in questions:
                t0 = time.perf_counter()
                hits = search(engine, question, k=K, record=False)
                t1 = time.perf_counter()
                scores["engram"].add(
                    [memory_turns.get(h.memory.id, set()) for h in hits], evidence, t1 - t0
                )
                found = store.keyword_search(question, K)
                t2 = time.perf_counter()
                scores["bm25"].add(
                    [memory_turns.get(mid, set()) for mid, _ in found], evidence, t2 - t1
                )
                if embedder is not None:
                    t2 = time.perf_counter()
                    vector = embedder.embed([question])[0]
                    dense = store.vector_search(vector, K)
                    scores["dense"].add(
                        [memory_turns.get(mid, set()) for mid, _ in dense],
                        evidence,
                        time.perf_counter() - t2,
                    )
        finally:
            engine.close()
    return len(questions), skipped


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of LoCoMo *.json")
    parser.add_argument("--json", action="store_true", help="print the JSON summary line")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--limit-questions", type=int, default=None, help="per conversation")
    parser.add_argument("--embed-model", default="default", help="'default', a name, or 'none'")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embedding cache file")
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument(
        "--no-captions",
        action="store_true",
        help="leave out the caption of an image shared in a turn (blip_caption)",
    )
    parser.add_argument("--dataset-name", default=None, help="default: the data folder's name")
    parser.add_argument(
        "--queries",
        type=Path,
        default=None,
        help="JSON list of conversation names or {conversation, question} objects to run",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    files = sorted(args.data.glob("*.json"))
    if not files:
        print(f"locomo: no *.json in {args.data}", file=sys.stderr)
        return 2
    selection: dict[str, set[str] | None] | None = None
    if args.queries is not None:
        selection = read_selection(args.queries)
        files = [f for f in files if f.stem in selection]
        if not files:
            print(f"locomo: {args.queries} names no conversation in {args.data}", file=sys.stderr)
            return 2
    if args.limit_conversations is not None:
        files = files[: args.limit_conversations]

    def progress(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    started = time.perf_counter()
    embedder = load_embedder(args.embed_model, None if args.no_cache else args.cache)
    scores = {row: Scores() for row in ROWS}
    folds: dict[str, dict[str, Any]] = {}
    items = skipped = 0
    for path in files:
        conv = json.loads(path.read_text(encoding="utf-8"))
        fold = {row: Scores() for row in ROWS}
        asked, missing = run_conversation(
            path.stem,
            conv,
            embedder,
            args.limit_questions,
            fold,
            progress,
            not args.no_captions,
            None if selection is None else selection.get(path.stem),
        )
        for row in ROWS:
            scores[row].merge(fold[row])
        folds[path.stem] = {row: fold[row].row() for row in ROWS if embedder or row != "dense"}
        items += asked
        skipped += missing
    rows: dict[str, Any] = {row: scores[row].row() for row in ROWS}
    if embedder is None:
        rows["dense"] = None
    elapsed = time.perf_counter() - started
    for row in ROWS:
        progress(f"{row:>7}: {rows[row]}")
    progress(f"{items} questions ({skipped} without evidence skipped) in {elapsed:.0f}s")
    summary = {
        "dataset": args.dataset_name or args.data.name,
        "items": items,
        "rows": rows,
        "skipped_without_evidence": skipped,
        "conversations": len(files),
        "embed_model": getattr(embedder, "model_id", None),
        "seconds": round(elapsed, 1),
        "image_captions": not args.no_captions,
        "folds": folds,
        **fold_summary(folds),
    }
    print(json.dumps(summary) if args.json else json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
