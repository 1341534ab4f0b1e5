"""Request and result records of the retrieval pipeline, and the graph protocol it consumes."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from engram.jsontypes import JsonObject
    from engram.store import MemoryFilter

import enum
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs

from engram.model import Memory, MemoryType, UniversalPhase


class QueryType(enum.StrEnum):
    """How a query is phrased; picks the fusion weights (docs/retrieval.md stage 2a)."""

    IDENTIFIER = "identifier"
    SEMANTIC = "semantic"
    STRUCTURAL = "structural"


class Tier(enum.StrEnum):
    """Context tiers (docs/retrieval.md): what an agent must see first."""

    CRITICAL = "critical"
    RELEVANT = "relevant"
    BACKGROUND = "background"
    INDEX = "index"


class Level(enum.StrEnum):
    """Compression levels used to fit a budget: full text, first sentence, citation, pointer."""

    FULL = "full"
    SUMMARY = "summary"
    CITATION = "citation"
    POINTER = "pointer"


class Surface(enum.StrEnum):
    """Where a context pack is delivered; each has one renderer, and the budget is counted on
    its output (``engram.retrieval.packing.render_pack``)."""

    TEXT = "text"  # CLI stdout and LSP commands: the Markdown
    MCP = "mcp"  # the engram_context tool result: the Markdown, then the ids shown


@runtime_checkable
class GraphProvider(Protocol):
    """Files near other files in the code graph (implemented by ``engram.codegraph``)."""

    def neighbours(self, files: Sequence[str], depth: int = 1) -> dict[str, float]: ...


class RetrievalStore(Protocol):
    """The store calls the retriever makes (implemented by ``engram.store.MemoryStore``).

    Called directly, never probed: a renamed method fails mypy here, not silently at run
    time. ``vector_search`` takes the query embedder's ``model_id`` so that after a model
    switch only vectors of that model are compared; ``vector_search_each`` answers several
    filters for one vector (the store scores them from one matrix product).
    """

    def get_many(self, ids: Sequence[str]) -> list[Memory]: ...

    def ids_for_file(self, path: str) -> list[str]: ...

    def keyword_search(
        self, query: str, k: int, flt: MemoryFilter | None = None
    ) -> list[tuple[str, float]]: ...

    def vector_search(
        self,
        vector: npt.NDArray[np.float32],
        k: int,
        flt: MemoryFilter | None = None,
        *,
        model_id: str | None = None,
    ) -> list[tuple[str, float]]: ...

    def vector_search_each(
        self,
        vector: npt.NDArray[np.float32],
        k: int,
        filters: Sequence[MemoryFilter | None],
        *,
        model_id: str | None = None,
    ) -> list[list[tuple[str, float]]]:
        """``vector_search`` under each filter (a dated query: the store, then its window)."""
        ...


@attrs.define
class SearchRequest:
    """One search. ``proactive`` marks injection (diagnostics, hooks): stale is never returned.

    ``file`` is the file the caller is looking at; it biases results towards memories on that
    file and its graph neighbours, it does not filter. ``read_dates``: a date the query
    names ("in March 2024") opens the time path; off for queries built from a file path
    (``migrations/2024-03-05-users.sql`` names no time the user asked about).
    """

    query: str
    k: int = 10
    phase: UniversalPhase | None = None
    file: str | None = None
    types: Sequence[MemoryType] | None = None
    proactive: bool = False
    read_dates: bool = True


@attrs.define
class SearchHit:
    """A ranked memory, with why it ranked (``reasons``) and whether it may be outdated."""

    memory: Memory
    score: float
    stale: bool
    reasons: list[str] = attrs.field(factory=list)
    #: ``(id, text)`` of each shown memory this one is linked to as a conflict; the
    #: retriever puts those right next to it and every rendering marks them
    #: (docs/trust.md "Conflicts", ``engram.marks``).
    conflicts: list[tuple[str, str]] = attrs.field(factory=list)

    @property
    def citation(self) -> str:
        return self.memory.citation()

    @property
    def conflict_mark(self) -> str:
        from engram.marks import conflict_markers

        return conflict_markers(self.conflicts)

    def to_dict(self) -> JsonObject:
        from engram.model import memory_to_dict

        data = memory_to_dict(self.memory)
        data.update(
            score=round(self.score, 6),
            stale=self.stale,
            reasons=list(self.reasons),
            citation=self.citation,
            conflicts=[{"id": cid, "content": text} for cid, text in self.conflicts],
        )
        if self.conflicts:
            data["conflict"] = self.conflict_mark
        return data


@attrs.define
class ContextRequest:
    """What to assemble context for: a file (and symbol), a free-text query, or both."""

    file: str | None = None
    symbol: str | None = None
    query: str | None = None
    phase: UniversalPhase | None = None
    budget_tokens: int = 2000
    surface: Surface = Surface.TEXT


@attrs.define
class ContextItem:
    """One memory in a context pack, at the compression level that fitted the budget."""

    memory: Memory
    tier: Tier
    level: Level
    text: str
    tokens: int
    score: float
    reasons: list[str] = attrs.field(factory=list)
    conflicts: list[tuple[str, str]] = attrs.field(factory=list)

    @property
    def citation(self) -> str:
        return self.memory.citation()

    def to_dict(self) -> JsonObject:
        m = self.memory
        return {
            "id": m.id,
            "type": m.type.value,
            "source": m.source.value,
            "tier": self.tier.value,
            "level": self.level.value,
            "text": self.text,
            "tokens": self.tokens,
            "score": round(self.score, 6),
            "citation": self.citation,
            "content": m.content,
            "confidence": m.confidence,
            "anchors": [attrs.asdict(a) for a in m.anchors],
            "related_files": list(m.related_files),
            "reasons": list(self.reasons),
            "conflicts": [{"id": cid, "content": text} for cid, text in self.conflicts],
        }


@attrs.define
class ContextPack:
    """Memories packed into a token budget; ``text`` is the Markdown an agent or editor shows.

    ``tokens`` is ``estimate_tokens(text)`` and never exceeds ``budget_tokens``.
    """

    items: list[ContextItem]
    tokens: int
    budget_tokens: int
    text: str
    notes: list[str] = attrs.field(factory=list)

    def to_dict(self) -> JsonObject:
        return {
            "tokens": self.tokens,
            "budget_tokens": self.budget_tokens,
            "items": [item.to_dict() for item in self.items],
            "text": self.text,
            "notes": list(self.notes),
        }
