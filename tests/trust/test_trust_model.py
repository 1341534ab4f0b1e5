"""The trust state machine on its own (engram.lifecycle.trust, docs/trust.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest

from engram.lifecycle import trust as t
from engram.model import CorrectionKind, Memory, MemorySource, MemoryType, team_origin

NOW = datetime(2025, 3, 1, tzinfo=UTC)
ANA = t.Actor.person("Ana")
BO = t.Actor.person("Bo")
AGENT = t.Actor.agent("mcp")
TEAMMATE = t.Actor(t.ActorKind.TEAMMATE, "Cy")


def made(source: MemorySource = MemorySource.USER_TAUGHT, **kw: object) -> Memory:
    memory = Memory(content="the job timeout is 30s", type=MemoryType.GOTCHA, source=source,
                    confidence=0.8, **kw)  # type: ignore[arg-type]  # fmt: skip
    return t.admit(memory, ANA, now=NOW).memory


def test_person_remember_is_active_agent_remember_is_in_review() -> None:
    assert t.state_of(made()) is t.TrustState.ACTIVE
    agent = t.admit(
        Memory(content="x", source=MemorySource.AGENT_EXPLICIT, confidence=0.9), AGENT, now=NOW
    )
    assert t.state_of(agent.memory) is t.TrustState.REVIEW
    assert agent.memory.confidence == 0.7
    assert agent.entry.event == "create" and agent.entry.actor == "agent:mcp"


def test_admission_never_verifies_or_pins_for_a_non_person() -> None:
    memory = Memory(content="x", user_verified=True, pinned=True, confidence=0.95,
                    source=MemorySource.OBSERVER_INFERRED)  # fmt: skip
    admitted = t.admit(memory, t.Actor(t.ActorKind.OBSERVER), now=NOW).memory
    assert not admitted.user_verified and not admitted.pinned
    assert admitted.confidence == 0.8


def test_confirm_verifies_and_is_recorded_before_after() -> None:
    step = t.transition(made(), t.Confirm(actor=ANA, cause="engram confirm"), now=NOW)
    assert t.state_of(step.memory) is t.TrustState.VERIFIED
    assert step.entry.before == {"state": "active", "confidence": 0.8}
    assert step.entry.after == {"state": "verified", "confidence": 0.9}
    assert step.entry.cause == "engram confirm"


def test_an_agents_confirm_is_only_an_endorsement() -> None:
    memory = t.admit(Memory(content="x", source=MemorySource.AGENT_EXPLICIT), AGENT, now=NOW)
    step = t.transition(memory.memory, t.Confirm(actor=AGENT), now=NOW)
    assert step.unchanged and t.state_of(step.memory) is t.TrustState.REVIEW
    assert step.entry.note and "endorsed" in step.entry.note


@pytest.mark.parametrize("kind", list(CorrectionKind))
def test_a_flag_hides_and_only_the_flagger_lifts_it(kind: CorrectionKind) -> None:
    flagged = t.transition(made(), t.Flag(actor=ANA, kind=kind), now=NOW).memory
    assert not t.is_shown(flagged)
    expected = t.TrustState.DEPRECATED if kind is CorrectionKind.INCORRECT else t.TrustState.FLAGGED
    assert t.state_of(flagged) is expected
    with pytest.raises(t.TrustRefused, match="flagged by Ana"):
        t.transition(flagged, t.Confirm(actor=BO), now=NOW)
    agent = t.transition(flagged, t.Confirm(actor=AGENT), now=NOW)
    assert agent.unchanged
    lifted = t.transition(flagged, t.Confirm(actor=ANA), now=NOW).memory
    assert t.state_of(lifted) is t.TrustState.VERIFIED and t.is_shown(lifted)


def test_an_agents_flag_is_lifted_by_any_person() -> None:
    flagged = t.transition(made(), t.Flag(actor=AGENT, kind=CorrectionKind.NOT_USEFUL), now=NOW)
    assert t.state_of(flagged.memory) is t.TrustState.FLAGGED
    lifted = t.transition(flagged.memory, t.Confirm(actor=BO), now=NOW).memory
    assert t.state_of(lifted) is t.TrustState.VERIFIED


def test_legacy_corrections_read_as_flags() -> None:
    legacy = attrs.evolve(
        made(), flags=["not_useful"],
        extra={"corrections": [{"kind": "not_useful", "at": NOW.isoformat()}]},
    )  # fmt: skip
    assert t.state_of(legacy) is t.TrustState.FLAGGED
    assert t.state_of(t.transition(legacy, t.Confirm(actor=BO), now=NOW).memory) is (
        t.TrustState.VERIFIED
    )


def test_forget_and_restore() -> None:
    pinned = t.transition(made(), t.Pin(actor=ANA), now=NOW).memory
    gone = t.transition(pinned, t.Forget(actor=ANA), now=NOW).memory
    assert t.state_of(gone) is t.TrustState.FORGOTTEN and not t.is_shown(gone)
    assert t.forgotten_until(gone) == NOW + t.RETENTION
    with pytest.raises(t.TrustRefused, match="restore"):
        t.transition(gone, t.Confirm(actor=ANA), now=NOW)
    back = t.transition(gone, t.Restore(actor=ANA), now=NOW).memory
    assert t.state_of(back) is t.TrustState.ACTIVE and back.pinned


def test_only_a_person_pins_edits_forgets() -> None:
    for event in (t.Pin(actor=AGENT), t.Edit(actor=AGENT, content="y"), t.Forget(actor=AGENT)):
        with pytest.raises(t.TrustRefused, match="only a person"):
            t.transition(made(), event, now=NOW)


def test_edit_keeps_the_old_text_in_the_entry() -> None:
    step = t.transition(made(), t.Edit(actor=ANA, content="the job timeout is 45s"), now=NOW)
    assert step.entry.before["content"] == "the job timeout is 30s"
    assert step.entry.after["content"] == "the job timeout is 45s"
    assert step.memory.citation_text == "the job timeout is 45s"


def shared(memory: Memory, **kw: object) -> Memory:
    origin = {"team": {"file": f".engram-team/{memory.id}.json", "by": "Cy", "at": None}}
    return attrs.evolve(memory, tags=[*memory.tags, "team"], extra=origin, **kw)  # type: ignore[arg-type]


def test_a_teammates_share_arrives_in_review_unless_the_folder_is_trusted() -> None:
    file_memory = shared(Memory(content="use UTC", confidence=0.95, pinned=True))
    event = t.TeamShare(actor=TEAMMATE, shared=file_memory, file="f", commit="abc", me="Ana")
    arrived = t.admit_team(event, now=NOW).memory
    assert t.state_of(arrived) is t.TrustState.REVIEW
    assert not arrived.pinned and arrived.confidence == 0.8
    trusted = attrs.evolve(event, trusted=True)
    verified = t.admit_team(trusted, now=NOW).memory
    assert t.state_of(verified) is t.TrustState.VERIFIED
    assert verified.extra["lifecycle"]["verified_by"]["by"] == "teammate:Cy"
    yours = attrs.evolve(trusted, actor=t.Actor(t.ActorKind.TEAMMATE, "Ana"))
    assert t.state_of(t.admit_team(yours, now=NOW).memory) is t.TrustState.REVIEW


def test_your_own_memory_read_back_from_the_folder_changes_nothing() -> None:
    mine = t.transition(made(), t.Dispute(actor=ANA, other_id="m-other"), now=NOW).memory
    echo = shared(mine)
    step = t.transition(
        mine, t.TeamShare(actor=TEAMMATE, shared=echo, file="f", commit="c", trusted=True),
        now=NOW,
    )  # fmt: skip
    assert t.state_of(step.memory) is t.TrustState.REVIEW
    assert team_origin(step.memory) is None and not step.memory.user_verified


def test_a_deleted_team_file_retires_only_team_memories() -> None:
    with pytest.raises(t.TrustRefused, match="your own memory"):
        t.transition(made(), t.TeamDelete(actor=TEAMMATE, file="f", commit="c"), now=NOW)
    team = t.admit_team(
        t.TeamShare(actor=TEAMMATE, shared=shared(made()), file="f", commit="c"), now=NOW
    ).memory
    retired = t.transition(team, t.TeamDelete(actor=TEAMMATE, file="f", commit="d"), now=NOW)
    assert t.state_of(retired.memory) is t.TrustState.RETIRED


def test_a_flag_survives_the_team_file_coming_back() -> None:
    team = t.admit_team(
        t.TeamShare(actor=TEAMMATE, shared=shared(made()), file="f", commit="c"), now=NOW
    ).memory
    flagged = t.transition(team, t.Flag(actor=ANA, kind=CorrectionKind.INCORRECT), now=NOW).memory
    retired = t.transition(flagged, t.TeamDelete(actor=TEAMMATE, file="f", commit="d"), now=NOW)
    back_file = shared(attrs.evolve(made(), id=team.id, content="the job timeout is 60s"))
    again = t.transition(
        retired.memory,
        t.TeamShare(actor=TEAMMATE, shared=back_file, file="f", commit="e", trusted=True),
        now=NOW,
    )
    assert t.state_of(again.memory) is t.TrustState.DEPRECATED
    assert not t.is_shown(again.memory)


def test_code_changed_sends_a_verified_memory_back_to_review_once() -> None:
    verified = t.transition(made(), t.Confirm(actor=ANA), now=NOW).memory
    changed = t.transition(verified, t.CodeChanged(actor=t.Actor.system()), now=NOW).memory
    assert t.state_of(changed) is t.TrustState.REVIEW
    assert changed.confidence == pytest.approx(0.72)
    again = t.transition(changed, t.CodeChanged(actor=t.Actor.system()), now=NOW)
    assert again.unchanged


def test_decay_never_touches_verified_or_pinned() -> None:
    verified = t.transition(made(), t.Confirm(actor=ANA), now=NOW).memory
    with pytest.raises(t.TrustRefused):
        t.transition(verified, t.Decay(actor=t.Actor.system()), now=NOW)
    decayed = t.transition(made(), t.Decay(actor=t.Actor.system()), now=NOW).memory
    assert t.state_of(decayed) is t.TrustState.DEPRECATED
    # a person's confirm brings it back
    assert t.is_shown(t.transition(decayed, t.Confirm(actor=ANA), now=NOW).memory)


def test_usage_is_not_confidence() -> None:
    memory = made()
    used = memory
    for _ in range(20):
        used = t.count_use(used)
    assert used.access_count == 20
    assert t.snapshot(used) == t.snapshot(memory)
    assert used.last_accessed_at == memory.last_accessed_at
    later = NOW + timedelta(days=30)
    assert used.current_confidence(later) == memory.current_confidence(later)


def test_active_conflicts_leave_out_settled_sides() -> None:
    a, b = made(), made()
    a = t.transition(a, t.Dispute(actor=ANA, other_id=b.id), now=NOW).memory
    b = t.transition(b, t.Dispute(actor=ANA, other_id=a.id, review=False), now=NOW).memory
    store = {m.id: m for m in (a, b)}

    def lookup(ids: object) -> list[Memory]:
        return [store[i] for i in ids if i in store]  # type: ignore[attr-defined]

    assert [m.id for m in t.active_conflicts(a, lookup)] == [b.id]
    store[b.id] = t.transition(b, t.Flag(actor=ANA, kind=CorrectionKind.OUTDATED), now=NOW).memory
    assert t.active_conflicts(a, lookup) == []


def test_audit_entries_round_trip() -> None:
    entry = t.transition(made(), t.Confirm(actor=ANA, cause="x"), now=NOW).entry
    assert t.AuditEntry.from_dict(entry.to_dict()) == entry
