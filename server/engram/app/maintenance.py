"""Maintenance: prune (decay, stale files, grace periods) and consolidate the store.

``remember`` merges near-duplicates and links contradictions for each new memory; memories
that arrived another way (a teammate's shared file, an older Engram) or whose neighbours
changed since are checked by :func:`consolidate` (docs/lifecycle.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import attrs

from engram.app import trust as app_trust
from engram.app.remember import keyword_neighbour_ids, link_contradictions
from engram.lifecycle import PruneReport, find_duplicate, merge_memories, plan_prune
from engram.lifecycle import trust as rules
from engram.lifecycle.contradictions import Contradiction, find_contradictions
from engram.model import AuditEntry, Memory
from engram.progress import Progress

if TYPE_CHECKING:
    from engram.app.engine import Engine
    from engram.jsontypes import JsonObject

log = logging.getLogger(__name__)


@attrs.define
class ConsolidateReport:
    """What :func:`consolidate` did (or would do with ``dry_run``)."""

    scanned: int = 0
    #: ``"kept <- removed (reason)"`` for near-duplicates merged into the older memory
    merged: list[str] = attrs.field(factory=list)
    #: ``"newer vs older: kind, reason"`` for contradictions newly linked for review
    conflicts: list[str] = attrs.field(factory=list)
    dry_run: bool = False

    def to_dict(self) -> JsonObject:
        return attrs.asdict(self)


def prune(engine: Engine, *, dry_run: bool = False) -> PruneReport:
    """Apply the lifecycle rules (stale files, decay, grace periods) to the store.

    The rules read every memory and look for its files outside the store's writer lock;
    under it the memories they would change are read again and the rules applied to them
    as they stand (a memory flagged, confirmed or restored meanwhile by another process
    is judged as it is now: written from the first read, the flag was lost).
    """
    now = engine.clock()
    root = engine.workspace.root
    seen: dict[str, bool] = {}

    def exists(rel: str) -> bool:
        if rel not in seen:
            seen[rel] = (root / rel).exists()
        return seen[rel]

    memories = engine.store.list(engine.filter(include_deprecated=True))
    report = plan_prune(memories, now, exists)
    if dry_run or not (report.updated or report.deleted):
        return report
    engine.check_writable()
    ids = [*(m.id for m in report.updated), *report.deleted]
    with engine.write_lock, engine.store.locked():
        report = plan_prune(engine.store.get_many(ids), now, exists)
        steps: list[app_trust.WriteStep] = []
        if report.updated:
            updated = report.updated
            steps.append(({m.id for m in updated}, lambda: engine.store.update(updated)))
        if report.deleted:
            deleted = report.deleted
            steps.append((set(deleted), lambda: engine.store.delete(deleted)))
        app_trust.write(engine, report.entries, *steps)
        engine.mirror(report.updated, report.deleted)
    return report


@attrs.frozen
class _Merge:
    """Consolidate judged ``removed`` a near-duplicate of ``kept`` (both in ``standing``)."""

    kept: str
    removed: str
    reason: str
    standing: rules.TrustState

    @property
    def ids(self) -> set[str]:
        return {self.kept, self.removed}


@attrs.frozen
class _Link:
    """Consolidate judged ``current`` to contradict each of ``found``."""

    current: str
    found: tuple[Contradiction, ...]

    @property
    def ids(self) -> set[str]:
        return {self.current, *(c.memory.id for c in self.found)}


def consolidate(
    engine: Engine, *, dry_run: bool = False, progress: Progress | None = None
) -> ConsolidateReport:
    """Merge near-duplicates and link contradictions among the memories already stored.

    Each memory is compared with its keyword neighbours of the same type; a pair is judged
    once. Merges keep the older memory (its id is what citations and relations point at);
    contradictions are linked both ways (once: a linked pair is not linked again) and the
    newer one goes to review.

    The pairs are judged outside the store's writer lock (the judges take seconds); under
    it the memories are read again and each merge and link made on them as they stand,
    except where another process changed what the judgement rests on meanwhile
    (``rules.same_claim``: a flag, a confirm, an edit): that pair is left for the next run.
    Written from the first read, a merge put a memory flagged meanwhile back on show.
    """
    report = ConsolidateReport(dry_run=dry_run)
    if not dry_run:
        engine.check_writable()
        # checks a stopped engine still owed (docs/engine.md "Writes"): judged first, with
        # the NLI model, exactly as that engine would have
        from engram.app.remember import resume_checks

        report.conflicts.extend(resume_checks(engine, in_request=True))
    now = engine.clock()
    memories = sorted(engine.store.list(engine.filter()), key=lambda m: m.created_at)
    report.scanned = len(memories)
    judged = _judge(engine, memories, now, progress)
    if dry_run:
        for action in judged:
            if isinstance(action, _Merge):
                report.merged.append(f"{action.kept} <- {action.removed} ({action.reason})")
            else:
                report.conflicts.extend(
                    f"{action.current} vs {c.memory.id}: {c.kind}, {c.reason}" for c in action.found
                )
        return report
    if not judged:
        return report
    read = {m.id: m for m in memories}
    with engine.write_lock, engine.store.locked():
        ids = sorted(set().union(*(action.ids for action in judged)))
        fresh = {m.id: m for m in engine.store.get_many(ids)}
        _make(engine, judged, read, fresh, now, report)
    return report


def _judge(
    engine: Engine, memories: Sequence[Memory], now: datetime, progress: Progress | None
) -> list[_Merge | _Link]:
    """What consolidate would merge and link among ``memories`` (read outside the lock)."""
    system = rules.Actor.system()
    alive: dict[str, Memory] = {m.id: m for m in memories}
    removed: set[str] = set()
    changed: dict[str, Memory] = {}
    judged: list[_Merge | _Link] = []
    for index, memory in enumerate(memories):
        if progress is not None and index % 50 == 0:
            progress(index, len(memories), "consolidating")
        if memory.id in removed:
            continue
        current = changed.get(memory.id, memory)
        neighbours = _keyword_neighbours(engine, current, alive, removed, changed)
        pairs: list[tuple[Memory, float | None]] = [(m, None) for m in neighbours]
        # each pair is judged from its newer side: that one merges or goes to review
        older = [(m, c) for m, c in pairs if m.created_at <= current.created_at]
        linked = {r.target_memory_id for r in current.relations}
        conflicts = [
            c
            for c in find_contradictions(current, older, judges=engine.contradiction_judges)
            if c.memory.id not in linked
        ]
        disputed = {c.memory.id for c in conflicts} | linked
        # only two memories trusted alike merge: merging would otherwise lose a
        # confirmation, or carry a flagged text into a shown memory (docs/trust.md)
        state = rules.state_of(current)
        alike = [
            (m, c)
            for m, c in older
            if m.id not in disputed
            and rules.state_of(m) is state
            and state not in rules.HIDDEN_STATES
        ]
        match = find_duplicate(
            current,
            alike,
            ratio_threshold=engine.config.safety.duplicate_ratio,
            cosine_threshold=engine.config.safety.duplicate_cosine,
        )
        if match is not None:
            combined = merge_memories(match.memory, current, now=now)
            step = rules.transition(
                match.memory,
                rules.Restate(actor=system, merged=combined, standing=state),
                now=now,
            )
            changed[step.memory.id] = step.memory
            removed.add(current.id)
            changed.pop(current.id, None)
            judged.append(_Merge(step.memory.id, current.id, match.reason, state))
            continue
        if conflicts:
            updated, _ = link_contradictions(engine, current, conflicts, changed)
            changed[current.id] = updated
            judged.append(_Link(current.id, tuple(conflicts)))
    if progress is not None:
        progress(len(memories), len(memories), "consolidating")
    return judged


def _make(
    engine: Engine,
    judged: Sequence[_Merge | _Link],
    read: Mapping[str, Memory],
    fresh: Mapping[str, Memory],
    now: datetime,
    report: ConsolidateReport,
) -> None:
    """Make ``judged`` on the records as they stand (``fresh``, read under the writer
    lock), in the order judged; a merge or link one of whose memories another process
    changed since ``read`` is left, with everything judged after it on those memories."""
    system = rules.Actor.system()
    work = dict(fresh)
    left = {
        mid for mid, m in read.items() if mid not in fresh or not rules.same_claim(m, fresh[mid])
    }
    entries: list[AuditEntry] = []
    touched: set[str] = set()
    removed: set[str] = set()
    skipped = 0
    for action in judged:
        if action.ids & left:
            left |= action.ids
            skipped += 1
            continue
        if isinstance(action, _Merge):
            kept, gone = work[action.kept], work[action.removed]
            combined = merge_memories(kept, gone, now=now)
            cause = f"engram consolidate: merged {gone.id}"
            restate = rules.Restate(
                actor=system, cause=cause, merged=combined, standing=action.standing
            )
            step = rules.transition(kept, restate, now=now)
            reason = f"merged into {kept.id}"
            purge = rules.Purge(actor=system, cause="engram consolidate", reason=reason)
            entries.extend([step.entry, rules.transition(gone, purge, now=now).entry])
            work[kept.id] = step.memory
            del work[gone.id]
            touched.add(kept.id)
            removed.add(gone.id)
            report.merged.append(f"{kept.id} <- {gone.id} ({action.reason})")
            continue
        found = [attrs.evolve(c, memory=work[c.memory.id]) for c in action.found]
        updated, notes = link_contradictions(
            engine, work[action.current], found, work, entries, cause="engram consolidate"
        )
        work[updated.id] = updated
        touched |= action.ids
        report.conflicts.extend(f"{updated.id} vs {note}" for note in notes)
    if skipped:
        log.info("consolidate left %d merges or links: their memories changed meanwhile", skipped)
    updates = [work[mid] for mid in sorted(touched) if mid not in removed]
    steps: list[app_trust.WriteStep] = []
    if updates:
        steps.append(({m.id for m in updates}, lambda: engine.store.update(updates)))
    if removed:
        steps.append((removed, lambda: engine.store.delete(sorted(removed))))
    if steps:
        app_trust.write(engine, entries, *steps)
        engine.mirror(updates, sorted(removed))


def _keyword_neighbours(
    engine: Engine,
    memory: Memory,
    alive: Mapping[str, Memory],
    removed: set[str],
    changed: Mapping[str, Memory],
) -> list[Memory]:
    """Memories of the same type that share words with ``memory`` (current versions)."""
    return [
        changed.get(mid, alive[mid])
        for mid in keyword_neighbour_ids(engine, memory.content, memory.type)
        if mid != memory.id and mid not in removed and mid in alive
    ]


__all__ = ["ConsolidateReport", "consolidate", "prune"]
