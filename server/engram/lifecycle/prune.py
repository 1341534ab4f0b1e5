"""Pruning: how memories age out (docs/lifecycle.md).

The rules are a pure function of the memories, the clock and a "does this file exist"
probe, so they are tested without a store and without sleeping; the engine applies the
resulting plan under its writer lock. Every change is an event of the trust model
(``lifecycle.trust``: file gone, decay, retention) with its audit entry. Nothing the user
verified or pinned is ever removed by a rule, and no memory is removed because a file
vanished: the worst that happens then is a stale mark (docs/trust.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

import attrs

from engram.lifecycle import trust
from engram.model import AuditEntry, Memory, MemoryScope

SESSION_TTL = timedelta(days=7)
DEPRECATED_GRACE = timedelta(days=30)
LOW_CONFIDENCE = 0.2
LOW_CONFIDENCE_IDLE = timedelta(days=60)
#: A decaying memory is soft-deleted once idle for this many half-lives (docs/lifecycle.md).
HALF_LIVES_TO_EXPIRE = 3


@attrs.define
class PruneReport:
    """What a prune did (or would do with ``dry_run``): ids and the rule that fired."""

    stale_marked: list[str] = attrs.field(factory=list)
    deprecated: list[str] = attrs.field(factory=list)
    deleted: list[str] = attrs.field(factory=list)
    reasons: dict[str, str] = attrs.field(factory=dict)
    updated: list[Memory] = attrs.field(factory=list)
    #: the audit trail of every change above (docs/trust.md)
    entries: list[AuditEntry] = attrs.field(factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "stale_marked": self.stale_marked,
            "deprecated": self.deprecated,
            "deleted": self.deleted,
            "reasons": self.reasons,
        }


def _files_of(memory: Memory) -> list[str]:
    return [f for f in memory.files if f and f != "."]


def _deprecated_at(memory: Memory, fallback: datetime) -> datetime:
    raw = memory.extra.get("deprecated_at")
    if isinstance(raw, str):
        try:
            return datetime.fromisoformat(raw)
        except ValueError:
            return fallback
    return fallback


def plan_prune(
    memories: Iterable[Memory], now: datetime, file_exists: Callable[[str], bool]
) -> PruneReport:
    """Apply the lifecycle rules to ``memories`` and return what changes."""
    report = PruneReport()
    system = trust.Actor.system()

    def step(memory: Memory, event: trust.Event) -> Memory:
        done = trust.transition(memory, event, now=now)
        report.entries.append(done.entry)
        return done.memory

    for memory in memories:
        protected = memory.user_verified or memory.pinned

        def delete(reason: str, memory: Memory = memory) -> None:
            step(memory, trust.Purge(actor=system, cause="engram prune", reason=reason))
            report.deleted.append(memory.id)
            report.reasons[memory.id] = reason
            report.updated = [m for m in report.updated if m.id != memory.id]

        # 1. Forgotten, retired and deprecated records are deleted after their retention.
        until = trust.forgotten_until(memory)
        if until is not None:
            if now > until:
                delete("forgotten more than 30 days ago")
            continue
        if memory.deprecated:
            if not memory.user_verified and now - _deprecated_at(memory, memory.updated_at) > (
                DEPRECATED_GRACE
            ):
                delete("deprecated for more than 30 days")
            continue
        # 2. Session scope is transient by design.
        if (
            memory.scope is MemoryScope.SESSION
            and not protected
            and now - memory.created_at > SESSION_TTL
        ):
            delete("session memory older than 7 days")
            continue
        # 3. Files gone: marked stale, never removed for it (docs/trust.md).
        files = _files_of(memory)
        missing = [f for f in files if not file_exists(f)]
        if files and missing and memory.stale_at is None:
            memory = step(
                memory, trust.FileGone(actor=system, cause="engram prune", file=missing[0])
            )
            report.stale_marked.append(memory.id)
            report.reasons[memory.id] = f"file gone: {missing[0]}"
            report.updated.append(memory)
        if protected:
            continue
        idle = now - memory.last_accessed_at
        # 4. Low confidence and long without a person's word, for durable scopes.
        if (
            memory.scope in (MemoryScope.GLOBAL, MemoryScope.MODULE)
            and memory.confidence < LOW_CONFIDENCE
            and idle > LOW_CONFIDENCE_IDLE
        ):
            delete("confidence below 0.2 and unused for 60 days")
            continue
        # 5. Idle for three half-lives: decayed (deprecated; deleted 30 days later).
        half_life = memory.decay_half_life_days
        if half_life and idle > timedelta(days=half_life * HALF_LIVES_TO_EXPIRE):
            reason = f"unused for {HALF_LIVES_TO_EXPIRE} half-lives"
            expired = step(memory, trust.Decay(actor=system, cause="engram prune", reason=reason))
            report.updated = [m for m in report.updated if m.id != memory.id] + [expired]
            report.deprecated.append(memory.id)
            report.reasons[memory.id] = reason
    return report
