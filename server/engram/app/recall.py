"""Recall: search memories, search code, and the token-budgeted context pack.

Reads go through ``engram.retrieval`` (docs/retrieval.md); what a read may change about a
memory is stated in docs/trust.md. Access bookkeeping after a read is best-effort: it is
logged, never raised, so a read never fails because of it, and it is off the read's path:
a read adds its ids to the engine's ``uses`` (``app.usage.PendingUses``), written later.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from engram.app.inputs import parse_phase, parse_type
from engram.errors import EngramError, InvalidInput
from engram.model import MemoryType, UniversalPhase

if TYPE_CHECKING:
    from engram.app.engine import Engine
    from engram.codegraph import CodeHit
    from engram.retrieval import ContextPack, SearchHit, Surface

log = logging.getLogger(__name__)

#: The largest ``k`` any search accepts (front ends may allow less).
MAX_K = 1000


def search(
    engine: Engine,
    query: str,
    *,
    k: int = 10,
    phase: UniversalPhase | str | None = None,
    file: str | None = None,
    types: Sequence[MemoryType | str] | None = None,
    record: bool = True,
) -> list[SearchHit]:
    """Explicit search: stale memories come back, marked stale."""
    from engram.retrieval import SearchRequest

    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("search query is empty")
    if k <= 0 or k > MAX_K:
        raise InvalidInput(f"k must be between 1 and {MAX_K}, got {k}")
    parsed_phase = parse_phase(phase)
    rel = engine.relative(file) if file else None
    parsed_types = [parse_type(t) for t in types] if types else None
    request = SearchRequest(
        query=query.strip(), k=k, phase=parsed_phase, file=rel, types=parsed_types
    )
    hits = list(engine.retriever.search(request))
    if record and hits and not engine.read_only:
        _record_access_quietly(engine, [h.memory.id for h in hits])
    return hits


def search_code(engine: Engine, query: str, *, k: int = 10) -> list[CodeHit]:
    """Hybrid search over the indexed code chunks."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("search query is empty")
    if k <= 0 or k > MAX_K:
        raise InvalidInput(f"k must be between 1 and {MAX_K}, got {k}")
    hits = list(engine.code_search.search(query.strip(), k=k))
    if not hits and int(engine.codegraph.stats().get("files", 0)) == 0:
        raise EngramError("no code is indexed yet; run 'engram index' first")
    return hits


def context(
    engine: Engine,
    *,
    file: str | None = None,
    symbol: str | None = None,
    query: str | None = None,
    phase: UniversalPhase | str | None = None,
    budget_tokens: int | None = None,
    record: bool = True,
    surface: Surface | None = None,
) -> ContextPack:
    """A token-budgeted pack of the memories that matter for a file or a question.

    ``surface`` names the front end that delivers the pack: its renderer makes ``pack.text``
    and the budget is counted on that text (docs/retrieval.md "Context packs").
    """
    from engram.retrieval import ContextRequest, Surface

    if not file and not (query and query.strip()):
        raise InvalidInput("context needs a file or a query")
    budget = (
        budget_tokens
        if budget_tokens is not None
        else (engine.config.retrieval.default_budget_tokens)
    )
    if not isinstance(budget, int) or budget <= 0:
        raise InvalidInput(f"budget must be a positive number of tokens, got {budget}")
    rel = engine.relative(file) if file else None
    parsed_phase = parse_phase(phase)
    request = ContextRequest(
        file=rel,
        symbol=symbol or None,
        query=query.strip() if query else None,
        phase=parsed_phase,
        budget_tokens=budget,
        surface=surface or Surface.TEXT,
    )
    pack = engine.retriever.context(request)
    if record and not engine.read_only:
        # index-tier items are only "ask about" pointers: the agent did not read them
        ids = [item.memory.id for item in pack.items if item.tier != "index"]
        if ids:
            _record_access_quietly(engine, ids)
    return pack


def record_access(engine: Engine, ids: Sequence[str]) -> None:
    """Memories were handed out: count one use each, now (docs/trust.md: usage may rank
    within a cap; it is not confidence, never moves the state or the decay clock). A
    read notes its uses instead (``Engine.uses``), written later."""
    engine.count_uses(dict.fromkeys(ids, 1))


def credit_session(engine: Engine, ids: Sequence[str], session_id: str) -> int:
    """The session these memories were handed to succeeded: the session is recorded in
    their provenance, once each. Not confidence: only a person's confirm verifies."""
    if not ids:
        return 0
    engine.check_writable()
    with engine.write_lock, engine.store.locked():  # as record_access
        found = engine.store.get_many(list(dict.fromkeys(ids)))
        changed = [
            attrs.evolve(
                m,
                provenance=attrs.evolve(
                    m.provenance,
                    confirmed_by_sessions=[*m.provenance.confirmed_by_sessions, session_id],
                ),
            )
            for m in found
            if session_id not in m.provenance.confirmed_by_sessions
        ]
        if changed:
            engine.store.update(changed)
            engine.mirror(changed)
    return len(changed)


def _record_access_quietly(engine: Engine, ids: Sequence[str]) -> None:
    engine.uses.add(ids)  # written after the reply (app.usage.PendingUses)


__all__ = ["MAX_K", "context", "credit_session", "record_access", "search", "search_code"]
