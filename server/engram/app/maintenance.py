"""Maintenance: prune (decay, stale files, grace periods) and consolidate the store.

``remember`` merges near-duplicates and links contradictions for each new memory; memories
that arrived another way (a teammate's shared file, an older Engram) or whose neighbours
changed since are checked by :func:`consolidate` (docs/lifecycle.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from engram.app import trust as app_trust
from engram.app.remember import keyword_neighbour_ids, link_contradictions
from engram.lifecycle import PruneReport, find_duplicate, merge_memories, plan_prune
from engram.lifecycle import trust as rules
from engram.lifecycle.contradictions import find_contradictions
from engram.model import AuditEntry, Memory
from engram.progress import Progress

if TYPE_CHECKING:
    from engram.app.engine import Engine
    from engram.jsontypes import JsonObject


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
    """Apply the lifecycle rules (stale files, decay, grace periods) to the store."""
    now = engine.clock()
    root = engine.workspace.root

    def exists(rel: str) -> bool:
        return (root / rel).exists()

    with engine.write_lock:
        memories = engine.store.list(engine.filter(include_deprecated=True))
        report = plan_prune(memories, now, exists)
        if not dry_run:
            engine.check_writable()
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


def consolidate(
    engine: Engine, *, dry_run: bool = False, progress: Progress | None = None
) -> ConsolidateReport:
    """Merge near-duplicates and link contradictions among the memories already stored.

    Each memory is compared with its keyword neighbours of the same type; a pair is judged
    once. Merges keep the older memory (its id is what citations and relations point at);
    contradictions are linked both ways (once: a linked pair is not linked again) and the
    newer one goes to review.
    """
    report = ConsolidateReport(dry_run=dry_run)
    if not dry_run:
        engine.check_writable()
        # checks a stopped engine still owed (docs/engine.md "Writes"): judged first, with
        # the NLI model, exactly as that engine would have
        from engram.app.remember import resume_checks

        report.conflicts.extend(resume_checks(engine, in_request=True))
    entries: list[AuditEntry] = []
    system = rules.Actor.system()
    now = engine.clock()
    with engine.write_lock:
        memories = sorted(engine.store.list(engine.filter()), key=lambda m: m.created_at)
        report.scanned = len(memories)
        alive: dict[str, Memory] = {m.id: m for m in memories}
        removed: set[str] = set()
        changed: dict[str, Memory] = {}
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
                cause = f"engram consolidate: merged {current.id}"
                step = rules.transition(
                    match.memory,
                    rules.Restate(actor=system, cause=cause, merged=combined, standing=state),
                    now=now,
                )
                kept = step.memory
                reason = f"merged into {kept.id}"
                gone = rules.transition(
                    current,
                    rules.Purge(actor=system, cause="engram consolidate", reason=reason),
                    now=now,
                )
                entries.extend([step.entry, gone.entry])
                changed[kept.id] = kept
                removed.add(current.id)
                changed.pop(current.id, None)
                report.merged.append(f"{kept.id} <- {current.id} ({match.reason})")
                continue
            if conflicts:
                updated, notes = link_contradictions(
                    engine, current, conflicts, changed, entries, cause="engram consolidate"
                )
                changed[current.id] = updated
                report.conflicts.extend(f"{current.id} vs {note}" for note in notes)
        if progress is not None:
            progress(len(memories), len(memories), "consolidating")
        if not dry_run and (changed or removed):
            updates = [m for mid, m in changed.items() if mid not in removed]
            steps: list[app_trust.WriteStep] = []
            if updates:
                steps.append(({m.id for m in updates}, lambda: engine.store.update(updates)))
            if removed:
                steps.append((removed, lambda: engine.store.delete(sorted(removed))))
            app_trust.write(engine, entries, *steps)
            engine.mirror(updates, sorted(removed))
    return report


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
