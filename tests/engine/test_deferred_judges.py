"""Contradiction judges after the write (docs/engine.md, "Writes"): where the engine hands
work off (``Engine.defer``, set by the engine process), ``remember`` acknowledges once the
rules have read the new memory, and the NLI judge's verdict links the pair right after,
exactly as an in-request verdict would (docs/trust.md, "Conflicts")."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from engram.app import Engine
from engram.app.engine import Deferred
from engram.app.remember import remember, resume_checks
from engram.app.trust import audit_log
from engram.lifecycle.contradictions import ContradictionJudges
from engram.lifecycle.nli import NliFiles, NliJudge
from engram.lifecycle.trust import TrustState, state_of

OLD = "`Response.history` retains the redirects"
NEW = "`Response.history` now discards the redirects"


class ScriptedNli(NliJudge):
    """An NLI judge whose verdict is the test's: pairs whose texts hold ``contradicting``
    score 0.999; it records what it was asked."""

    def __init__(self, contradicting: Sequence[str] = ("discards",)) -> None:
        super().__init__(NliFiles(Path("unused.onnx"), Path("unused.json")), threshold=0.99)
        self.contradicting = tuple(contradicting)
        self.asked: list[tuple[str, str]] = []

    def contradiction(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        self.asked.extend(pairs)
        return [0.999 if any(w in a + b for w in self.contradicting) else 0.01 for a, b in pairs]


def judged_engine(engine: Engine, nli: ScriptedNli) -> list[Deferred]:
    engine._judges = ContradictionJudges(nli=nli)
    jobs: list[Deferred] = []
    engine.defer = jobs.append
    return jobs


def conflicts_of(engine: Engine, memory_id: str) -> list[str]:
    stored = engine.store.get(memory_id)
    assert stored is not None
    return [
        r.target_memory_id for r in stored.relations if r.relation_type.value == "conflicts_with"
    ]


def test_the_judges_read_after_the_write_and_link_as_at_remember(engine: Engine) -> None:
    nli = ScriptedNli()
    jobs = judged_engine(engine, nli)
    old = remember(engine, OLD).memory
    new = remember(engine, NEW)
    # acknowledged before the model read anything: stored, active, no conflict yet
    assert nli.asked == [] and new.conflicts == [] and not new.merged
    assert state_of(engine.store.get(new.memory.id)) is TrustState.ACTIVE
    assert len(jobs) == 1  # the first memory had nothing to be judged against

    jobs.pop()(engine)
    assert nli.asked == [(OLD, NEW)]
    stored_new, stored_old = engine.store.get(new.memory.id), engine.store.get(old.id)
    assert stored_new is not None and stored_old is not None
    # both kept, linked both ways, the newer one in review (docs/trust.md)
    assert conflicts_of(engine, new.memory.id) == [old.id]
    assert conflicts_of(engine, old.id) == [new.memory.id]
    assert state_of(stored_new) is TrustState.REVIEW and state_of(stored_old) is TrustState.ACTIVE
    trail = [(e.memory_id, e.event, e.actor) for e in audit_log(engine, new.memory.id)]
    assert (new.memory.id, "conflict", "system") in trail


def test_a_pair_the_judges_let_pass_changes_nothing(engine: Engine) -> None:
    nli = ScriptedNli(contradicting=())
    jobs = judged_engine(engine, nli)
    remember(engine, OLD)
    new = remember(engine, NEW).memory
    before = engine.store.get(new.id)
    jobs.pop()(engine)
    assert nli.asked and engine.store.get(new.id) == before


def test_a_side_forgotten_before_the_verdict_is_not_linked(engine: Engine) -> None:
    from engram.app.memories import forget

    jobs = judged_engine(engine, ScriptedNli())
    old = remember(engine, OLD).memory
    new = remember(engine, NEW).memory
    forget(engine, old.id)
    jobs.pop()(engine)
    assert conflicts_of(engine, new.id) == [] and conflicts_of(engine, old.id) == []


def test_without_a_deferring_process_the_judges_read_inside_the_request(engine: Engine) -> None:
    nli = ScriptedNli()
    engine._judges = ContradictionJudges(nli=nli)
    old = remember(engine, OLD).memory
    new = remember(engine, NEW)
    assert nli.asked == [(OLD, NEW)]
    assert new.conflicts == [f"{old.id}: nli, NLI model: contradiction 0.999"]


def test_a_near_duplicate_the_judges_have_not_read_is_read_before_it_merges(
    engine: Engine,
) -> None:
    """Merging keeps one text: a pair left for later is judged at once when it would merge."""
    said = "`Response.history` keeps every redirect response"
    again = "`Response.history` now keeps every redirect response"
    nli = ScriptedNli(contradicting=("now keeps",))
    jobs = judged_engine(engine, nli)
    old = remember(engine, said).memory
    new = remember(engine, again)
    assert nli.asked == [(said, again)]  # read inside the request: it would have merged
    assert not new.merged and new.conflicts and new.conflicts[0].startswith(old.id)
    assert jobs == []  # nothing left for later

    # the judges saying "no contradiction" lets the duplicate merge as before
    nli2 = ScriptedNli(contradicting=())
    engine._judges = ContradictionJudges(nli=nli2)
    merged = remember(engine, "`Response.history` now keeps every redirect response!")
    assert merged.merged


# ------------------------------------------------------------------ owed across a stop


def _reopened(engine: Engine, nli: ScriptedNli) -> Engine:
    """The next engine on the same workspace and store (the last one stopped)."""
    store = engine.store
    engine.close()
    again = Engine(
        engine.workspace,
        engine.config,
        store=store,
        clock=engine.clock,
        filter_factory=engine._filter_factory,
    )
    again._judges = ContradictionJudges(nli=nli)
    return again


def test_a_check_is_owed_until_judged(engine: Engine) -> None:
    jobs = judged_engine(engine, ScriptedNli())
    remember(engine, OLD)
    new = remember(engine, NEW).memory
    (owed,) = engine.pending_checks.all()
    assert owed.memory_id == new.id and [oid for oid, _ in owed.pairs]
    jobs.pop()(engine)
    assert engine.pending_checks.all() == []


def test_a_check_dropped_when_the_engine_stopped_runs_at_the_next_start(engine: Engine) -> None:
    """The queue dies with the engine process (``DeferredWork.close``); the next engine
    hands the owed check to its own deferred thread and the conflict is linked."""
    jobs = judged_engine(engine, ScriptedNli())
    old = remember(engine, OLD).memory
    new = remember(engine, NEW).memory
    jobs.clear()  # stopped before its deferred thread reached the check
    assert conflicts_of(engine, new.id) == []

    nli = ScriptedNli()
    again = _reopened(engine, nli)
    queued: list[Deferred] = []
    again.defer = queued.append
    assert resume_checks(again) == [] and len(queued) == 1  # handed off, not run in start
    queued.pop()(again)
    assert nli.asked == [(OLD, NEW)]
    assert conflicts_of(again, new.id) == [old.id] and conflicts_of(again, old.id) == [new.id]
    assert again.pending_checks.all() == []


def test_consolidate_in_process_runs_the_owed_checks(engine: Engine) -> None:
    from engram.app.maintenance import consolidate

    jobs = judged_engine(engine, ScriptedNli())
    old = remember(engine, OLD).memory
    new = remember(engine, NEW).memory
    jobs.clear()
    again = _reopened(engine, ScriptedNli())  # a CLI process with no engine: defer unset
    consolidate(again, dry_run=True)
    assert len(again.pending_checks.all()) == 1  # a dry run changes nothing, owes it still
    report = consolidate(again)
    # the owed check links the pair first; consolidate's own scan then finds it linked
    assert report.conflicts == [f"{new.id} vs {old.id}: nli, NLI model: contradiction 0.999"]
    assert conflicts_of(again, new.id) == [old.id]
    assert again.pending_checks.all() == []
    trail = [(e.event, e.actor) for e in audit_log(again, new.id)]
    assert ("conflict", "system") in trail


def test_a_check_that_fails_is_not_owed_forever(engine: Engine) -> None:
    class Broken(ScriptedNli):
        def contradiction(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
            raise RuntimeError("model file is corrupt")

    jobs = judged_engine(engine, Broken())
    remember(engine, OLD)
    remember(engine, NEW)
    with contextlib.suppress(RuntimeError):  # the deferred thread logs it
        jobs.pop()(engine)
    assert engine.pending_checks.all() == []
