"""What this server session did with memory, for ``engram.sessionSummary`` (docs/lsp.md).

APPLIED: memories shown to the user or agent (diagnostics, hover, search, context).
LEARNED: memories remembered through this server. CORRECTED: confirmed or flagged here.
NEEDS REVIEW: the store's review queue. The observer's own summary (if it has one for
the current agent session) is attached as ``observer``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.jsontypes import JsonObject

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

import attrs

from engram.model import Memory, memory_json, utcnow


@attrs.define
class SessionLedger:
    started_at: datetime = attrs.field(factory=utcnow)
    applied_ids: dict[str, None] = attrs.field(factory=dict)
    learned_ids: dict[str, None] = attrs.field(factory=dict)
    corrections: dict[str, str] = attrs.field(factory=dict)

    def applied(self, ids: Iterable[str]) -> None:
        for memory_id in ids:
            self.applied_ids.setdefault(memory_id, None)

    def learned(self, memory_id: str) -> None:
        self.learned_ids.setdefault(memory_id, None)

    def corrected(self, memory_id: str, what: str) -> None:
        self.corrections[memory_id] = what

    def all_ids(self) -> list[str]:
        return list(dict.fromkeys([*self.applied_ids, *self.learned_ids, *self.corrections]))

    def counts(self) -> dict[str, int]:
        return {
            "applied": len(self.applied_ids),
            "learned": len(self.learned_ids),
            "corrected": len(self.corrections),
        }

    def summary(
        self,
        found: Mapping[str, Memory],
        review_queue: Sequence[Memory],
        observer: object = None,
    ) -> JsonObject:
        def brief(memory_id: str) -> JsonObject | None:
            memory = found.get(memory_id)
            return memory_json(memory) if memory is not None else None

        def briefs(ids: Iterable[str]) -> list[JsonObject]:
            return [b for b in (brief(i) for i in ids) if b is not None]

        return {
            "started_at": self.started_at.isoformat(),
            "applied": briefs(self.applied_ids),
            "learned": briefs(self.learned_ids),
            "corrected": [
                {**b, "correction": self.corrections[memory_id]}
                for memory_id in self.corrections
                if (b := brief(memory_id)) is not None
            ],
            "needs_review": [memory_json(m) for m in review_queue],
            "observer": observer,
        }
