"""Retrieval: one pipeline for search, context packs, diagnostics and agent hooks.

BM25 + dense + graph candidates, weighted RRF by query type, graph neighbourhood boost,
phase / trust / decay / recency weights, staleness rules, and token-budgeted context packs
with citations. Importing it is cheap (no LanceDB, no model).
"""

from engram.retrieval.packing import BACKGROUND_TYPES, pack_context
from engram.retrieval.retriever import CRITICAL_TYPES, Retriever, file_query
from engram.retrieval.scoring import (
    FUSION_WEIGHTS,
    PHASE_WEIGHTS,
    SOURCE_TRUST,
    detect_query_type,
    graph_neighbourhood_boost,
    graph_scale,
    memory_weight,
    normalise_scores,
    weighted_rrf,
    weighted_score_fusion,
)
from engram.retrieval.types import (
    ContextItem,
    ContextPack,
    ContextRequest,
    GraphProvider,
    Level,
    QueryType,
    RetrievalStore,
    SearchHit,
    SearchRequest,
    Surface,
    Tier,
)
from engram.tokens import estimate_tokens

__all__ = [
    "BACKGROUND_TYPES",
    "CRITICAL_TYPES",
    "FUSION_WEIGHTS",
    "PHASE_WEIGHTS",
    "SOURCE_TRUST",
    "ContextItem",
    "ContextPack",
    "ContextRequest",
    "GraphProvider",
    "Level",
    "QueryType",
    "RetrievalStore",
    "Retriever",
    "SearchHit",
    "SearchRequest",
    "Surface",
    "Tier",
    "detect_query_type",
    "estimate_tokens",
    "file_query",
    "graph_neighbourhood_boost",
    "graph_scale",
    "memory_weight",
    "normalise_scores",
    "pack_context",
    "weighted_rrf",
    "weighted_score_fusion",
]
