"""The one retrieval pipeline behind search, context packs, diagnostics and agent hooks.

Stages (docs/retrieval.md, adapted):

1. **Candidates**, each optional: BM25 (``store.keyword_search``), dense
   (``store.vector_search`` on the embedded query), graph (memories on the request's file
   and on its code-graph neighbours, or on the neighbours of the top candidates' files).
2. **Weighted RRF** with weights chosen by query type (identifier / semantic / structural).
3. **Graph neighbourhood boost**: candidates ranked 11-50 that sit on files next to the top
   ten's files move up.
4. **Weights**: phase x source trust x decayed confidence x recency x access frequency x
   pinned/verified, and the staleness rules: stale memories never come back on proactive
   requests and come back marked (and ranked lower) on explicit search; deprecated ones
   and those outside their validity window never do.
5. **Learned re-ranking** of the finalised top 30 (:mod:`engram.retrieval.rerank`): a linear
   model over the paths' scores and ranks, query/memory word and name overlap, episode and
   question shape, fitted on development data by ``scripts/eval/rerank_fit.py``.

``context`` builds a query from the file (path words, module, symbol) or takes the given
one, runs the same pipeline proactively, adds the memories anchored on the file, and packs
them by tier into the budget (:mod:`engram.retrieval.packing`).

Long on purpose: the retrieval stages (candidates, fusion, boosts, weights, packing
hand-off) read top to bottom in the order they run (docs/retrieval.md).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

import attrs
import numpy as np

from engram.config import RetrievalConfig
from engram.model import Memory, MemoryType, RelationType, utcnow
from engram.retrieval.packing import pack_context
from engram.retrieval.rerank import Candidate, RerankModel, default_model, rerank_order
from engram.retrieval.scoring import (
    BM25,
    DENSE,
    FUSION_WEIGHTS,
    GRAPH,
    QUESTION_PENALTY,
    REPLY_SHARE,
    TIME,
    TIME_MATCH_BOOST,
    TIME_WEIGHT,
    detect_query_type,
    graph_neighbourhood_boost,
    graph_scale,
    is_question,
    is_question_query,
    memory_weight,
    weighted_rrf,
    weighted_score_fusion,
)
from engram.retrieval.timeframe import find_timeframe
from engram.retrieval.types import (
    ContextPack,
    ContextRequest,
    GraphProvider,
    QueryType,
    RetrievalStore,
    SearchHit,
    SearchRequest,
    Tier,
)

if TYPE_CHECKING:
    from engram.embed import Embedder
    from engram.store import MemoryFilter

log = logging.getLogger(__name__)

#: Graph-path candidates kept (the graph path of docs/retrieval.md: top 15).
GRAPH_CANDIDATES = 15
#: Top results whose files seed the graph path and the neighbourhood boost.
GRAPH_SEED_RESULTS = 5
#: Top results whose episode neighbours (``extra["adjacent"]``) are lifted, and by how much.
EPISODE_SEEDS = 5
EPISODE_SHARE = 0.3
EPISODE_SECOND_SHARE = 0.15
#: Fused candidates that get weights and staleness checks (weights reorder within this).
FINALISE_WINDOW = 30
#: Types an agent must see before touching the file they are anchored on (004 tier 1).
CRITICAL_TYPES: frozenset[MemoryType] = frozenset(
    {MemoryType.GOTCHA, MemoryType.DEAD_END, MemoryType.ERROR_PATTERN, MemoryType.DECISION}
)

_WORDS = re.compile(r"[a-z0-9]+")
_PATH_WORDS = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_GENERIC_PATH_WORDS = frozenset(
    {"src", "lib", "server", "app", "main", "index", "init", "py", "js", "ts", "tsx", "go", "rs"}
)


def adjacent_ids(memory: Memory) -> list[str]:
    """Ids in ``extra["adjacent"]``: memories recorded next to this one in its episode."""
    raw = memory.extra.get("adjacent")
    if not isinstance(raw, list):
        return []
    return [str(x) for x in raw if isinstance(x, str)]


def tags_named(memory: Memory, query_words: set[str]) -> bool:
    """Whether the query names one of the memory's tags (``speaker:Ana`` is named by "Ana")."""
    for tag in memory.tags:
        value = tag.rsplit(":", 1)[-1].lower()
        words = _WORDS.findall(value)
        if words and all(len(w) >= 3 for w in words) and all(w in query_words for w in words):
            return True
    return False


def file_query(file: str | None, symbol: str | None) -> str:
    """Words of a file path and symbol as a query: ``src/auth/jwt.py`` -> ``auth jwt``.

    The path itself is kept too, so BM25 matches memories that name the file.
    """
    parts: list[str] = []
    if file:
        path = PurePosixPath(file)
        words = [
            w.lower()
            for piece in [*path.parent.parts[-2:], path.stem]
            for w in _PATH_WORDS.findall(piece)
        ]
        parts.append(file)
        parts.extend(w for w in dict.fromkeys(words) if w not in _GENERIC_PATH_WORDS)
    if symbol:
        parts.append(symbol)
        parts.extend(w.lower() for w in _PATH_WORDS.findall(symbol))
    return " ".join(dict.fromkeys(parts))


def _conflict_ids(memory: Memory) -> list[str]:
    return list(
        dict.fromkeys(
            r.target_memory_id
            for r in memory.relations
            if r.relation_type is RelationType.CONFLICTS_WITH and r.target_memory_id
        )
    )


class Retriever:
    """Hybrid memory retrieval over a :class:`RetrievalStore` (see the module docstring)."""

    def __init__(
        self,
        store: RetrievalStore,
        embedder: Embedder | None,
        config: RetrievalConfig,
        graph: GraphProvider | None = None,
        *,
        clock: Callable[[], datetime] = utcnow,
        file_exists: Callable[[str], bool] | None = None,
        fusion: str = "score",
        shown: Callable[[Memory], bool] | None = None,
        rerank: RerankModel | str | None = "default",
    ) -> None:
        self.store = store
        #: the learned re-ranking of the finalised top (docs/retrieval.md); "default": the
        #: shipped model unless ``retrieval.rerank`` is off, None: the pipeline's order as it is
        self.rerank_model: RerankModel | None = (
            (default_model() if config.rerank else None)
            if rerank == "default"
            else (rerank if isinstance(rerank, RerankModel) else None)
        )
        #: Whether an editor or agent may receive a memory at all (docs/trust.md: flagged,
        #: deprecated, retired and forgotten never); the engine passes the trust model's.
        self._shown: Callable[[Memory], bool] = shown or (lambda m: not m.deprecated)
        self.embedder = embedder
        self.config = config
        self.graph = graph
        self._clock = clock
        #: "score" (default: weighted sum of normalised scores) or "rrf" (weighted RRF,
        #: docs/retrieval.md)
        self.fusion = fusion
        self._executor: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        #: whether an anchored file still exists (the engine passes the workspace's); None:
        #: anchors are not checked
        self._file_exists = file_exists

    def _pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(2, thread_name_prefix="engram-bm25")
            return self._executor

    def close(self) -> None:
        """Stop the worker thread (optional: it is a daemon-like pool thread)."""
        with self._pool_lock:
            if self._executor is not None:
                self._executor.shutdown(wait=False)
                self._executor = None

    # ------------------------------------------------------------------ search

    def search(self, request: SearchRequest) -> list[SearchHit]:
        """Ranked memories for ``request`` (see the module docstring for the stages)."""
        query = (request.query or "").strip()
        if (not query and not request.file) or request.k <= 0:
            return []
        now = self._clock()
        ranked, notes, path_ranks, path_scores = self._rank(query, request, now)
        hits = self._finalise(ranked, request, now, path_ranks, notes)
        if self.rerank_model is not None and query:
            hits = self._rerank(query, hits, path_scores, path_ranks)
        return self.with_conflicts(hits[: request.k])

    def _rerank(
        self,
        query: str,
        hits: list[SearchHit],
        path_scores: dict[str, dict[str, float]],
        path_ranks: dict[str, dict[str, int]],
    ) -> list[SearchHit]:
        """The learned re-ranking of the finalised top (:mod:`engram.retrieval.rerank`).

        The hits keep the pipeline's scores, handed out again in the new order (best score
        to the new first), so callers that sort or threshold by score see the same scale.
        """
        assert self.rerank_model is not None
        candidates = self.rerank_candidates(query, hits)
        order = rerank_order(self.rerank_model, query, candidates, path_scores, path_ranks)
        if order == sorted(order):
            return hits
        scores = [h.score for h in hits]
        out = [hits[i] for i in order]
        for hit, score in zip(out, scores, strict=True):
            hit.score = score
        return out

    @staticmethod
    def rerank_candidates(query: str, hits: Sequence[SearchHit]) -> list[Candidate]:
        """The re-ranker's view of finalised hits (also used by ``scripts/eval/rerank_fit.py``)."""
        words = set(_WORDS.findall(query.lower()))
        return [
            Candidate(memory=h.memory, score=h.score, tag_match=tags_named(h.memory, words))
            for h in hits
        ]

    def with_conflicts(self, hits: Sequence[SearchHit]) -> list[SearchHit]:
        """Each hit followed by the shown memories it is linked to as a conflict, both
        marked (docs/trust.md "Conflicts"; ``engram.marks.together``)."""
        from engram.marks import together

        wanted = [cid for h in hits for cid in _conflict_ids(h.memory)]
        if not wanted:
            return list(hits)
        by_id = {h.memory.id: h for h in hits}
        others = {
            m.id: m
            for m in self.store.get_many(list(dict.fromkeys(wanted)))
            if self._shown(m) and m.id not in by_id
        }
        for memory in others.values():
            stale = self._stale_reason(memory)
            by_id[memory.id] = SearchHit(
                memory=memory,
                score=0.0,
                stale=stale is not None,
                reasons=[*([stale] if stale else []), "shown with the memory it conflicts with"],
            )
        for hit in by_id.values():
            hit.conflicts = [
                (cid, by_id[cid].memory.content)
                for cid in _conflict_ids(hit.memory)
                if cid in by_id and cid != hit.memory.id
            ]

        def partners(hit: SearchHit) -> list[SearchHit]:
            return [by_id[cid] for cid, _ in hit.conflicts]

        placed = together(list(hits), lambda h: h.memory.id, partners)
        for hit in placed:  # a partner pulled in sits just under its pair
            if hit.memory.id in others:
                pair = next((by_id[c] for c, _ in hit.conflicts if c not in others), None)
                if pair is not None:
                    hit.score = pair.score
        return placed

    def _filter(self, request: SearchRequest) -> MemoryFilter:
        from engram.store import MemoryFilter

        return MemoryFilter(
            types=list(request.types) if request.types else None,
            include_stale=not request.proactive,
        )

    def _rank(
        self, query: str, request: SearchRequest, now: datetime
    ) -> tuple[
        list[tuple[str, float]],
        list[str],
        dict[str, dict[str, int]],
        dict[str, dict[str, float]],
    ]:
        n = max(self.config.candidates, request.k * 3)
        flt = self._filter(request)
        notes: list[str] = []
        paths: dict[str, list[tuple[str, float]]] = {}
        window = find_timeframe(query, now) if query and request.read_dates else None
        if query:
            # stage 1 (docs/retrieval.md) runs the paths in parallel: BM25 (LanceDB, releases the
            # GIL) on a
            # worker thread while this one embeds the query (ONNX, releases it too).
            keyword_notes: list[str] = []
            pending = self._pool().submit(self._keyword, query, n, flt, keyword_notes)
            dated = None if window is None else attrs.evolve(flt, valid_within=window)
            pending_dated = (
                None if dated is None else self._pool().submit(self._keyword, query, n, dated, [])
            )
            dense, dense_dated = self._dense(query, n, flt, notes, dated)
            paths[BM25] = pending.result()
            notes.extend(keyword_notes)
            if dense is not None:
                paths[DENSE] = dense
            if window is not None and dated is not None and pending_dated is not None:
                in_window = self._in_window(pending_dated.result(), dense_dated)
                if in_window:
                    paths[TIME] = in_window
                    notes.append(f"dated: {window.text}")
        matching = self._matching(paths, request)
        graph_hits = self._graph_candidates(request.file, paths)
        qtype = detect_query_type(query) if query else QueryType.STRUCTURAL
        weights = {**FUSION_WEIGHTS[qtype], TIME: TIME_WEIGHT}
        if graph_hits and request.file:
            # the caller's file is part of the question: nearness to it is relevance
            paths[GRAPH] = graph_hits
            matching.update(mid for mid, _ in graph_hits)
        if self.fusion == "rrf":
            fused = weighted_rrf(
                {name: [mid for mid, _ in hits] for name, hits in paths.items()},
                weights,
                k=self.config.rrf_k,
            )
        else:
            fused = weighted_score_fusion(paths, weights, rank_only={GRAPH, TIME})
        # relevance first (docs/retrieval.md): what matches neither the words nor the meaning
        # of the query is not a result, whatever boosts it would get
        fused = {mid: score for mid, score in fused.items() if mid in matching}
        top = max(fused.values(), default=0.0) or 1.0
        ranked = sorted(
            ((mid, score / top) for mid, score in fused.items()), key=lambda item: -item[1]
        )
        if graph_hits and not request.file:
            ranked = graph_scale(ranked, graph_hits, weights.get(GRAPH, 0.0))
            paths[GRAPH] = [(mid, w) for mid, w in graph_hits if mid in fused]
        notes.append(f"query: {qtype.value}")
        path_ranks = {
            name: {mid: rank for rank, (mid, _) in enumerate(hits, start=1)}
            for name, hits in paths.items()
        }
        ranked = self._boost(ranked, notes, path_ranks)
        ranked = self._episode_spread(ranked, path_ranks, matching, is_question_query(query))
        path_scores = {name: dict(hits) for name, hits in paths.items() if name in (BM25, DENSE)}
        return ranked, notes, path_ranks, path_scores

    def _matching(
        self, paths: dict[str, list[tuple[str, float]]], request: SearchRequest
    ) -> set[str]:
        """Ids that match the query: a keyword hit, or a cosine at least ``min_cosine``.

        The floor is calibrated per model (``retrieval.min_cosine``, docs/retrieval.md): for
        the default model no answer that search found on LoCoMo lies below it, while text on
        another subject does. The time path's members passed the same test in their window.
        """
        floor = self.config.min_cosine
        found = {mid for mid, _ in paths.get(BM25, [])}
        found.update(mid for mid, cosine in paths.get(DENSE, []) if cosine >= floor)
        found.update(mid for mid, _ in paths.get(TIME, []))
        return found

    def _keyword(
        self, query: str, n: int, flt: MemoryFilter | None, notes: list[str]
    ) -> list[tuple[str, float]]:
        try:
            return list(self.store.keyword_search(query, n, flt))
        except Exception as exc:  # a broken FTS index must not take search down
            log.warning("keyword search failed: %s", exc)
            notes.append("keyword search unavailable")
            return []

    def _dense(
        self,
        query: str,
        n: int,
        flt: MemoryFilter | None,
        notes: list[str],
        dated: MemoryFilter | None = None,
    ) -> tuple[list[tuple[str, float]] | None, list[tuple[str, float]] | None]:
        """Dense candidates, and with a ``dated`` filter those inside its window too.

        (None, None) without a working model; the windowed list is None when its search
        failed alone. Both lists come from one store call, so at 100k memories a dated
        query costs one matrix product, not two (``MemoryStore.vector_search_each``).
        """
        if self.embedder is None:
            notes.append("no embedding model: keyword + graph only")
            return None, None
        model_id = self.embedder.model_id
        try:
            vector = np.asarray(self.embedder.embed([query]), dtype=np.float32)[0]
            if dated is not None:
                try:
                    found, inside = self.store.vector_search_each(
                        vector, n, [flt, dated], model_id=model_id
                    )
                    return list(found), list(inside)
                except Exception as exc:  # the window is an optional signal
                    log.info("time-window search failed: %s", exc)
            return list(self.store.vector_search(vector, n, flt, model_id=model_id)), None
        except Exception as exc:
            log.warning("dense search failed: %s", exc)
            notes.append("dense search unavailable: keyword + graph only")
            return None, None

    def _in_window(
        self,
        keyword_hits: list[tuple[str, float]],
        dense_hits: list[tuple[str, float]] | None,
    ) -> list[tuple[str, float]]:
        """The time path: BM25 and dense again, inside the window the query names.

        "What did we decide about caching in March?" has its answer among March's
        memories, where the whole store's top 50 may not reach; searching the window
        alone finds it, and fusion weighs it with the other paths (docs/retrieval.md).
        The windowed BM25 ran on a worker thread beside the main paths; the windowed dense
        hits came with the store-wide ones (``_dense``).
        """
        inner: dict[str, list[tuple[str, float]]] = {BM25: keyword_hits}
        if dense_hits is not None:
            inner[DENSE] = dense_hits
        fused = weighted_score_fusion(inner, FUSION_WEIGHTS[QueryType.SEMANTIC])
        floor = self.config.min_cosine
        matches = {mid for mid, _ in keyword_hits}
        matches.update(mid for mid, cosine in inner.get(DENSE, []) if cosine >= floor)
        return sorted(
            ((mid, score) for mid, score in fused.items() if mid in matches),
            key=lambda item: -item[1],
        )

    def _ids_for_file(self, path: str) -> list[str]:
        return list(self.store.ids_for_file(path))

    def _neighbours(self, files: Sequence[str]) -> dict[str, float]:
        if self.graph is None or not files:
            return {}
        try:
            return dict(self.graph.neighbours(list(files), 1))
        except Exception as exc:  # the graph is an optional signal
            log.info("graph neighbours unavailable: %s", exc)
            return {}

    def _graph_candidates(
        self, file: str | None, paths: dict[str, list[tuple[str, float]]]
    ) -> list[tuple[str, float]]:
        """Memories on the request's file, then on its graph neighbours (best weight first).

        Without a file, the files of the top keyword/dense candidates seed the walk (the graph
        path of docs/retrieval.md uses the files the agent recently touched; a stateless search
        uses the best guess).
        """
        weights: dict[str, float] = {}
        if file:
            for mid in self._ids_for_file(file):
                weights[mid] = 2.0
            seeds = [file]
        else:
            if self.graph is None:
                return []
            top = [hits[:GRAPH_SEED_RESULTS] for hits in paths.values()]
            seed_ids = list(dict.fromkeys(mid for hits in top for mid, _ in hits))
            seeds = list(dict.fromkeys(f for m in self.store.get_many(seed_ids) for f in m.files))
        for path, weight in sorted(self._neighbours(seeds).items(), key=lambda kv: -kv[1]):
            if path in seeds:
                continue
            for mid in self._ids_for_file(path):
                if weights.get(mid, 0.0) < weight:
                    weights[mid] = weight
            if len(weights) >= GRAPH_CANDIDATES * 3:
                break
        ordered = sorted(weights, key=lambda mid: -weights[mid])
        keep = max(GRAPH_CANDIDATES, sum(1 for w in weights.values() if w >= 2.0))
        return [(mid, weights[mid]) for mid in ordered[:keep]]

    def _boost(
        self,
        ranked: list[tuple[str, float]],
        notes: list[str],
        path_ranks: dict[str, dict[str, int]],
    ) -> list[tuple[str, float]]:
        if self.graph is None or len(ranked) <= 10:
            return ranked
        window = ranked[:50]
        memories = {m.id: m for m in self.store.get_many([mid for mid, _ in window])}
        files_of = {mid: m.files for mid, m in memories.items()}
        top_files = list(dict.fromkeys(f for mid, _ in window[:10] for f in files_of.get(mid, ())))
        neighbours = self._neighbours(top_files)
        if not neighbours:
            return ranked
        boosted, ids = graph_neighbourhood_boost(window, files_of, neighbours)
        if ids:
            path_ranks.setdefault("boost", {}).update({mid: 1 for mid in ids})
        return boosted + ranked[50:]

    def _episode_spread(
        self,
        ranked: list[tuple[str, float]],
        path_ranks: dict[str, dict[str, int]],
        matching: set[str],
        asked: bool = False,
    ) -> list[tuple[str, float]]:
        """Lift the memories recorded right before/after the top results (same episode).

        Memories of one session that were recorded in sequence (the turns of a conversation,
        the steps of a debugging session) list each other in ``extra["adjacent"]``. What
        answers a question often sits next to what matches it (the reply to the matching
        question, the fix after the matching error), so each of the top
        :data:`EPISODE_SEEDS` results passes :data:`EPISODE_SHARE` of its score to its
        neighbours: the episode counterpart of the code graph's neighbourhood boost.
        When the query is a question (``asked``) and a seed is a question too, the memory
        recorded right after the seed (its reply: the one whose ``episode_before`` is the
        seed's excerpt) gets :data:`REPLY_SHARE` of the seed's score more.
        """
        from engram.embed.text import EPISODE_BEFORE_KEY, episode_excerpt

        seeds = ranked[:EPISODE_SEEDS]
        if not seeds:
            return ranked
        memories = {m.id: m for m in self.store.get_many([mid for mid, _ in seeds])}
        bonus: dict[str, float] = {}
        first_ring: dict[str, tuple[str, float]] = {}
        for mid, score in seeds:
            memory = memories.get(mid)
            if memory is None:
                continue
            for other in adjacent_ids(memory):
                if other != mid:
                    bonus[other] = max(bonus.get(other, 0.0), EPISODE_SHARE * score)
                    first_ring.setdefault(other, (mid, score))
        ring_memories = self.store.get_many(list(first_ring))
        if asked and REPLY_SHARE > 0:
            seed_scores = dict(seeds)
            excerpts = {
                mid: episode_excerpt(m.content)
                for mid, m in memories.items()
                if is_question(m.content)
            }
            for ring in ring_memories:
                for question_id, excerpt in excerpts.items():
                    if question_id in adjacent_ids(ring) and (
                        ring.extra.get(EPISODE_BEFORE_KEY) == excerpt
                    ):
                        extra = REPLY_SHARE * seed_scores.get(question_id, 0.0)
                        bonus[ring.id] = bonus.get(ring.id, 0.0) + extra
        if EPISODE_SECOND_SHARE > 0:
            for ring in ring_memories:
                seed, score = first_ring[ring.id]
                for other in adjacent_ids(ring):
                    if other != seed and other != ring.id:
                        bonus[other] = max(bonus.get(other, 0.0), EPISODE_SECOND_SHARE * score)
        # a neighbour must match the query itself: the episode lifts, it does not admit
        bonus = {mid: extra for mid, extra in bonus.items() if mid in matching}
        if not bonus:
            return ranked
        scores = dict(ranked)
        for mid, extra in bonus.items():
            scores[mid] = scores.get(mid, 0.0) + extra
        path_ranks["episode"] = dict.fromkeys(bonus, 1)
        return sorted(scores.items(), key=lambda item: -item[1])

    def _stale_reason(self, memory: Memory) -> str | None:
        if memory.stale_at is not None:
            return f"stale since {memory.stale_at:%Y-%m-%d}: may be outdated"
        if self._file_exists is not None:
            for anchor in memory.anchors:
                if not self._file_exists(anchor.file):
                    return f"stale: {anchor.file} no longer exists"
        return None

    def _finalise(
        self,
        ranked: list[tuple[str, float]],
        request: SearchRequest,
        now: datetime,
        path_ranks: dict[str, dict[str, int]],
        notes: list[str],
    ) -> list[SearchHit]:
        window = ranked[: max(request.k * 3, FINALISE_WINDOW)]
        memories = {m.id: m for m in self.store.get_many([mid for mid, _ in window])}
        types = set(request.types) if request.types else None
        query_words = set(_WORDS.findall(request.query.lower()))
        asked = is_question_query(request.query)
        hits: list[SearchHit] = []
        for mid, relevance in window:
            memory = memories.get(mid)
            if memory is None or not self._shown(memory) or not memory.is_valid_at(now):
                continue
            if types is not None and memory.type not in types:
                continue
            stale_reason = self._stale_reason(memory)
            if stale_reason is not None and request.proactive:
                continue
            tag_match = bool(query_words) and tags_named(memory, query_words)
            if mid in path_ranks.get(TIME, {}):  # recorded when the query says
                relevance *= TIME_MATCH_BOOST
            questioned = asked and is_question(memory.content)
            if questioned:  # a question does not answer one: its reply does
                relevance *= QUESTION_PENALTY
            weight = memory_weight(
                memory,
                now=now,
                phase=request.phase,
                stale=stale_reason is not None,
                tag_match=tag_match,
            )
            reasons = [
                f"{name} #{ranks[mid]}"
                for name, ranks in path_ranks.items()
                if mid in ranks and name not in ("boost", "episode")
            ]
            if mid in path_ranks.get("boost", {}):
                reasons.append("graph neighbourhood boost")
            if mid in path_ranks.get("episode", {}):
                reasons.append("next to a top result in its episode")
            if tag_match:
                reasons.append("tag named in the query")
            if questioned:
                reasons.append("a question itself: ranked below answers")
            reasons.extend(notes)
            if weight.phase != 1.0 and request.phase is not None:
                reasons.append(f"phase {request.phase.value} x{weight.phase:g}")
            if weight.trust != 1.0:
                reasons.append(f"source {memory.source.value} x{weight.trust:g}")
            if memory.pinned:
                reasons.append("pinned")
            if memory.user_verified:
                reasons.append("user verified")
            if stale_reason is not None:
                reasons.insert(0, stale_reason)
            hits.append(
                SearchHit(
                    memory=memory,
                    score=relevance * weight.total,
                    stale=stale_reason is not None,
                    reasons=reasons,
                )
            )
        hits.sort(key=lambda h: -h.score)
        return hits

    # ------------------------------------------------------------------ context

    def context(self, request: ContextRequest) -> ContextPack:
        """The memories that matter for a file and/or query, packed into the token budget."""
        now = self._clock()
        budget = max(0, int(request.budget_tokens))
        asked = (request.query or "").strip()
        query = asked or file_query(request.file, request.symbol)
        search = SearchRequest(
            query=query,
            k=max(20, self.config.default_k * 2),
            phase=request.phase,
            file=request.file,
            proactive=True,
            read_dates=bool(asked),
        )
        hits = self.search(search) if (query or request.file) else []
        anchored = self._anchored(request, now, {h.memory.id for h in hits})
        tiered: list[tuple[Tier, SearchHit]] = []
        seen: set[str] = set()
        tier_of: dict[str, Tier] = {}
        for hit in self.with_conflicts(anchored + hits):
            if hit.memory.id in seen:
                continue
            seen.add(hit.memory.id)
            # a conflict partner goes in the tier of the side it came with: shown together
            pair = next((tier_of[c] for c, _ in hit.conflicts if c in tier_of), None)
            tier = pair or self._tier(hit.memory, request)
            tier_of[hit.memory.id] = tier
            tiered.append((tier, hit))
        title = self._title(request)
        return pack_context(tiered, budget, title=title, surface=request.surface)

    def _anchored(self, request: ContextRequest, now: datetime, have: set[str]) -> list[SearchHit]:
        """Memories anchored on the file (symbol matches first) that search did not return."""
        if not request.file:
            return []
        ids = [mid for mid in self._ids_for_file(request.file) if mid not in have]
        out: list[SearchHit] = []
        for memory in self.store.get_many(ids):
            if not self._shown(memory) or not memory.is_valid_at(now):
                continue
            if self._stale_reason(memory) is not None:
                continue
            weight = memory_weight(memory, now=now, phase=request.phase, stale=False)
            on_symbol = bool(request.symbol) and any(
                a.symbol == request.symbol for a in memory.anchors
            )
            relevance = 0.5 * (2.0 if on_symbol else 1.0)
            out.append(
                SearchHit(
                    memory=memory,
                    score=relevance * weight.total,
                    stale=False,
                    reasons=[f"anchored on {request.file}"],
                )
            )
        out.sort(key=lambda h: -h.score)
        return out

    @staticmethod
    def _tier(memory: Memory, request: ContextRequest) -> Tier:
        from engram.retrieval.packing import BACKGROUND_TYPES

        if memory.type in BACKGROUND_TYPES:
            return Tier.BACKGROUND
        if memory.type in CRITICAL_TYPES:
            files = memory.files
            on_file = request.file is not None and request.file in files
            on_symbol = request.symbol is not None and any(
                a.symbol == request.symbol for a in memory.anchors
            )
            if on_file or on_symbol or memory.pinned:
                return Tier.CRITICAL
        return Tier.RELEVANT

    @staticmethod
    def _title(request: ContextRequest) -> str:
        target = request.file or ""
        if request.symbol:
            target = f"{target}:{request.symbol}" if target else request.symbol
        if request.query:
            target = f"{target} — {request.query}" if target else request.query
        phase = f" ({request.phase.value})" if request.phase else ""
        return f"Engram memory for {target}{phase}"
