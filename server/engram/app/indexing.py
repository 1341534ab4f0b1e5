"""Indexing: the code graph, code-search chunks, history sync and the cold-start seed.

The CLI's ``engram index`` and the language server (its own keyword-only pass at start-up,
and the background child, which is ``engram index``) run these steps; docs/codegraph.md and
docs/lsp.md say what each costs and where it runs.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from engram.app.history_sync import SyncAhead, mining_ahead, sync_history
from engram.app.inputs import parse_type
from engram.app.portability import import_file
from engram.app.remember import remember_many
from engram.app.state import EngineState
from engram.app.trust import SEEDED_CAUSE, relabel_seeded
from engram.errors import EngramError, InvalidInput
from engram.lifecycle import stable_memory_id
from engram.lifecycle.trust import Actor
from engram.model import Memory, MemoryScope, MemorySource, to_jsonable
from engram.progress import Progress

if TYPE_CHECKING:
    from engram.app.engine import Engine
    from engram.app.history_sync import HistorySyncReport
    from engram.app.index_lock import IndexHolder
    from engram.app.team import TeamSyncReport
    from engram.codegraph import CodeSearch, IndexReport
    from engram.codegraph.search import ChunkIndexReport, PrefillStored
    from engram.jsontypes import JsonObject

log = logging.getLogger(__name__)

#: ``engine_state.json`` key: a whole graph pass completed here. ``remember --symbol`` (and
#: the MCP tool) re-index just the file they anchor, so a graph with files in it is not yet
#: one that knows who references a symbol (``engram impact`` after them said "0 references").
GRAPH_INDEXED = "graph_indexed"

#: Agent rule files read on ``engram index`` (workspace-relative).
RULE_FILES = ("CLAUDE.md", "AGENTS.md", ".cursorrules", ".github/copilot-instructions.md")


@attrs.frozen
class IndexOptions:
    """Which steps an index run takes (the CLI takes all; the language server fewer)."""

    chunks: bool = True
    #: keyword-only chunks when False (the language server leaves the model to a child)
    embed_chunks: bool = True
    #: project facts and agent rule files as memories (cold start)
    seed: bool = True
    history: bool = True
    #: read the team folder (when ``team.auto_sync`` is on)
    team: bool = True
    #: embed memories that lack a vector for the current model
    embed_memories: bool = True


#: What the language server's own start-up index does (docs/lsp.md): code graph and
#: keyword-only chunks; history only when no background ``engram index`` child follows.
LSP_INDEX = IndexOptions(embed_chunks=False, seed=False, team=False, embed_memories=False)


@attrs.define
class IndexRun:
    """What one run of :func:`run_index` did, step by step (``None``: not run)."""

    code: IndexReport
    chunks: ChunkIndexReport | None = None
    seeded: dict[str, int] | None = None
    history: HistorySyncReport | None = None
    team: TeamSyncReport | None = None
    memories: JsonObject | None = None

    def to_dict(self) -> JsonObject:
        """The JSON of ``engram index --json`` (docs/cli.md)."""
        out: JsonObject = {"code": to_jsonable(self.code)}
        if self.chunks is not None:
            out["chunks"] = to_jsonable(self.chunks)
        if self.seeded is not None:
            out["seeded"] = self.seeded
        if self.history is not None:
            out["history"] = _history_json(self.history)
        if self.team is not None:
            out["team"] = self.team.to_dict()
        if self.memories is not None:
            out["memories"] = self.memories
        return out


#: The pipeline's stages, named as people read them: every progress message of a stage is
#: its name, or its name, ": " and what it is at, so a front end can show one progress
#: display per stage (``engram index`` on stderr, docs/cli.md) or the message as it is.
CODE = "indexing code"
CHUNKS = "chunking and embedding code"
HISTORY = "mining git history"
EMBEDDING = "embedding memories"
STAGES = (CODE, CHUNKS, HISTORY, EMBEDDING)


def index_phases() -> list[tuple[str, int]]:
    """The phases of one index as a single bar goes through them (``engram.progress.PhaseBar``:
    the editor's ``$/progress``), each with where its band of the percentage starts: the
    parse, resolution and closure of the graph, then the rest (rough shares, not measured
    per repository; the bar only has to move forward and say which phase it is in)."""
    from engram.codegraph.graph import CLOSURE, RESOLVING  # the graph, only when it runs

    return [
        (CODE, 0),
        (f"{CODE}: {RESOLVING}", 55),
        (f"{CODE}: {CLOSURE}", 75),
        (CHUNKS, 80),
        (HISTORY, 88),
        (EMBEDDING, 96),
    ]


def run_index(
    engine: Engine,
    options: IndexOptions = IndexOptions(),
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    *,
    wait: bool = True,
    on_wait: Callable[[IndexHolder], None] | None = None,
) -> IndexRun:
    """The one index pipeline: ``engram index`` (and so the language server's background
    child) and the language server's own start-up pass both run it, with their options.

    Code graph, the cold-start seed, code-search chunks, git history (memories follow
    renames and changed code; its steps after mining run beside the chunks), the team
    folder, then memories missing a vector. A cancelled graph pass stops the run after it.

    One run per workspace at a time, across processes (``app.index_lock``): a second one
    waits for the first (``on_wait`` hears who runs it) and then indexes what changed
    since; without ``wait`` it raises :class:`~engram.app.index_lock.IndexBusy`. A run
    cancelled while it waits indexed nothing (its report says ``interrupted``).
    """
    from engram.app.index_lock import index_lock

    asked = cancel

    def stop() -> bool:
        """The caller's cancel, or the process stopping (``Engine.stopping``)."""
        return engine.stopping.is_set() or (asked is not None and asked())

    with index_lock(engine.workspace, wait=wait, cancel=stop, on_wait=on_wait) as held:
        if not held:
            from engram.codegraph import IndexReport

            return IndexRun(IndexReport(interrupted=True))
        try:
            run = _run_index(engine, options, progress, stop)
        finally:
            if options.embed_chunks or options.embed_memories:
                # the workspace engine lives on for its idle exit: the batch session's
                # arena (~250 MB after a cold index) need not (docs/engine.md, "Memory")
                engine.release_batch_model()
    if was_interrupted(run):
        why = "the process is stopping" if engine.stopping.is_set() else "cancelled"
        log.info("index of %s interrupted (%s): what it stored is kept, the next run resumes",
                 engine.workspace.root, why)  # fmt: skip
    return run


def was_interrupted(run: IndexRun) -> bool:
    """Whether a step of ``run`` stopped before its end (cancelled, the process stopping)."""
    history = run.history
    return (
        run.code.interrupted
        or (run.chunks is not None and run.chunks.interrupted)
        or (history is not None and (history.interrupted or (
            history.mined is not None and history.mined.reason == "cancelled")))
    )  # fmt: skip


def _run_index(
    engine: Engine,
    options: IndexOptions,
    progress: Progress | None,
    cancel: Callable[[], bool],
) -> IndexRun:
    """:func:`run_index`'s steps, under the workspace's index lock; a cancel ends the run
    after the step it stopped (the steps after it would each run to their end)."""
    from engram.app.team import sync_team

    def stage(name: str) -> Progress | None:
        if progress is None:
            return None

        def report(done: int, total: int | None, message: str = "") -> None:
            progress(done, total, f"{name}: {message}" if message else name)

        return report

    # keyword-only chunks are cut by the parse workers and written while they parse
    # (CodeSearch.prefill); index_chunks after the graph then cuts only the files they
    # did not; git history is mined meanwhile (it needs git only), and what follows mining
    # (it needs the graph, not the chunks) runs in a thread once the graph is built, beside
    # the chunk writer's last batches and the chunk pass (docs/codegraph.md "The whole
    # cold index", "A fifth look")
    keyword = _keyword_search(engine) if options.chunks and not options.embed_chunks else None
    mined = mining_ahead(engine, cancel) if options.history else None
    synced: SyncAhead | None = None
    try:
        prefill = keyword.prefill() if keyword is not None and not engine.read_only else None
        graphed: IndexReport | None = None
        seeded: dict[str, int] | None = None
        try:
            graphed = engine.codegraph.index(progress=stage(CODE), cancel=cancel, chunks=prefill)
            if not graphed.interrupted and not engine.read_only:
                # the whole tree is in the graph now, not only remember's
                EngineState.of(engine.workspace).set(GRAPH_INDEXED, True)
                # the seed and the history steps write memories: the seed first, as before
                if options.seed:
                    seeded = seed_workspace(engine, graphed)
                if mined is not None:
                    synced = SyncAhead(engine, mined, cancel)
        finally:
            if prefill is not None and keyword is not None:
                if graphed is not None and graphed.interrupted:
                    # a stop during resolution: the chunk writer's last batches are not
                    # waited for; the store closes when the writer is done (docs/engine.md
                    # "Faults")
                    prefill.close(abandon=True, after=keyword.close)
                    keyword = None
                else:
                    prefill.close()
        run = IndexRun(graphed, seeded=seeded)
        _log_peak_rss(CODE)
        if run.code.interrupted:
            return run
        if options.chunks:
            run.chunks = index_chunks(
                engine, progress=stage(CHUNKS), cancel=cancel, embed=options.embed_chunks,
                searcher=keyword,
                prefilled=prefill.stored_alone() if prefill is not None else None,
            )  # fmt: skip
            if prefill is not None:
                run.chunks.files_chunked += prefill.files
                run.chunks.chunks += prefill.chunks
            _log_peak_rss(CHUNKS)
            if cancel():
                if synced is not None:  # it heard the cancel too: what it did is reported
                    run.history, synced = synced.stop(), None
                return run
        if keyword is not None:
            keyword.close()
        if options.history and not engine.read_only:
            if synced is not None:
                run.history, synced = synced.result(stage(HISTORY)), None
            else:  # nothing mined ahead (no git history): the stage says why
                run.history = sync_history(engine, stage(HISTORY), cancel, mined)
            _log_peak_rss(HISTORY)
            if cancel():
                return run
    finally:
        if keyword is not None:
            keyword.close()
        if synced is not None:
            synced.stop()
        if mined is not None:
            mined.stop()
    if options.team and engine.config.team.auto_sync and not engine.read_only:
        try:
            run.team = sync_team(engine)
        except InvalidInput as exc:  # a repository's team.dir outside it: the rest stands
            log.warning("team folder not read: %s", exc)
    if options.embed_memories and not engine.read_only:
        run.memories = embed_missing(engine, progress=stage(EMBEDDING))
        _log_peak_rss(EMBEDDING)
    return run


def _log_peak_rss(stage: str) -> None:
    """Debug-log the process's peak RSS so far after a stage (issue 18: which stage of a
    cold index sets the peak; ``ENGRAM_DEBUG=1 engram index`` shows it, no profiler)."""
    if not log.isEnabledFor(logging.DEBUG) or sys.platform == "win32":
        return
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    mib = peak / 2**20 if sys.platform == "darwin" else peak / 2**10
    log.debug("peak RSS after %s: %.0f MiB", stage, mib)


def index(
    engine: Engine,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    *,
    chunks: bool = True,
    history: bool = True,
    embed_chunks: bool = True,
) -> IndexReport:
    """The code part of :func:`run_index` (graph, chunks, history); the graph's report."""
    options = IndexOptions(
        chunks=chunks,
        embed_chunks=embed_chunks,
        seed=False,
        history=history,
        team=False,
        embed_memories=False,
    )
    return run_index(engine, options, progress, cancel).code


def partly_indexed(report: IndexReport) -> list[str]:
    """The files of ``report`` a limit kept from being read in full (nested deeper than
    the graph's queries go: docs/codegraph.md "Pathological files"), with why."""
    from engram.codegraph.extract import DEPTH_NOTE

    return [note for note in report.notes if DEPTH_NOTE in note]


def graph_summary(report: IndexReport) -> str:
    data = report.to_dict()
    keys = ("files_seen", "files_indexed", "files_unchanged", "nodes", "edges", "seconds")
    parts = []
    for key in keys:
        value = data.get(key)
        if isinstance(value, float):
            parts.append(f"{key.replace('_', ' ')} {value:.1f}")
        elif isinstance(value, int):
            parts.append(f"{key.replace('_', ' ')} {value}")
    return ", ".join(parts)


def _history_json(report: HistorySyncReport) -> JsonObject:
    if report.skipped:
        return {"skipped": report.skipped}
    followed = {
        "renamed": report.renamed,
        "relocated": report.relocated,
        "code_changed": report.code_changed,
        "stale_marked": report.stale_marked,
        "unstaled": report.unstaled,
        "coaccess_seeded": report.coaccess_seeded,
    }
    data = to_jsonable(report.mined)
    return {**(data if isinstance(data, dict) else {}), "memories": followed}


def index_chunks(
    engine: Engine,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    *,
    embed: bool = True,
    searcher: CodeSearch | None = None,
    prefilled: PrefillStored | None = None,
) -> ChunkIndexReport:
    """Chunk and embed changed files for code search (after :func:`index`).

    ``embed=False`` stores keyword-only chunks quickly; the next run with embeddings
    re-embeds them (their model id differs). ``searcher``: the keyword-only one the
    caller holds (and closes); ``prefilled``: what its prefill stored into an empty table.
    """
    if searcher is not None:
        return searcher.index_chunks(progress=progress, cancel=cancel, prefilled=prefilled)
    # keyword-only: never touch engine.code_search, building it loads the embedding model
    searcher = engine.code_search if embed else _keyword_search(engine)
    try:
        return searcher.index_chunks(progress=progress, cancel=cancel)
    finally:
        if searcher is not engine.code_search_if_open:
            searcher.close()


def _keyword_search(engine: Engine) -> CodeSearch:
    """A code search without a model (building ``engine.code_search`` loads it)."""
    from engram.codegraph import CodeSearch

    return CodeSearch(engine.workspace, engine.codegraph, None, location=engine.store_location)


def seed_workspace(engine: Engine, report: IndexReport | None = None) -> dict[str, int]:
    """Cold start (docs/lifecycle.md): store what a fresh workspace already tells us.

    Project facts found by the code graph's manifest scan (language, frameworks, test
    runner) and the rules in CLAUDE.md / AGENTS.md / .cursorrules become memories, each
    with a stable id so re-indexing never duplicates them or undoes a user's correction.
    Both are created by the system naming the file they were read from, with the source
    ``repository``, and so wait in review (``lifecycle.trust.admit``): a clone's rules file
    and its manifests are the repository's word, not the person's (a package.json's
    ``"test": "curl … | sh"`` was the fact "Tests run with `curl … | sh`.", active;
    docs/trust.md "Who stands behind a new memory", docs/security.md "A repository's rules
    files").
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
                source=MemorySource.REPOSITORY,
                scope=MemoryScope.GLOBAL,
                confidence=float(fact.confidence),
                related_files=[fact.evidence] if fact.evidence else [],
                tags=["project"],
                extra={"fact_key": fact.key},
            )
        )
    existing = {m.id for m in engine.store.get_many([m.id for m in seeded])}
    if existing:  # facts an older index made as the observer's say the repository's now
        relabel_seeded(engine, existing, cause="engram index")
    new_facts = [m for m in seeded if m.id not in existing]
    by_file: dict[str, list[Memory]] = {}
    for memory in new_facts:
        by_file.setdefault(memory.related_files[0] if memory.related_files else "", []).append(
            memory
        )
    for manifest, read in by_file.items():
        cause = f"{SEEDED_CAUSE}{manifest}" if manifest else "engram index"
        remember_many(engine, read, actor=Actor.system(), cause=cause)
    rules = 0
    for rel in RULE_FILES:
        path = engine.workspace.root / rel
        if path.is_file():
            try:
                rules += import_file(engine, path, seeded=True).added
            except EngramError as exc:
                log.info("skipped %s: %s", rel, exc)
    return {"facts": len(new_facts), "rules": rules}


def embed_missing(engine: Engine, progress: Progress | None = None) -> JsonObject:
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
        texts = [memory_embedding_text(m) for m in chunk]
        vectors = embedder.embed(texts)  # outside the lock
        with engine.write_lock, store.locked():
            # each record as the store holds it now, with the vector of the text it still
            # holds: the records read before the embedding were written back whole, so a
            # flag or confirm another process made while a batch embedded was undone
            current = {m.id: m for m in store.get_many([m.id for m in chunk])}
            keep = [
                i
                for i, m in enumerate(chunk)
                if m.id in current and memory_embedding_text(current[m.id]) == texts[i]
            ]
            if keep:
                store.update([current[chunk[i].id] for i in keep], vectors[keep], embedder.model_id)
                engine.mirror()
        embedded += len(keep)
        if progress is not None:
            progress(start + len(chunk), len(missing), "embedding")
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
    "LSP_INDEX",
    "RULE_FILES",
    "IndexOptions",
    "IndexRun",
    "embed_missing",
    "graph_summary",
    "index",
    "index_chunks",
    "rebuild_digest",
    "run_index",
    "seed_workspace",
]
