"""Remember: the write path every new memory takes (CLI, code action, MCP tool, observer).

The rules, in order: the text is validated and secrets are redacted (``lifecycle``), paths
are confined to the workspace, an anchor gets the hash of its lines, the contextual text is
embedded (outside the writer lock: it is the slow part), contradictions with stored
memories are linked for review and never merged, near-duplicates merge into the existing
memory, and the batch is written once (docs/lifecycle.md, docs/architecture.md "Data flow").

Long on purpose: the write path and the contradiction checks it defers (queued with the
write under the same lock, judged after the reply, resumed after a stop) share the
re-read-under-the-lock rule; apart, the two halves could disagree on what a conflict is.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from engram.app.anchors import anchor_for
from engram.app.inputs import (
    parse_scope,
    parse_source,
    parse_type,
    validate_symbol,
    validate_text,
)
from engram.app.records import embed_memories
from engram.errors import InvalidInput
from engram.lifecycle import DuplicateMatch, find_duplicate, merge_memories, redact_secrets
from engram.lifecycle import trust as rules
from engram.lifecycle.contradictions import (
    Contradiction,
    judge_pairs,
    rank,
    screen_contradictions,
)
from engram.lifecycle.trust import Actor
from engram.model import (
    AuditEntry,
    CodeAnchor,
    Memory,
    MemoryScope,
    MemorySource,
    MemoryType,
    Provenance,
    check_memory_id,
)
from engram.progress import Progress
from engram.store.pending import PendingCheck

if TYPE_CHECKING:
    from concurrent.futures import Future
    from datetime import datetime

    import numpy as np
    import numpy.typing as npt

    from engram.app.engine import Engine
    from engram.jsontypes import JsonObject
    from engram.store import MemoryStore

    Vectors = npt.NDArray[np.float32]

log = logging.getLogger(__name__)

#: Candidates fetched per search when looking for a near-duplicate.
DUPLICATE_CANDIDATES = 8
#: At most this many contradictions are linked per new memory (the closest in words).
CONFLICT_LIMIT = 3


@attrs.define
class RememberResult:
    """What :func:`remember` did: the stored record, whether it merged into an existing
    memory, and which kinds of secret were redacted (to tell the user)."""

    memory: Memory
    merged: bool = False
    redactions: list[str] = attrs.field(factory=list)
    duplicate_reason: str | None = None
    #: ``"m-…: reason"`` for each existing memory this one contradicts (both kept, linked
    #: by ``conflicts_with``; this one goes to review)
    conflicts: list[str] = attrs.field(factory=list)

    def to_dict(self) -> JsonObject:
        return {
            "id": self.memory.id,
            "merged": self.merged,
            "redactions": list(self.redactions),
            "citation": self.memory.citation(),
            "conflicts": list(self.conflicts),
        }


def remember(
    engine: Engine,
    content: str,
    *,
    type: MemoryType | str = "gotcha",
    source: MemorySource | str = "user_taught",
    file: str | None = None,
    symbol: str | None = None,
    start_line: int | None = None,
    end_line: int | None = None,
    allow_missing: bool = False,
    tags: Sequence[str] = (),
    related_files: Sequence[str] = (),
    scope: MemoryScope | str | None = None,
    confidence: float | None = None,
    session_id: str | None = None,
    needs_review: bool = False,
    extra: dict[str, object] | None = None,
    actor: Actor | None = None,
    cause: str = "",
) -> RememberResult:
    """Store one memory (redacted, merged into a near-duplicate when there is one).

    Lines are 0-based and inclusive, as in LSP; the CLI converts from 1-based. The anchor
    is validated (``app.anchors``): a missing file only with ``allow_missing``. ``actor``:
    who stands behind it when the front end knows (an agent's LSP client), else read from
    ``source`` (docs/trust.md).
    """
    mtype = parse_type(type)
    msource = parse_source(source)
    mscope = (
        parse_scope(scope)
        if scope is not None
        else (MemoryScope.MODULE if file else MemoryScope.GLOBAL)
    )
    if confidence is not None and not (0.0 <= confidence <= 1.0):
        raise InvalidInput(f"confidence must be between 0 and 1, got {confidence}")
    symbol = validate_symbol(symbol)
    if file is None and (symbol or start_line is not None):
        raise InvalidInput("a symbol or line range needs a file (--file)")
    text = validate_text(content, engine.config.safety.max_content_chars)
    corrects = (extra or {}).get("supersedes")
    if file and isinstance(corrects, str) and symbol is None and start_line is None:
        anchors = [_correction_anchor(engine, corrects, file, allow_missing=allow_missing)]
    else:
        anchors = (
            [anchor_for(engine, file, symbol, start_line, end_line, allow_missing=allow_missing)]
            if file
            else []
        )
    now = engine.clock()
    memory = Memory(
        created_at=now,
        updated_at=now,
        last_accessed_at=now,
        valid_from=now,
        content=text,
        type=mtype,
        source=msource,
        scope=mscope,
        confidence=confidence if confidence is not None else default_confidence(msource),
        tags=list(tags),
        related_files=list(related_files),
        anchors=anchors,
        provenance=Provenance(session_id=session_id, commit_sha=_head_commit_quietly(engine)),
        needs_review=needs_review,
        extra=dict(extra or {}),
    )
    return remember_many(engine, [memory], actor=actor, cause=cause)[0]


def _correction_anchor(
    engine: Engine, corrected_id: str, file: str, *, allow_missing: bool
) -> CodeAnchor:
    """Where a correction points when it names only a file: where the memory it corrects
    pointed in that file, checked against today's code (its symbol, else its lines), else
    the file alone. VS Code's Edit… sends the file and ``supersedes`` only, and the corrected
    text of a function's gotcha showed at line 1 (docs/trust.md "Anchors"). The file is
    read once for the way that holds (it was read for the file alone first, every time)."""
    rel = engine.relative(file)
    old = engine.store.get(corrected_id)
    same = next((a for a in old.anchors if a.file == rel), None) if old else None
    tries: list[tuple[str | None, int | None, int | None]] = []
    if same is not None and same.symbol:
        tries.append((same.symbol, None, None))
    if same is not None and same.start_line is not None:
        tries.append((None, same.start_line, same.end_line))
    for name, start, end in tries:
        try:
            return anchor_for(engine, file, name, start, end, allow_missing=allow_missing)
        except InvalidInput:  # the symbol went or the file shrank: the next way, then the file
            continue
    return anchor_for(engine, file, allow_missing=allow_missing)


def remember_many(
    engine: Engine,
    memories: Sequence[Memory],
    progress: Progress | None = None,
    *,
    actor: Actor | None = None,
    cause: str = "",
) -> list[RememberResult]:
    """The remember pipeline for a batch: one embedding call, one store write.

    Each new memory enters through the trust model (``lifecycle.trust.admit``): who stands
    behind it (``actor``, else read from its source) decides whether it starts active or
    in review and caps its confidence (docs/trust.md). A near-duplicate is a ``Restate``.

    The check and the write see the same store: a memory another process stored after the
    check (its keyword and vector search) and before the write was never compared, and a
    near-duplicate of it was stored beside it, or a contradiction of it unlinked. So the
    write is made, under the store's writer lock, only when the store is still at the
    version the check read; otherwise the batch is checked again (docs/storage.md).
    """
    engine.check_writable()
    prepared: list[tuple[Memory, list[str]]] = [prepare(engine, m) for m in memories]
    if not prepared:
        return []
    now = engine.clock()
    stamped = [attrs.evolve(m, updated_at=now) for m, _ in prepared]
    early = _EarlyKeywordSearch.start(engine, stamped)
    vectors = embed_memories(engine, stamped, progress)
    with engine.write_lock:
        store = engine.store
        for _ in range(OPTIMISTIC_ROUNDS):
            seen = store.version
            plan = _plan(engine, stamped, prepared, vectors, early, actor, cause, now)
            early = None  # a second round searches again
            with store.locked():
                if store.version == seen:
                    checks = _commit(engine, plan, cause)
                    break
        else:
            # other processes kept writing between the check and the write: check under
            # the store's writer lock, where nobody else writes
            with store.locked():
                plan = _plan(engine, stamped, prepared, vectors, None, actor, cause, now)
                checks = _commit(engine, plan, cause)
    if engine.defer is not None:
        for check in checks:
            engine.defer(functools.partial(judge_check, check=check))
    # results hold the final state of merged records (a later one may merge again)
    final = {m.id: m for m in [*plan.to_add, *plan.to_update.values()]}
    return [attrs.evolve(r, memory=final.get(r.memory.id, r.memory)) for r in plan.results]


#: How often remember checks for duplicates and contradictions and then finds, under the
#: writer lock, that another process wrote since it checked, before it checks under the lock.
OPTIMISTIC_ROUNDS = 2


@attrs.define
class _Plan:
    """What a remember batch writes: computed from the store as it was at one version."""

    to_add: list[Memory] = attrs.field(factory=list)
    add_vectors: list[Vectors | None] = attrs.field(factory=list)
    to_update: dict[str, Memory] = attrs.field(factory=dict)
    entries: list[AuditEntry] = attrs.field(factory=list)
    results: list[RememberResult] = attrs.field(factory=list)
    #: (new memory's id, the pairs the judges read after the reply)
    deferred: list[tuple[str, list[tuple[str, float]]]] = attrs.field(factory=list)


def _plan(
    engine: Engine,
    stamped: Sequence[Memory],
    prepared: Sequence[tuple[Memory, list[str]]],
    vectors: Vectors | None,
    early: _EarlyKeywordSearch | None,
    actor: Actor | None,
    cause: str,
    now: datetime,
) -> _Plan:
    """Each memory of the batch checked against the store (duplicates, contradictions) and
    admitted or merged: the writes, not yet made. A memory another process stores after
    this check is not in it: :func:`remember_many` writes only if the store did not move."""
    from engram.app import trust as app_trust

    plan = _Plan()
    batch_pool: list[Memory] = []
    for index, (memory, (_, kinds)) in enumerate(zip(stamped, prepared, strict=True)):
        who = actor or app_trust.actor_for_source(engine, memory.source)
        vector = vectors[index] if vectors is not None else None
        keyword_ids = early.result(memory) if early is not None else None
        candidates = _duplicate_candidates(
            engine, memory, vector, batch_pool, plan.to_update, keyword_ids
        )
        # "the timeout is 30s" / "… 90s" read as near-duplicates by text ratio, but
        # merging would keep one value and lose the other: contradictions never merge
        conflicts, later = _contradictions(engine, memory, candidates)
        # where this restatement would stand on its own decides what it may change
        standing = rules.state_of(rules.admit(memory, who, now=now).memory)
        match, conflicts, later = _duplicate(engine, memory, candidates, conflicts, later, standing)
        if match is not None:
            combined = merge_memories(match.memory, memory, now=now)
            restate = rules.Restate(actor=who, cause=cause, merged=combined, standing=standing)
            step = rules.transition(match.memory, restate, now=now)
            merged = step.memory
            plan.entries.append(step.entry)
            if any(m.id == merged.id for m in plan.to_add):
                plan.to_add = [merged if m.id == merged.id else m for m in plan.to_add]
            else:
                plan.to_update[merged.id] = merged
            batch_pool = [merged if m.id == merged.id else m for m in batch_pool]
            plan.results.append(RememberResult(merged, True, kinds, match.reason))
        else:
            memory, notes = link_contradictions(
                engine, memory, conflicts, plan.to_update, plan.entries, cause=cause,
                record_self=False,
            )  # fmt: skip
            admitted = rules.admit(memory, who, now=now, cause=cause)
            memory = admitted.memory
            plan.entries.append(admitted.entry)
            plan.to_add.append(memory)
            plan.add_vectors.append(vector)
            batch_pool.append(memory)
            plan.results.append(RememberResult(memory, False, kinds, conflicts=notes))
            if later and len(conflicts) < CONFLICT_LIMIT:
                plan.deferred.append((memory.id, [(o.id, overlap) for o, overlap in later]))
    new_ids = {m.id for m in plan.to_add}
    for mid in [mid for mid in plan.to_update if mid in new_ids]:
        # a back link to a memory of this same batch: fold it into the new record
        linked = plan.to_update.pop(mid)
        plan.to_add = [linked if m.id == mid else m for m in plan.to_add]
    return plan


def _commit(engine: Engine, plan: _Plan, cause: str) -> list[PendingCheck]:
    """Write ``plan`` (under the writer lock) and the contradiction checks it owes."""
    to_update = list(plan.to_update.values())
    _write(engine, engine.store, plan.to_add, plan.add_vectors, to_update, plan.entries)
    checks = [PendingCheck(mid, tuple(pairs), cause) for mid, pairs in plan.deferred]
    if checks:  # owed until judged, even if this engine stops first (resume_checks)
        engine.pending_checks.add(checks)
    return checks


def prepare(engine: Engine, memory: Memory) -> tuple[Memory, list[str]]:
    """Validate, redact and normalise one memory before it is stored."""
    try:
        check_memory_id(memory.id)  # every path in ends here (docs/security.md)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    text = validate_text(memory.content, engine.config.safety.max_content_chars)
    redaction = redact_secrets(text)
    content = redaction.text
    if content != memory.content and memory.citation_text and redaction.redacted:
        citation_text = ""  # re-derived from the redacted content by __attrs_post_init__
    else:
        # a custom citation (imports) may carry a secret of its own
        citation_text = redact_secrets(memory.citation_text).text if memory.citation_text else ""
    flags = list(dict.fromkeys([*memory.flags, "redacted"])) if redaction.redacted else memory.flags
    files = [engine.relative(f) for f in memory.related_files]
    anchors = [attrs.evolve(a, file=engine.relative(a.file)) for a in memory.anchors]
    provenance = memory.provenance
    if provenance.author is None and engine.store.remote:
        # a shared store holds a whole team's memories: each says who wrote it
        provenance = attrs.evolve(provenance, author=engine.author())
    prepared = attrs.evolve(
        memory,
        content=content,
        citation_text=citation_text,
        flags=flags,
        related_files=list(dict.fromkeys(files)),
        anchors=anchors,
        tags=list(dict.fromkeys(t.strip() for t in memory.tags if t and t.strip())),
        provenance=provenance,
    )
    return prepared, redaction.kinds


def link_contradictions(
    engine: Engine,
    memory: Memory,
    found: Sequence[Contradiction],
    pending: dict[str, Memory],
    entries: list[AuditEntry] | None = None,
    *,
    cause: str = "",
    record_self: bool = True,
) -> tuple[Memory, list[str]]:
    """Link ``memory`` to the existing memories it contradicts (lifecycle.contradictions).

    Both are kept: ``memory`` goes to review with a ``conflicts_with`` relation to each,
    and each gets the relation back (in ``pending``, written with the batch), so whoever
    reviews either sees the other. Never silently resolved (docs/trust.md "Conflicts").
    Each link is a ``Dispute`` of the trust model; its audit entries go to ``entries``
    (``record_self`` False: ``memory`` is new, its creation entry says it).
    """
    if not found:
        return memory, []
    notes: list[str] = []
    now = engine.clock()
    system = rules.Actor.system()
    for conflict in found:
        other = pending.get(conflict.memory.id, conflict.memory)
        reason = f"{conflict.kind}, {conflict.reason}"
        step = rules.transition(
            memory,
            rules.Dispute(actor=system, cause=cause, other_id=other.id, reason=reason),
            now=now,
        )
        memory = step.memory
        back = rules.transition(
            other,
            rules.Dispute(
                actor=system, cause=cause, other_id=memory.id, review=False, reason=reason
            ),
            now=now,
        )
        pending[other.id] = back.memory
        if entries is not None:
            if record_self:
                entries.append(step.entry)
            entries.append(back.entry)
        notes.append(f"{other.id}: {reason}")
    return memory, notes


def judge_check(engine: Engine, check: PendingCheck) -> list[str]:
    """Run one owed check (:func:`judge_remembered`) and strike it from the pending list;
    a check whose judging failed is struck too (it would fail again at every start, and
    ``engram consolidate`` reads every pair anyway)."""
    try:
        return judge_remembered(engine, check.memory_id, check.pairs, cause=check.cause)
    finally:
        engine.pending_checks.done(check.memory_id)


def resume_checks(engine: Engine, *, in_request: bool = False) -> list[str]:
    """The contradiction checks an engine took and did not judge before it stopped
    (``.engram/pending_checks.sqlite``, docs/engine.md "Writes"): handed to
    :attr:`Engine.defer` when it is set and ``in_request`` is not (the engine process, at
    start), else judged here (``engram consolidate``). Returns the notes of what was
    linked here, ``"new vs other: kind, reason"``."""
    checks = engine.pending_checks.all()
    if checks:
        log.info("%d contradiction checks owed from before", len(checks))
    notes: list[str] = []
    for check in checks:
        if engine.defer is not None and not in_request:
            engine.defer(functools.partial(judge_check, check=check))
        else:
            notes += [f"{check.memory_id} vs {note}" for note in judge_check(engine, check)]
    return notes


def judge_remembered(
    engine: Engine, memory_id: str, pairs: Sequence[tuple[str, float]], *, cause: str = ""
) -> list[str]:
    """The contradiction judges' reading of a just-remembered memory, after its write.

    ``remember`` in the engine process acknowledges a write once the rules have read it;
    the pairs they left open on the same subject (``pairs``: other memory's id, word
    overlap) go to the NLI model and the LLM endpoint here, on the engine's own thread,
    because the model reads each pair in both orders and takes seconds on a loaded machine
    (docs/engine.md, "Writes"). What they find is linked exactly as at remember: both kept,
    ``conflicts_with`` both ways, the new memory to review (docs/trust.md, "Conflicts").
    Both sides are read again under the store's writer lock, and written before it is let
    go (another request or process may have changed or hidden one meanwhile: read under the
    engine's lock alone, a flag another process made between the read and the write was
    written over); a hidden side is not linked. Returns the notes, as
    :class:`RememberResult` ``conflicts`` would have carried them.
    """
    from engram.app import trust as app_trust

    store = engine.store
    current = {m.id: m for m in store.get_many([memory_id, *(oid for oid, _ in pairs)])}
    new = current.get(memory_id)
    if new is None:
        return []
    others = [(current[oid], overlap) for oid, overlap in pairs if oid in current]
    verdicts = judge_pairs(new, others, engine.contradiction_judges)  # the slow part
    if not verdicts:
        return []
    with engine.write_lock, store.locked():
        fresh = {m.id: m for m in store.get_many([memory_id, *(c.memory.id for c in verdicts)])}
        new = fresh.get(memory_id)
        if new is None or not rules.is_shown(new):
            return []
        linked = set(rules.conflict_ids(new))
        found = [
            attrs.evolve(c, memory=fresh[c.memory.id])
            for c in verdicts
            if c.memory.id in fresh
            and c.memory.id not in linked
            and rules.is_shown(fresh[c.memory.id])
        ]
        found = rank(found, CONFLICT_LIMIT - len(linked))
        if not found:
            return []
        pending: dict[str, Memory] = {}
        entries: list[AuditEntry] = []
        updated, notes = link_contradictions(engine, new, found, pending, entries, cause=cause)
        writes = [updated, *pending.values()]
        with app_trust.recorded(engine, entries):
            store.update(writes)
        engine.mirror(writes)
    log.info("%s contradicts %s (judged after the write)", memory_id, "; ".join(notes))
    return notes


def keyword_neighbour_ids(engine: Engine, text: str, mtype: MemoryType) -> list[str]:
    """Ids of the keyword neighbours of ``text`` among memories of ``mtype``."""
    try:
        found = engine.store.keyword_search(
            text, DUPLICATE_CANDIDATES, engine.filter(types=[mtype])
        )
    except Exception as exc:  # an FTS hiccup must not fail the caller
        log.debug("keyword neighbours failed: %s", exc)
        return []
    return [mid for mid, _ in found]


def default_confidence(source: MemorySource) -> float:
    """Initial confidence by who said it: people and explicit agent notes start higher."""
    return {
        MemorySource.USER_TAUGHT: 0.8,
        MemorySource.AGENT_EXPLICIT: 0.7,
        MemorySource.COMMIT_AUTO: 0.7,
        MemorySource.QA_AUTO: 0.6,
        MemorySource.MCP_AUTO: 0.6,
        MemorySource.OBSERVER_INFERRED: 0.5,
        MemorySource.REPOSITORY: 0.7,
    }[source]


# --------------------------------------------------------------------------- internals


def _head_commit_quietly(engine: Engine) -> str | None:
    """HEAD's sha for a new memory's provenance (commit linkage, staleness), or ``None``.

    Never fails remember: no git, no repository or an empty one simply give ``None``.
    Outside a git repository GitPython is not even imported.
    """
    root = engine.workspace.root
    if not any((folder / ".git").exists() for folder in (root, *root.parents)):
        return None
    try:
        sha = engine.history.head_commit()
    except Exception as exc:
        log.debug("no commit for provenance: %s", exc)
        return None
    return sha if isinstance(sha, str) and sha else None


def _contradictions(
    engine: Engine, memory: Memory, candidates: Sequence[tuple[Memory, float | None]]
) -> tuple[list[Contradiction], tuple[tuple[Memory, float], ...]]:
    """The contradictions found now, and the open pairs left for the judges after the write.

    In a process that outlives the request (the engine: ``engine.defer`` is set) the judges
    read the open pairs after the reply; elsewhere they read them here, as before.
    """
    judges = engine.contradiction_judges
    screening = screen_contradictions(memory, candidates, judges=judges)
    if not screening.open_pairs:
        return rank(screening.found, CONFLICT_LIMIT), ()
    if engine.defer is not None:
        return rank(screening.found, CONFLICT_LIMIT), screening.open_pairs
    found = {c.memory.id: c for c in screening.found}
    found.update((c.memory.id, c) for c in judge_pairs(memory, screening.open_pairs, judges))
    return rank(found.values(), CONFLICT_LIMIT), ()


def _duplicate(
    engine: Engine,
    memory: Memory,
    candidates: Sequence[tuple[Memory, float | None]],
    conflicts: list[Contradiction],
    later: tuple[tuple[Memory, float], ...],
    standing: rules.TrustState,
) -> tuple[DuplicateMatch | None, list[Contradiction], tuple[tuple[Memory, float], ...]]:
    """The near-duplicate ``memory`` merges into, if any: never one it contradicts, nor,
    by meaning alone, one whose text the merge keeps (``standing``: where ``memory``
    stands on its own, :func:`lifecycle.trust.keeps_own_text`) when it says more.

    A candidate whose pair the judges have not read yet (``later``) is read now before it
    may merge (a merge keeps one text and loses the other); that is one pair, rarely.
    """
    disputed = {c.memory.id for c in conflicts}
    while True:
        match = find_duplicate(
            memory,
            [pair for pair in candidates if pair[0].id not in disputed],
            ratio_threshold=engine.config.safety.duplicate_ratio,
            cosine_threshold=engine.config.safety.duplicate_cosine,
            keeps_own_text=lambda existing: rules.keeps_own_text(existing, standing),
        )
        unread = [p for p in later if match is not None and p[0].id == match.memory.id]
        if match is None or not unread:
            return match, conflicts, later
        later = tuple(p for p in later if p[0].id != match.memory.id)
        verdict = judge_pairs(memory, unread, engine.contradiction_judges)
        if not verdict:
            return match, conflicts, later
        conflicts = rank([*conflicts, *verdict], CONFLICT_LIMIT)
        disputed.add(match.memory.id)


def _keyword_candidates(engine: Engine, memory: Memory) -> list[str]:
    """Ids of the stored memories of ``memory``'s type whose words are nearest (BM25)."""
    flt = engine.filter(types=[memory.type])
    try:
        found = engine.store.keyword_search(memory.content, DUPLICATE_CANDIDATES, flt)
    except Exception as exc:  # an FTS hiccup must not block remembering
        log.debug("keyword dedup search failed: %s", exc)
        return []
    return [mid for mid, _score in found]


@attrs.define
class _EarlyKeywordSearch:
    """The duplicate check's keyword search of a single remember, run while it embeds.

    Both wait on something else (LanceDB's FTS in its own threads, the embedding in its
    child process or onnxruntime), so a warm ``remember`` pays the longer of the two, not
    their sum (docs/engine.md, "Figures"). What it found is used only when the store is
    still at the version it was at before the search began; otherwise (another write came
    in between) the search runs again under the write lock, as it always did.
    """

    memory: Memory
    store: MemoryStore
    version: int
    future: Future[list[str]]

    @classmethod
    def start(cls, engine: Engine, memories: Sequence[Memory]) -> _EarlyKeywordSearch | None:
        if len(memories) != 1 or engine.embedder is None:
            return None  # nothing to overlap with (or a batch: one search per memory)
        import threading
        from concurrent.futures import Future

        memory, store = memories[0], engine.store
        version = store.version
        future: Future[list[str]] = Future()

        def search() -> None:
            try:
                future.set_result(_keyword_candidates(engine, memory))
            except BaseException as exc:  # handed to the request thread by result()
                future.set_exception(exc)

        threading.Thread(target=search, name="engram-dedup-search", daemon=True).start()
        return cls(memory, store, version, future)

    def result(self, memory: Memory) -> list[str] | None:
        """The ids found for ``memory``, or ``None``: search again (the store moved on)."""
        ids = self.future.result()
        if memory.id != self.memory.id or memory.content != self.memory.content:
            return None
        return ids if self.store.version == self.version else None


def _duplicate_candidates(
    engine: Engine,
    memory: Memory,
    vector: Vectors | None,
    batch_pool: Sequence[Memory],
    pending: dict[str, Memory],
    keyword_ids: Sequence[str] | None = None,
) -> list[tuple[Memory, float | None]]:
    """Stored memories a new one may restate: keyword (BM25) and vector neighbours of its
    type (``keyword_ids``: the keyword search already done, see :class:`_EarlyKeywordSearch`),
    and the batch's earlier ones."""
    store = engine.store
    flt = engine.filter(types=[memory.type])
    scores: dict[str, float | None] = {}
    if keyword_ids is None:
        keyword_ids = _keyword_candidates(engine, memory)
    for mid in keyword_ids:
        scores.setdefault(mid, None)
    if vector is not None:
        for mid, cosine in store.vector_search(
            vector, DUPLICATE_CANDIDATES, flt, model_id=engine.loaded_model_id
        ):
            scores[mid] = float(cosine)
    found = {m.id: m for m in store.get_many(list(scores))}
    found.update({mid: m for mid, m in pending.items() if mid in found})
    pairs: list[tuple[Memory, float | None]] = [
        (found[mid], cos) for mid, cos in scores.items() if mid in found
    ]
    pairs.extend((m, None) for m in batch_pool if m.type == memory.type)
    # a correction never restates the memory it corrects: VS Code's Edit… sends the new text
    # with ``supersedes`` and then flags the old one, so a small correction merged into the
    # old memory, the flag retired it, and the corrected text was kept nowhere
    corrects = memory.extra.get("supersedes")
    return [(m, cosine) for m, cosine in pairs if m.id != corrects]


def _write(
    engine: Engine,
    store: MemoryStore,
    to_add: Sequence[Memory],
    add_vectors: Sequence[Vectors | None],
    to_update: Sequence[Memory],
    entries: Sequence[AuditEntry],
) -> None:
    """The new and the changed memories, each write with its audit entries (trail first)."""
    from engram.app import trust as app_trust

    model_id = engine.loaded_model_id
    vectors = None
    if to_add and model_id is not None and all(v is not None for v in add_vectors):
        import numpy as np

        vectors = np.vstack(list(add_vectors)).astype("float32")  # type: ignore[arg-type]
    steps: list[app_trust.WriteStep] = []
    if to_add:
        steps.append(({m.id for m in to_add}, lambda: store.add(list(to_add), vectors, model_id)))
    if to_update:
        steps.append(({m.id for m in to_update}, lambda: store.update(list(to_update))))
    app_trust.write(engine, entries, *steps)
    engine.mirror([*to_add, *to_update])


__all__ = [
    "DUPLICATE_CANDIDATES",
    "RememberResult",
    "default_confidence",
    "judge_remembered",
    "keyword_neighbour_ids",
    "link_contradictions",
    "prepare",
    "remember",
    "remember_many",
]
