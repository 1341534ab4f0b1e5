"""Feedback from agent sessions to the memories they were handed (docs/agents.md).

The hooks record, per session, which memories they injected. The background drain (after
Stop / SessionEnd, off the agent's path) settles that ledger with the engine: every
injection counts as an access (the access-count trust rule), and when the session then
succeeded — tests passed or a commit was made, as the observer saw it — each handed memory
gains a little confidence, once per session. A failed or abandoned session credits nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from engram.agents.hooks import SessionLedger

if TYPE_CHECKING:
    from engram.app import Engine

log = logging.getLogger(__name__)


@attrs.define
class Settlement:
    session_id: str
    accessed: int = 0
    credited: int = 0
    succeeded: bool = False


def session_succeeded(summary: Mapping[str, object]) -> bool:
    """Did the observer see this session validated (finished with success, or a commit)?"""
    if not summary.get("found", True):
        return False
    if summary.get("outcome") == "success":
        return True
    return bool(summary.get("commits")) and summary.get("outcome") in ("running", None)


def settle_sessions(engine: Engine, session_ids: Iterable[str]) -> list[Settlement]:
    """Record accesses and success credit for the memories handed to these sessions."""
    from engram.app.observe import session_summary
    from engram.app.recall import credit_session, record_access

    results: list[Settlement] = []
    for session_id in dict.fromkeys(session_ids):
        ledger = SessionLedger.load(engine.workspace, session_id)
        if not ledger.handed:
            continue
        settled = Settlement(session_id)
        fresh = [i for i in ledger.handed if i not in ledger.accessed]
        if fresh:
            record_access(engine, fresh)
            ledger.accessed.extend(fresh)
            settled.accessed = len(fresh)
        try:
            summary = session_summary(engine, session_id)
        except Exception as exc:  # no observer: accesses still count
            log.info("no session summary for %s: %s", session_id, exc)
            summary = {"found": False}
        settled.succeeded = session_succeeded(summary)
        if settled.succeeded:
            due = [i for i in ledger.handed if i not in ledger.credited]
            settled.credited = credit_session(engine, due, session_id) if due else 0
            ledger.credited.extend(due)
        ledger.save()
        results.append(settled)
    return results
