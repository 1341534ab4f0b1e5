"""What the observer hands back: per event, per promotion, and at session end (docs/observer.md).

All three are attrs records with ``to_dict()`` so the CLI, the LSP
(``engram.sessionSummary``) and MCP tools can serialise them without knowing the types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.jsontypes import JsonObject


import attrs

from engram.model import Memory, memory_json
from engram.observer.promotion import Discarded
from engram.observer.signals import ScratchpadNote, Signal


@attrs.define
class PromotionReport:
    """One promotion pass: what became permanent, what merged, what was discarded and why."""

    session_id: str
    outcome: str  # validated | partial | success | failure | abandoned | skipped
    promoted: list[Memory] = attrs.field(factory=list)
    merged_ids: list[str] = attrs.field(factory=list)
    discarded: list[Discarded] = attrs.field(factory=list)
    tainted: bool = False
    upto_step: int = 0
    elapsed_ms: float = 0.0  # deciding what to promote (templates, filters); no writes
    write_ms: float = 0.0  # the sink's remember_many (redaction, embedding, store)
    error: str | None = None

    @property
    def needs_review(self) -> list[Memory]:
        return [m for m in self.promoted if m.needs_review]

    def to_dict(self) -> JsonObject:
        return {
            "session_id": self.session_id,
            "outcome": self.outcome,
            "promoted": [memory_json(m) for m in self.promoted],
            "merged_ids": list(self.merged_ids),
            "discarded": [d.to_dict() for d in self.discarded],
            "tainted": self.tainted,
            "upto_step": self.upto_step,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "write_ms": round(self.write_ms, 3),
            "error": self.error,
        }


@attrs.define
class ObserveResult:
    """The answer to one observed event."""

    accepted: bool
    session_id: str
    step: int = 0
    signals: list[Signal] = attrs.field(factory=list)
    promotion: PromotionReport | None = None
    summary: SessionSummary | None = None
    elapsed_ms: float = 0.0
    reason: str | None = None

    def to_dict(self) -> JsonObject:
        out: JsonObject = {
            "accepted": self.accepted,
            "session_id": self.session_id,
            "step": self.step,
            "signals": [s.to_dict() for s in self.signals if s.kind != "file_access"],
            "elapsed_ms": round(self.elapsed_ms, 3),
        }
        if self.reason:
            out["reason"] = self.reason
        if self.promotion is not None:
            out["promotion"] = self.promotion.to_dict()
        if self.summary is not None:
            out["summary"] = self.summary.to_dict()
        return out


@attrs.define
class SessionSummary:
    """The session-end card (docs/observer.md): what was applied, learned, and needs review.

    ``learned`` holds every memory promoted in the session (all passes); the user's
    confirm / flag on them goes to ``confirm`` / ``flag`` (``engram.app.memories``) by id, and the
    engine's access-count rules (docs/observer.md) do the rest.
    """

    session_id: str
    session_type: str
    methodology: str
    phase: str | None
    outcome: str
    steps: int
    duration_s: float
    applied: list[str] = attrs.field(factory=list)
    learned: list[Memory] = attrs.field(factory=list)
    discarded: int = 0
    dead_ends: list[str] = attrs.field(factory=list)
    notes: list[ScratchpadNote] = attrs.field(factory=list)
    signal_counts: dict[str, int] = attrs.field(factory=dict)
    tainted: bool = False
    web_sources: list[str] = attrs.field(factory=list)
    blocked_instructions: list[str] = attrs.field(factory=list)
    files_edited: list[str] = attrs.field(factory=list)
    commits: list[str] = attrs.field(factory=list)
    text: str = ""

    @property
    def needs_review(self) -> list[Memory]:
        return [m for m in self.learned if m.needs_review]

    def to_dict(self) -> JsonObject:
        return {
            "session_id": self.session_id,
            "session_type": self.session_type,
            "methodology": self.methodology,
            "phase": self.phase,
            "outcome": self.outcome,
            "steps": self.steps,
            "duration_s": round(self.duration_s, 1),
            "applied": list(self.applied),
            "learned": [memory_json(m) for m in self.learned],
            "needs_review": [m.id for m in self.needs_review],
            "discarded": self.discarded,
            "dead_ends": list(self.dead_ends),
            "notes": [n.to_dict() for n in self.notes],
            "signal_counts": dict(sorted(self.signal_counts.items())),
            "tainted": self.tainted,
            "web_sources": list(self.web_sources),
            "blocked_instructions": list(self.blocked_instructions),
            "files_edited": list(self.files_edited),
            "commits": list(self.commits),
            "text": self.text,
        }


__all__ = ["ObserveResult", "PromotionReport", "SessionSummary"]
