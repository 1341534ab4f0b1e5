"""Random event sequences against the pure trust model (docs/trust.md, invariants 1-4).

The engine-level property test (test_properties.py) drives the real use cases; this one
drives :func:`engram.lifecycle.trust.transition` directly, so it explores many more
sequences per second and pins each invariant to the one function that must keep it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

from engram.lifecycle import trust as t
from engram.model import CorrectionKind, Memory, MemorySource, MemoryType

START = datetime(2025, 1, 1, tzinfo=UTC)
PEOPLE = ["Ana", "Bo"]
ME = "Ana"
people = st.sampled_from(PEOPLE).map(t.Actor.person)
actors = st.one_of(
    people,
    st.just(t.Actor.agent("mcp")),
    st.just(t.Actor(t.ActorKind.OBSERVER)),
    st.sampled_from(["Cy", ME]).map(lambda n: t.Actor(t.ActorKind.TEAMMATE, n)),
    st.just(t.Actor.system()),
)
sources = st.sampled_from(list(MemorySource))


class TrustModel(RuleBasedStateMachine):
    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self.now = START
        self.store: dict[str, Memory] = {}
        self.local: set[str] = set()

    def tick(self) -> datetime:
        self.now += timedelta(hours=1)
        return self.now

    def apply(self, memory_id: str, event: t.Event) -> None:
        before = self.store[memory_id]
        try:
            step = t.transition(before, event, now=self.tick())
        except t.TrustRefused:
            return
        after = step.memory
        self.check_step(before, after, event, step.entry)
        self.store[memory_id] = after

    def check_step(
        self, before: Memory, after: Memory, event: t.Event, entry: t.AuditEntry
    ) -> None:
        was, now = t.state_of(before), t.state_of(after)
        # the entry says exactly what changed
        assert set(entry.before) == set(entry.after)
        assert (was != now) == ("state" in entry.after)
        # 2. a person's flag is lifted only by that person's confirm
        for flag in t.flags_of(before):
            flagger = t.Actor.parse(flag.get("by"))
            if flagger is None or flagger.kind is not t.ActorKind.PERSON:
                continue
            still = any(f.get("by") == flag.get("by") for f in t.flags_of(after))
            if not still:
                assert isinstance(event, t.Confirm) and event.actor == flagger
        # 3. verified only by a person's confirm or a trusted teammate's share, never yours
        if now is t.TrustState.VERIFIED and after.user_verified != before.user_verified:
            if isinstance(event, t.TeamShare):
                assert event.trusted and event.actor.name != event.me
            else:
                assert isinstance(event, t.Confirm)
                assert event.actor.kind is t.ActorKind.PERSON
        # 4. a local memory is never retired
        if after.id in self.local:
            assert now is not t.TrustState.RETIRED

    @rule(target=ids, actor=actors, source=sources, review=st.booleans())
    def remember(self, actor: t.Actor, source: MemorySource, review: bool) -> str:
        memory = Memory(content="timeout is 30s", type=MemoryType.GOTCHA, source=source,
                        confidence=0.95, user_verified=True, pinned=True,
                        needs_review=review)  # fmt: skip
        if actor.kind is t.ActorKind.TEAMMATE:
            shared = attrs.evolve(memory, extra={"team": {"file": "f", "by": actor.name}})
            step = t.admit_team(
                t.TeamShare(actor=actor, shared=shared, file="f", commit="c", me=ME,
                            trusted=True),
                now=self.tick(),
            )  # fmt: skip
            if actor.name == ME or not step.memory.user_verified:
                assert not step.memory.user_verified or actor.name != ME
        else:
            step = t.admit(memory, actor, now=self.tick())
            self.local.add(step.memory.id)
            assert not step.memory.user_verified
            if actor.kind is not t.ActorKind.PERSON:
                assert not step.memory.pinned
        self.store[step.memory.id] = step.memory
        return step.memory.id

    @rule(memory_id=ids)
    def read(self, memory_id: str) -> None:
        # 1. reads never change state or confidence (or the decay clock)
        before = self.store[memory_id]
        used = t.count_use(before)
        assert t.snapshot(used) == t.snapshot(before)
        assert used.current_confidence(self.now) == before.current_confidence(self.now)
        self.store[memory_id] = used

    @rule(memory_id=ids, actor=actors)
    def confirm(self, memory_id: str, actor: t.Actor) -> None:
        self.apply(memory_id, t.Confirm(actor=actor))

    @rule(memory_id=ids, actor=actors, kind=st.sampled_from(list(CorrectionKind)))
    def flag(self, memory_id: str, actor: t.Actor, kind: CorrectionKind) -> None:
        self.apply(memory_id, t.Flag(actor=actor, kind=kind))

    @rule(memory_id=ids, actor=actors, pinned=st.booleans())
    def pin(self, memory_id: str, actor: t.Actor, pinned: bool) -> None:
        self.apply(memory_id, t.Pin(actor=actor, pinned=pinned))

    @rule(memory_id=ids, actor=actors, text=st.sampled_from(["timeout is 45s", "retry 3x"]))
    def edit(self, memory_id: str, actor: t.Actor, text: str) -> None:
        self.apply(memory_id, t.Edit(actor=actor, content=text))

    @rule(memory_id=ids, actor=actors)
    def forget_and_maybe_restore(self, memory_id: str, actor: t.Actor) -> None:
        self.apply(memory_id, t.Forget(actor=actor))
        self.apply(memory_id, t.Restore(actor=actor))

    @rule(memory_id=ids, actor=actors, trusted=st.booleans())
    def team_share(self, memory_id: str, actor: t.Actor, trusted: bool) -> None:
        memory = self.store[memory_id]
        shared = attrs.evolve(memory, content=memory.content + " (edited)",
                              extra={"team": {"file": "f", "by": actor.name}})  # fmt: skip
        self.apply(memory_id, t.TeamShare(actor=actor, shared=shared, file="f", commit="c",
                                          trusted=trusted, me=ME))  # fmt: skip

    @rule(memory_id=ids, actor=actors)
    def team_delete(self, memory_id: str, actor: t.Actor) -> None:
        self.apply(memory_id, t.TeamDelete(actor=actor, file="f", commit="d"))

    @rule(memory_id=ids, other=ids)
    def dispute(self, memory_id: str, other: str) -> None:
        if memory_id != other:
            self.apply(memory_id, t.Dispute(actor=t.Actor.system(), other_id=other))

    @rule(memory_id=ids, event=st.sampled_from(["code", "gone", "back", "decay"]))
    def time(self, memory_id: str, event: str) -> None:
        system = t.Actor.system()
        chosen: t.Event = {
            "code": t.CodeChanged(actor=system),
            "gone": t.FileGone(actor=system, file="a.py"),
            "back": t.FileBack(actor=system),
            "decay": t.Decay(actor=system),
        }[event]
        self.apply(memory_id, chosen)

    @rule(memory_id=consumes(ids))
    def drop(self, memory_id: str) -> None:
        self.store.pop(memory_id, None)

    @invariant()
    def hidden_states_are_hidden(self) -> None:
        for memory in self.store.values():
            assert t.is_shown(memory) == (t.state_of(memory) not in t.HIDDEN_STATES)
            assert 0.0 <= memory.confidence <= 1.0


TestTrustModel = TrustModel.TestCase
