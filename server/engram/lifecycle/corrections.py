"""What happens to a memory when a user confirms or corrects it (V3 §10, V5 §18).

Trust is the product: a wrong memory confidently applied is worse than none. So every
correction has a visible, reversible effect on the record (nothing is deleted here) and is
written into ``extra["corrections"]`` so hover text can say who corrected what and why.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from engram.model import CorrectionKind, Memory, utcnow

CONFIDENCE_CAP = 0.95
CONFIDENCE_FLOOR = 0.05
#: How much each correction kind costs in confidence.
CORRECTION_PENALTY: dict[CorrectionKind, float] = {
    CorrectionKind.INCORRECT: 0.0,  # deprecated instead
    CorrectionKind.OUTDATED: 0.0,  # marked stale instead
    CorrectionKind.WRONG_SCOPE: 0.2,
    CorrectionKind.NOT_USEFUL: 0.15,
}
CONFIRM_BUMP = 0.1
#: Access-count trust rule (V5 §18): every N uncorrected injections raise confidence,
#: and after REVIEW_CLEAR_ACCESSES the review flag goes away.
ACCESS_BUMP_EVERY = 5
ACCESS_BUMP = 0.05
REVIEW_CLEAR_ACCESSES = 10


def _record(memory: Memory, entry: dict[str, Any]) -> dict[str, Any]:
    extra = dict(memory.extra)
    extra["corrections"] = [*list(extra.get("corrections", [])), entry]
    return extra


def apply_correction(
    memory: Memory, kind: CorrectionKind, note: str | None = None, *, now: datetime | None = None
) -> Memory:
    """The record after the user said it is wrong in the way ``kind`` says."""
    now = now or utcnow()
    entry: dict[str, Any] = {"kind": kind.value, "at": now.isoformat()}
    if note:
        entry["note"] = note
    flags = memory.flags if kind.value in memory.flags else [*memory.flags, kind.value]
    changes: dict[str, Any] = {"flags": flags, "extra": _record(memory, entry), "updated_at": now}
    if kind is CorrectionKind.INCORRECT:
        changes.update(deprecated=True, valid_until=now, pinned=False)
        changes["extra"]["deprecated_at"] = now.isoformat()
    elif kind is CorrectionKind.OUTDATED:
        changes.update(stale_at=now, valid_until=now)
    else:
        penalty = CORRECTION_PENALTY[kind]
        changes["confidence"] = max(CONFIDENCE_FLOOR, round(memory.confidence - penalty, 4))
        if kind is CorrectionKind.WRONG_SCOPE:
            changes["needs_review"] = True
    return attrs.evolve(memory, **changes)


def apply_confirmation(memory: Memory, *, now: datetime | None = None) -> Memory:
    """The user says this memory is right: verified, reviewed, fresher and more trusted."""
    now = now or utcnow()
    extra = _record(memory, {"kind": "confirmed", "at": now.isoformat()})
    return attrs.evolve(
        memory,
        user_verified=True,
        needs_review=False,
        stale_at=None,
        confidence=max(memory.confidence, min(CONFIDENCE_CAP, memory.confidence + CONFIRM_BUMP)),
        last_accessed_at=now,
        updated_at=now,
        extra=extra,
    )


def was_corrected(memory: Memory) -> bool:
    kinds = {k.value for k in CorrectionKind}
    return any(flag in kinds for flag in memory.flags)


def apply_access(memory: Memory, *, now: datetime | None = None) -> Memory:
    """One more injection of ``memory`` (V5 §18 "access count as trust signal")."""
    now = now or utcnow()
    count = memory.access_count + 1
    changes: dict[str, Any] = {"access_count": count, "last_accessed_at": now}
    if not was_corrected(memory):
        if count % ACCESS_BUMP_EVERY == 0 and memory.confidence < CONFIDENCE_CAP:
            changes["confidence"] = min(CONFIDENCE_CAP, round(memory.confidence + ACCESS_BUMP, 4))
        if count >= REVIEW_CLEAR_ACCESSES and memory.needs_review:
            changes["needs_review"] = False
    return attrs.evolve(memory, **changes)


#: Confidence a memory gains when a session it was handed to ends validated (tests passed,
#: commit made): smaller than a user's confirmation, larger than one more access.
SESSION_SUCCESS_BUMP = 0.02


def apply_session_success(memory: Memory, session_id: str) -> Memory:
    """``memory`` was handed to session ``session_id``, which then succeeded (V5 §18/§19).

    Counted once per session (the session joins ``provenance.confirmed_by_sessions``); a
    memory the user corrected gains nothing.
    """
    if session_id in memory.provenance.confirmed_by_sessions or was_corrected(memory):
        return memory
    provenance = attrs.evolve(
        memory.provenance,
        confirmed_by_sessions=[*memory.provenance.confirmed_by_sessions, session_id],
    )
    confidence = min(CONFIDENCE_CAP, round(memory.confidence + SESSION_SUCCESS_BUMP, 4))
    return attrs.evolve(
        memory, provenance=provenance, confidence=max(memory.confidence, confidence)
    )
