"""One entry of a memory's audit trail (docs/trust.md "The audit trail").

It lives with the model because three layers share it: ``lifecycle.trust`` makes entries,
``store.audit`` keeps them, the front ends render them (``engram log``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.jsontypes import JsonObject

from collections.abc import Mapping
from datetime import datetime

import attrs


@attrs.frozen
class AuditEntry:
    """One change of a memory: when, who or what, before -> after, and what caused it.

    ``before`` and ``after`` hold only the tracked fields that changed (see
    :func:`snapshot`); an endorsement or a refused move has both empty.
    """

    memory_id: str
    at: datetime
    event: str
    actor: str
    cause: str = ""
    before: Mapping[str, object] = attrs.field(factory=dict)
    after: Mapping[str, object] = attrs.field(factory=dict)
    note: str | None = None
    #: written before its change and not yet known to have landed (``store.audit``: the
    #: store write is under way, or a full disk kept the trail from saying how it ended)
    pending: bool = False

    def to_dict(self) -> JsonObject:
        out: JsonObject = {
            "memory_id": self.memory_id,
            "at": self.at.isoformat(),
            "event": self.event,
            "actor": self.actor,
            "cause": self.cause,
            "before": dict(self.before),
            "after": dict(self.after),
            "note": self.note,
        }
        if self.pending:
            out["pending"] = True
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> AuditEntry:
        return cls(
            memory_id=str(raw["memory_id"]),
            at=datetime.fromisoformat(str(raw["at"])),
            event=str(raw["event"]),
            actor=str(raw.get("actor") or ""),
            cause=str(raw.get("cause") or ""),
            before=_mapping(raw.get("before")),
            after=_mapping(raw.get("after")),
            note=str(note) if (note := raw.get("note")) is not None else None,
        )


def _mapping(value: object) -> dict[str, object]:
    """A ``before``/``after`` snapshot as read from a log line (anything else: nothing)."""
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else {}
