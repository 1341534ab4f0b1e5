"""Indexing: the code graph, code-search chunks, history sync and the cold-start seed.

The CLI's ``engram index`` and the language server (its own keyword-only pass at start-up,
and the background child, which is ``engram index``) run these steps; docs/codegraph.md and
docs/lsp.md say what each costs and where it runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engram.app.history_sync import sync_history
from engram.app.inputs import parse_type
from engram.app.portability import import_file
from engram.app.remember import ProgressCallback, remember_many
from engram.errors import EngramError, InvalidInput
from engram.lifecycle import stable_memory_id
from engram.model import Memory, MemoryScope, MemorySource

if TYPE_CHECKING:
    from engram.app.engine import Engine
    from engram.codegraph import IndexReport
    from engram.codegraph.search import ChunkIndexReport

log = logging.getLogger(__name__)

#: Agent rule files read on ``engram index`` (workspace-relative).
RULE_FILES = ("CLAUDE.md", "AGENTS.md", ".cursorrules", ".github/copilot-instructions.md")

#: ``progress(done, total, path)`` per file.
IndexProgress = Callable[[int, int, str], None]


def index(
    engine: Engine,
    progress: IndexProgress | None = None,
    cancel: Callable[[], bool] | None = None,
    *,
    chunks: bool = True,
    history: bool = True,
    embed_chunks: bool = True,
) -> IndexReport:
    """Bring the code graph (and, with ``chunks``, the code-search chunks) up to date.

    ``embed_chunks=False`` stores keyword-only chunks (the language server does this
    and leaves embedding to a child process, so the model's memory never lands in the
    editor's server). With ``history``, git history is mined afterwards and the memories
    follow it (:func:`engram.app.history_sync.sync_history`). Returns the graph's report.
    """
    report = engine.codegraph.index(progress=progress, cancel=cancel)
    if chunks and not report.interrupted:
        index_chunks(engine, progress=progress, cancel=cancel, embed=embed_chunks)
    if history and not report.interrupted and not engine.read_only:
        sync_history(engine, cancel=cancel)
    return report


def index_chunks(
    engine: Engine,
    progress: IndexProgress | None = None,
    cancel: Callable[[], bool] | None = None,
    *,
    embed: bool = True,
) -> ChunkIndexReport:
    """Chunk and embed changed files for code search (after :func:`index`).

    ``embed=False`` stores keyword-only chunks quickly; the next run with embeddings
    re-embeds them (their model id differs).
    """
    from engram.codegraph import CodeSearch

    # keyword-only: never touch engine.code_search, building it loads the embedding model
    searcher = (
        engine.code_search
        if embed
        else CodeSearch(engine.workspace, engine.codegraph, None, location=engine.store_location)
    )
    try:
        return searcher.index_chunks(progress=progress, cancel=cancel)
    finally:
        if searcher is not engine.code_search_if_open:
            searcher.close()


def seed_workspace(engine: Engine, report: IndexReport | None = None) -> dict[str, int]:
    """Cold start (docs/lifecycle.md): store what a fresh workspace already tells us.

    Project facts found by the code graph's manifest scan (language, frameworks, test
    runner) and the rules in CLAUDE.md / AGENTS.md / .cursorrules become memories, each
    with a stable id so re-indexing never duplicates them or undoes a user's correction.
    """
    if engine.read_only:
        return {"facts": 0, "rules": 0}
    facts = list(report.project_facts) if report is not None else []
    seeded: list[Memory] = []
    for fact in facts:
        try:
            mtype = parse_type(fact.memory_type)
        except InvalidInput:
            continue
        seeded.append(
            Memory(
                id=stable_memory_id(f"fact:{fact.key}:{fact.content}"),
                content=fact.content,
                type=mtype,
                source=MemorySource.OBSERVER_INFERRED,
                scope=MemoryScope.GLOBAL,
                confidence=float(fact.confidence),
                related_files=[fact.evidence] if fact.evidence else [],
                tags=["project"],
                extra={"fact_key": fact.key},
            )
        )
    existing = {m.id for m in engine.store.get_many([m.id for m in seeded])}
    new_facts = [m for m in seeded if m.id not in existing]
    if new_facts:
        remember_many(engine, new_facts)
    rules = 0
    for rel in RULE_FILES:
        path = engine.workspace.root / rel
        if path.is_file():
            try:
                rules += import_file(engine, path).added
            except EngramError as exc:
                log.info("skipped %s: %s", rel, exc)
    return {"facts": len(new_facts), "rules": rules}


def embed_missing(engine: Engine, progress: ProgressCallback | None = None) -> dict[str, Any]:
    """Embed memories that have no vector for the current model (e.g. after a switch)."""
    from engram.embed import memory_embedding_text

    embedder = engine.embedder
    store = engine.store
    count = int(store.count())
    if embedder is None:
        return {"count": count, "embedded": 0, "model": None}
    missing = list(store.missing_vectors(embedder.model_id))
    embedded = 0
    batch = max(1, engine.config.embed.batch_size)
    for start in range(0, len(missing), batch):
        chunk = missing[start : start + batch]
        vectors = embedder.embed([memory_embedding_text(m) for m in chunk])  # outside the lock
        with engine.write_lock:
            store.update(chunk, vectors, embedder.model_id)
            engine.mirror()
        embedded += len(chunk)
        if progress is not None:
            progress("embedding", embedded, len(missing))
    return {"count": count, "embedded": embedded, "model": embedder.model_id}


def rebuild_digest(engine: Engine) -> int:
    """Rewrite the agents' digest from the store (it was stale or missing)."""
    with engine.write_lock:
        store = engine.store
        memories = store.list(engine.filter(include_deprecated=True))
        # the version those memories were read at, not whatever a concurrent writer made since
        version = None if store.remote else store.seen_version
        return int(engine.digest.rebuild(memories, version))


__all__ = [
    "RULE_FILES",
    "IndexProgress",
    "embed_missing",
    "index",
    "index_chunks",
    "rebuild_digest",
    "seed_workspace",
]
