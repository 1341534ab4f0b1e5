"""Session feedback: handed memories count an access; a succeeded session credits them once."""

from __future__ import annotations

from typing import Any

import pytest

from engram.agents.feedback import session_succeeded, settle_sessions
from engram.agents.hooks import SessionLedger
from engram.workspace import Workspace


def test_what_counts_as_success() -> None:
    assert session_succeeded({"found": True, "outcome": "success"})
    assert session_succeeded({"found": True, "outcome": "running", "commits": ["abc"]})
    assert not session_succeeded({"found": True, "outcome": "failure", "commits": ["abc"]})
    assert not session_succeeded({"found": True, "outcome": "abandoned"})
    assert not session_succeeded({"found": False})


class FakeEngine:
    def __init__(self, workspace: Workspace, summary: dict[str, Any]) -> None:
        self.workspace = workspace
        self.summary = summary
        self.accessed: list[str] = []
        self.credited: list[tuple[str, str]] = []

    def record_access(self, ids: list[str]) -> None:
        self.accessed.extend(ids)

    def session_summary(self, session_id: str) -> dict[str, Any]:
        return self.summary

    def credit_session(self, ids: list[str], session_id: str) -> int:
        self.credited.extend((i, session_id) for i in ids)
        return len(ids)


@pytest.fixture(autouse=True)
def use_cases_on_fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The three use cases settlement calls, answered by the fake engine."""
    monkeypatch.setattr("engram.app.recall.record_access", lambda e, ids: e.record_access(ids))
    monkeypatch.setattr(
        "engram.app.recall.credit_session", lambda e, ids, sid: e.credit_session(ids, sid)
    )
    monkeypatch.setattr("engram.app.observe.session_summary", lambda e, sid: e.session_summary(sid))


def test_settlement_is_idempotent(tmp_workspace: Workspace) -> None:
    tmp_workspace.ensure_engram_dir()
    ledger = SessionLedger.load(tmp_workspace, "s1")
    ledger.handed = ["m-a", "m-b"]
    ledger.save()
    engine = FakeEngine(tmp_workspace, {"found": True, "outcome": "success"})
    [first] = settle_sessions(engine, ["s1", "s1"])
    assert (first.accessed, first.credited, first.succeeded) == (2, 2, True)
    assert settle_sessions(engine, ["s1"])[0].accessed == 0
    assert engine.accessed == ["m-a", "m-b"]
    assert engine.credited == [("m-a", "s1"), ("m-b", "s1")]
    failed = FakeEngine(tmp_workspace, {"found": True, "outcome": "failure"})
    ledger = SessionLedger.load(tmp_workspace, "s2")
    ledger.handed = ["m-c"]
    ledger.save()
    [settled] = settle_sessions(failed, ["s2"])
    assert settled.accessed == 1 and settled.credited == 0
