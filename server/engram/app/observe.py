"""Observe: hand editor and agent events to the observer; its session cards.

The observer (``engram.observer``, docs/observer.md) turns events into signals, keeps a
scratchpad per session and promotes what survived validation through :class:`EngineSink`,
which is how it reaches the remember pipeline without knowing the engine.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engram.app.memories import for_file, list_memories
from engram.app.remember import RememberResult, remember_many
from engram.errors import InvalidInput
from engram.model import Memory

if TYPE_CHECKING:
    from engram.app.engine import Engine
    from engram.jsontypes import JsonObject
    from engram.observer import Observer, ObserveResult


class EngineSink:
    """The observer's ``MemorySink``: where promoted memories go, what already exists."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def remember_many(self, memories: Sequence[Memory]) -> list[RememberResult]:
        return remember_many(self.engine, memories)

    def list(self, *, type: str, limit: int) -> builtins.list[Memory]:
        return list_memories(self.engine, type=type, limit=limit)

    def memories_for_file(self, rel: str) -> builtins.list[Memory]:
        return for_file(self.engine, rel)


def observer_of(engine: Engine) -> Observer:
    """The engine's observer, built on first use with :class:`EngineSink`."""
    from engram.observer import Observer

    return engine.observer_or_build(
        lambda: Observer(
            EngineSink(engine),
            workspace=engine.workspace,
            config=engine.config.observer,
            llm=engine.config.llm,
        )
    )


def observe(engine: Engine, event: dict[str, object]) -> ObserveResult:
    """Feed one observer event (an editor or agent action; docs/observer.md)."""
    if not isinstance(event, dict):
        raise InvalidInput("an observer event must be a JSON object")
    return observer_of(engine).observe(event)


def session_summary(engine: Engine, session_id: str | None = None) -> JsonObject:
    """The observer's session card (docs/observer.md): applied, learned, needs review.

    ``None`` means the last finished session; a running session gets a live summary.
    Always a dict: ``found`` False (with ``text`` saying why) when there is none.
    """
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
        raise InvalidInput("session id is empty")
    if not engine.config.observer.enabled:
        return {
            "found": False,
            "session_id": session_id,
            "text": "the observer is off (observer.enabled = false)",
        }
    summary = observer_of(engine).session_summary(session_id.strip() if session_id else None)
    if not summary:
        which = f"session {session_id}" if session_id else "a finished session"
        return {"found": False, "session_id": session_id, "text": f"no summary of {which} yet"}
    return {"found": True, **dict(summary)}


def recent_work_state(engine: Engine) -> list[Memory]:
    """Where the last unfinished sessions stopped (``work_state`` memories), newest first.

    Without a store yet this returns nothing rather than pay for opening one (it runs in a
    SessionStart hook).
    """
    if not (engine.workspace.engram_dir / "memories.lance").exists():
        return []
    memories = list_memories(engine, type="work_state", limit=200)
    return sorted(memories, key=lambda m: m.created_at, reverse=True)


__all__ = ["EngineSink", "observe", "observer_of", "recent_work_state", "session_summary"]
