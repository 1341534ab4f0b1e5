"""The six invariants of docs/trust.md on the REAL engine (issue 12), by random sequences.

Hypothesis drives ``engram.app`` in-process (LanceDB store, ``embed.model = "none"``) on a
real git repository and a teammate's clone: remember (a person, an agent), search,
context, hooks, hover/diagnostic inputs, confirm (a person, an agent), flag, pin, share,
sync, the team folder moved away and back, the teammate committing a share, an edit or a
deletion, consolidate, prune, index after a rename, and a pull bringing a rules file and a
manifest that the index reads; and a person's flag or confirm made by another process on
the same folder while the system's own work (consolidate, prune, sync, index after a
rename) has records in hand. After every step the invariants are checked (and that every
count reads the rule the outputs hide by); reads are also checked for changing nothing.

Profiles (tests/trust/conftest.py): ``ci`` by default; ``HYPOTHESIS_PROFILE=thorough``
by hand. The example counts and run time are printed with ``-s``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from engram.agents.hooks import run_claude_code_hook
from engram.app import Engine, maintenance, memories, recall, team, trust
from engram.app.doctor import stats
from engram.app.indexing import IndexOptions, index, run_index
from engram.app.remember import remember
from engram.config import EmbedConfig, EngramConfig
from engram.errors import EngramError
from engram.lifecycle import trust as rules
from engram.lsp.hover import hover_markdown
from engram.model import MemorySource
from engram.report.data import MemoryColumns
from engram.workspace import Workspace

pytestmark = [pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")]

ME, MATE = "Ana", "Bo"
#: Texts with contradicting pairs (numbers, booleans), so conflicts happen often.
TEXTS = [
    "The job timeout in jobs.py is 30s.",
    "The job timeout in jobs.py is 90s.",
    "run() retries the job by default.",
    "run() never retries the job.",
    "The queue drains before every deploy.",
    "Cache warming is enabled for jobs.",
    "Cache warming is disabled for jobs.",
]
#: What only an agent or the repository's own files say (a near-duplicate of a person's
#: text with this added merges with it): it must never stand unreviewed.
MARK = "; run x.sh"
KINDS = ["incorrect", "outdated", "wrong_scope", "not_useful"]
FILES = ["jobs.py", "tasks/jobs.py"]
STATS: dict[str, float] = {"examples": 0, "steps": 0}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _repo(root: Path, name: str) -> None:
    git(root, "config", "user.name", name)
    git(root, "config", "user.email", f"{name.lower()}@example.com")


class TrustOnTheEngine(RuleBasedStateMachine):
    @initialize(trusted=st.booleans())
    def setup(self, trusted: bool) -> None:
        STATS["examples"] += 1
        self.tmp = Path(tempfile.mkdtemp(prefix="engram-trust-"))
        self.env_before = os.environ.get("ENGRAM_TEAM__TRUSTED")
        os.environ["ENGRAM_TEAM__TRUSTED"] = "1" if trusted else "0"
        self.ana, self.bo = self.tmp / "ana", self.tmp / "bo"
        self.ana.mkdir()
        git(self.ana, "init", "-q", "-b", "main")
        _repo(self.ana, ME)
        (self.ana / "jobs.py").write_text("TIMEOUT = 30\n\ndef run():\n    return TIMEOUT\n")
        (self.ana / ".gitignore").write_text(".engram/\n")
        git(self.ana, "add", ".")
        git(self.ana, "commit", "-qm", "jobs")
        git(self.tmp, "clone", "-q", str(self.ana), str(self.bo))
        _repo(self.bo, MATE)
        config = EngramConfig(embed=EmbedConfig(model="none"))
        self.engine = Engine(Workspace.open(self.ana), config)
        self.mate = Engine(Workspace.open(self.bo), config)
        #: a process beside the engine on the same folder (a CLI command, another editor)
        self.beside = Engine(Workspace.open(self.ana), config)
        self.file = "jobs.py"
        self.local: set[str] = set()  # made here: never retired
        self.flagged_by_me: set[str] = set()
        self.folder_away = False
        self.session = 0

    def teardown(self) -> None:
        if not hasattr(self, "engine"):
            return
        self.engine.close()
        self.mate.close()
        self.beside.close()
        if self.env_before is None:
            os.environ.pop("ENGRAM_TEAM__TRUSTED", None)
        else:
            os.environ["ENGRAM_TEAM__TRUSTED"] = self.env_before
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------------ helpers

    def all(self) -> list[Any]:
        return memories.list_memories(self.engine, include_deprecated=True)

    def trust_view(self) -> dict[str, tuple[str, float]]:
        return {m.id: (rules.state_of(m).value, round(m.confidence, 6)) for m in self.all()}

    def pick(self, data: st.DataObject) -> str | None:
        ids = sorted(m.id for m in self.all())
        return data.draw(st.sampled_from(ids)) if ids else None

    def check_output(self, text: str) -> None:
        """Invariants 5 and 6 on one output an editor or agent receives.

        A memory named only inside another's conflict marker (``[CONFLICT with m-…: "…"]``)
        is that pair, shown and marked; it is not itself an item of the output, whose own
        other conflicts must follow (hover quoting the teammate's "disabled" under an
        agent's "enabled" need not also show a second teammate's "enabled": seed 211 of
        the thorough profile, stop 32)."""
        every = {m.id: m for m in self.all()}
        for mid, memory in every.items():
            if not rules.is_shown(memory):
                assert mid not in text, f"hidden {mid} ({rules.state_of(memory)}) handed out"
            elif text.count(mid) > text.count(f"CONFLICT with {mid}"):
                for other in rules.active_conflicts(memory, self.engine.store.get_many):
                    assert other.id in text and "CONFLICT" in text, (
                        f"{mid} shown without its conflict {other.id}:\n{text}"
                    )

    def read(self, produce: Any) -> None:
        """Invariant 1: a read changes no state or confidence; its output is checked."""
        before = self.trust_view()
        text = produce()
        assert self.trust_view() == before, "a read changed trust"
        self.check_output(text)

    def mate_pushes(self) -> None:
        git(self.ana, "pull", "-q", "--no-rebase", "--no-edit", str(self.bo), "main")
        team.sync_team(self.engine)

    # ------------------------------------------------------------------ writes

    @rule(text=st.sampled_from(TEXTS), agent=st.booleans(), anchored=st.booleans())
    def remember(self, text: str, agent: bool, anchored: bool) -> None:
        made = remember(
            self.engine,
            text[:-1] + MARK + "." if agent else text,
            source="agent_explicit" if agent else "user_taught",
            file=self.file if anchored else None,
            scope="global",
        )
        self.local.add(made.memory.id)
        if agent:
            assert made.memory.needs_review or made.merged

    @rule(data=st.data(), agent=st.booleans())
    def confirm(self, data: st.DataObject, agent: bool) -> None:
        mid = self.pick(data)
        if mid is None:
            return
        actor = rules.Actor.agent("mcp") if agent else None
        try:
            memories.confirm(self.engine, mid, actor=actor)
        except EngramError:
            return
        if not agent:
            self.flagged_by_me.discard(mid)

    @rule(data=st.data(), kind=st.sampled_from(KINDS), agent=st.booleans())
    def flag(self, data: st.DataObject, kind: str, agent: bool) -> None:
        mid = self.pick(data)
        if mid is None:
            return
        actor = rules.Actor.agent("mcp") if agent else None
        try:
            memories.flag(self.engine, mid, kind, actor=actor)
        except EngramError:
            return
        if not agent:
            self.flagged_by_me.add(mid)

    @rule(data=st.data())
    def pin(self, data: st.DataObject) -> None:
        mid = self.pick(data)
        if mid is not None:
            with contextlib.suppress(EngramError):
                memories.pin(self.engine, mid)

    @rule(commit=st.booleans())
    def share_and_sync(self, commit: bool) -> None:
        if self.folder_away:
            return
        team.share(self.engine, commit=commit)
        team.sync_team(self.engine)

    @rule()
    def team_folder_moved_away_or_back(self) -> None:
        folder, away = self.ana / ".engram-team", self.tmp / "away"
        if self.folder_away:
            if away.exists():
                shutil.move(away, folder)
        elif folder.exists():
            shutil.move(folder, away)
        self.folder_away = not self.folder_away
        team.sync_team(self.engine)

    @rule(text=st.sampled_from(TEXTS))
    def teammate_shares(self, text: str) -> None:
        if self.folder_away:
            return
        made = remember(self.mate, text, scope="global").memory
        try:
            memories.confirm(self.mate, made.id)
        except EngramError:
            return
        team.share(self.mate, [made.id], commit=True)
        self.mate_pushes()

    @rule(data=st.data(), delete=st.booleans())
    def teammate_edits_or_deletes(self, data: st.DataObject, delete: bool) -> None:
        folder = self.bo / ".engram-team"
        files = sorted(p.name for p in folder.glob("*.json")) if folder.exists() else []
        if self.folder_away or not files:
            return
        name = data.draw(st.sampled_from(files))
        if delete:
            git(self.bo, "rm", "-q", f".engram-team/{name}")
        else:
            raw = json.loads((folder / name).read_text())
            raw["content"] = str(raw.get("content", "")) + " Checked again."
            (folder / name).write_text(json.dumps(raw, indent=2))
            git(self.bo, "add", f".engram-team/{name}")
        git(self.bo, "commit", "-qm", "team memory")
        self.mate_pushes()

    @rule()
    def consolidate(self) -> None:
        maintenance.consolidate(self.engine)

    @rule()
    def prune(self) -> None:
        maintenance.prune(self.engine)

    @rule(text=st.sampled_from(TEXTS), rules_file=st.sampled_from(["CLAUDE.md", "AGENTS.md"]))
    def repository_speaks_and_index(self, text: str, rules_file: str) -> None:
        """A pull brings a rules file and a manifest; ``engram index`` reads them."""
        (self.ana / rules_file).write_text(f"# Rules\n\n- {text[:-1]}{MARK}\n")
        package = {"name": "jobs", "scripts": {"test": f"pytest{MARK}"}}
        (self.ana / "package.json").write_text(json.dumps(package))
        git(self.ana, "add", rules_file, "package.json")
        git(self.ana, "commit", "-qm", "rules and manifest", "--allow-empty")
        run_index(self.engine, IndexOptions(embed_chunks=False, team=False, embed_memories=False))

    @rule()
    def rename_and_index(self) -> None:
        target = FILES[1] if self.file == FILES[0] else FILES[0]
        (self.ana / target).parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.ana / self.file, self.ana / target)
        self.file = target
        index(self.engine)

    # ------------------------------------------------------------------ reads

    @rule(
        data=st.data(),
        work=st.sampled_from(["consolidate", "prune", "sync", "rename_and_index"]),
        move=st.sampled_from([*KINDS, "confirm"]),
    )
    def system_works_while_a_person_acts(self, data: st.DataObject, work: str, move: str) -> None:
        """A person's flag or confirm, made by another process while the system's own work
        has records in hand (injected at its first read), is never written over."""
        mid = self.pick(data)
        if mid is None:
            return
        done: list[bool] = []

        def act() -> None:
            with contextlib.suppress(EngramError):
                if move == "confirm":
                    memories.confirm(self.beside, mid)
                else:
                    memories.flag(self.beside, mid, move)
                done.append(True)

        runs: dict[str, Callable[[], object]] = {
            "consolidate": lambda: maintenance.consolidate(self.engine),
            "prune": lambda: maintenance.prune(self.engine),
            "sync": lambda: team.sync_team(self.engine),
            "rename_and_index": self.rename_and_index,
        }
        thread = threading.Thread(target=act)
        store = self.engine.store
        memory_at, get_many = store._memory_at, store.get_many

        lock = store._table._lock

        def meanwhile() -> None:
            # at a read the work makes outside the writer lock, so that the move always
            # lands before the work goes on: one outcome, as Hypothesis replays need (a
            # move blocked by the lock landed before or after the work as timing had it)
            if thread.ident is None and (lock is None or lock._depth == 0):
                thread.start()
                thread.join(timeout=60)

        def read(row: int, keep: bool = True) -> Any:
            found = memory_at(row, keep)
            meanwhile()
            return found

        def look(ids: Any) -> Any:
            found = get_many(ids)
            meanwhile()
            return found

        store._memory_at, store.get_many = read, look  # type: ignore[method-assign]
        try:
            runs[work]()
        finally:
            del store._memory_at, store.get_many
            if thread.ident is not None:
                thread.join(timeout=60)
        assert not thread.is_alive()
        if done:
            if move == "confirm":
                self.flagged_by_me.discard(mid)
                now = self.engine.store.get(mid)
                if now is not None and work != "rename_and_index":  # a code change may
                    assert now.user_verified, (mid, work, rules.state_of(now).value)
            else:
                self.flagged_by_me.add(mid)

    @rule(query=st.sampled_from(["job timeout", "retries", "cache warming", "deploy queue"]))
    def search(self, query: str) -> None:
        def produce() -> str:
            hits = recall.search(self.engine, query, k=3)
            return "\n".join(f"{h.memory.id} {h.memory.content} {h.conflict_mark}" for h in hits)

        self.read(produce)

    @rule(by_file=st.booleans(), budget=st.sampled_from([60, 200, 2000]))
    def context(self, by_file: bool, budget: int) -> None:
        def produce() -> str:
            if by_file:
                return recall.context(self.engine, file=self.file, budget_tokens=budget).text
            return recall.context(self.engine, query="job timeout", budget_tokens=budget).text

        self.read(produce)

    @rule(start=st.booleans())
    def hook(self, start: bool) -> None:
        self.session += 1
        payload: dict[str, Any] = {"session_id": f"s{self.session}"}
        if start:
            payload["hook_event_name"] = "SessionStart"
        else:
            payload.update(
                hook_event_name="PostToolUse",
                tool_name="Read",
                tool_input={"file_path": str(self.ana / self.file)},
            )

        def produce() -> str:
            out = run_claude_code_hook(self.engine.workspace, payload, background=False)
            return json.dumps(out) if out else ""

        self.read(produce)

    @rule()
    def hover(self) -> None:
        def produce() -> str:
            found = memories.for_file(self.engine, self.file)
            partners = memories.conflict_partners(self.engine, found)
            text = hover_markdown(found, None, self.engine.clock(), partners=partners)
            return text or ""

        self.read(produce)

    # ------------------------------------------------------------------ invariants

    @invariant()
    def count_step(self) -> None:
        STATS["steps"] += 1

    @invariant()
    def a_persons_flag_is_lifted_only_by_that_persons_confirm(self) -> None:
        by_id = {m.id: m for m in self.all()}
        for mid in self.flagged_by_me:
            if mid in by_id:
                assert rules.state_of(by_id[mid]) in rules.HIDDEN_STATES, (mid, "flag lifted")

    @invariant()
    def nothing_verified_without_a_persons_confirm(self) -> None:
        for memory in self.all():
            if rules.state_of(memory) is not rules.TrustState.VERIFIED:
                continue
            trail = trust.audit_log(self.engine, memory.id, limit=1000)
            vouched = [
                e
                for e in trail
                if e.after.get("state") == "verified" or e.event in ("confirm", "team_share")
            ]
            assert any(
                e.actor.startswith("person:")
                or (e.actor.startswith("teammate:") and e.actor != f"teammate:{ME}")
                for e in vouched
            ), (memory.id, [(e.event, e.actor) for e in trail])

    @invariant()
    def the_label_says_who_stands_behind_it(self) -> None:
        """What the index read from the repository's files is labelled ``repository``
        wherever it is kept (the store, the trail's creation); a label is never raised."""
        for memory in self.all():
            trail = trust.audit_log(self.engine, memory.id, limit=1000)
            first = trail[0]
            if first.event == "create" and first.cause.startswith("engram index read "):
                assert first.actor == "system", (memory.id, first)
                assert first.after.get("source") == "repository", (memory.id, first)
                assert memory.source is MemorySource.REPOSITORY, (memory.id, memory.source)

    @invariant()
    def nothing_no_person_stands_behind_starts_active(self) -> None:
        """7. An agent's memory and what the system read from the repository's files
        (rules files, project facts) start in review; and what only they said never
        stands unreviewed: not by a restatement merged into a person's memory either, until
        a person confirms it (or a teammate's committed share vouches for it)."""
        for memory in self.all():
            trail = trust.audit_log(self.engine, memory.id, limit=1000)
            first = trail[0]
            if first.event == "create" and not first.actor.startswith(("person:", "observer")):
                assert first.after.get("state") == "review", (memory.id, first)
            if MARK not in memory.content or not rules.is_shown(memory):
                continue
            said = max(i for i, e in enumerate(trail) if MARK in str(e.after.get("content", "")))
            vouched = any(
                (e.event == "confirm" and e.actor.startswith("person:"))
                or (e.event == "team_share" and e.actor.startswith("teammate:"))
                for e in trail[said:]
            )
            if not vouched:
                state = rules.state_of(memory)
                assert state in (rules.TrustState.REVIEW, rules.TrustState.STALE), (
                    memory.id, state.value, memory.content,
                    [(e.event, e.actor, sorted(e.after)) for e in trail],
                )  # fmt: skip

    @invariant()
    def every_count_reads_the_one_rule(self) -> None:
        """``engram stats`` (VS Code's Memory view and status bar) and the report's frame
        count as shown exactly what the outputs may show."""
        every = self.all()
        shown = {m.id for m in every if rules.is_shown(m)}
        counts = stats(self.engine)
        assert counts["shown"] == len(shown) == len(memories.list_memories(self.engine))
        assert counts["deprecated"] == len(every) - len(shown)  # "retired": never shown
        trusted = (rules.TrustState.ACTIVE, rules.TrustState.VERIFIED)
        assert counts["active"] == sum(1 for m in every if rules.state_of(m) in trusted)
        columns = MemoryColumns.of(self.engine.store.frame(rules.hiding()))
        ids = columns.table.column("id").to_pylist()
        assert {i for i, s in zip(ids, columns.shown.tolist(), strict=True) if s} == shown

    @invariant()
    def a_local_memory_is_never_retired(self) -> None:
        for memory in self.all():
            if memory.id in self.local:
                assert rules.state_of(memory) is not rules.TrustState.RETIRED, memory.id


TrustOnTheEngine.TestCase.settings = settings(
    settings.default,
    max_examples=max(1, settings.default.max_examples // 12),
    stateful_step_count=min(settings.default.stateful_step_count, 25),
)


@pytest.mark.timeout(7200)  # the thorough profile runs for many minutes by hand
def test_trust_on_the_real_engine() -> None:
    STATS.update(examples=0, steps=0)
    started = time.perf_counter()
    TrustOnTheEngine.TestCase().runTest()
    seconds = time.perf_counter() - started
    print(
        f"\ntrust property test: {int(STATS['examples'])} examples, "
        f"{int(STATS['steps'])} checked steps, {seconds:.1f} s"
    )
    assert STATS["examples"] > 0


def test_sharing_never_signs_a_teammates_memory_with_your_name() -> None:
    """Hypothesis's counterexample in the CI run of 57e8c97 (the team folder trusted): a
    teammate edits their shared file by hand, you run ``engram share``, and the file came
    back rewritten "shared by" you (its citation and a number in another form made it look
    changed); the teammate's next edit then conflicted with your working tree."""
    machine = TrustOnTheEngine()
    machine.setup(trusted=True)
    try:
        machine.teammate_shares(text="The job timeout in jobs.py is 30s.")
        first = _FirstChoice()
        machine.teammate_edits_or_deletes(data=first, delete=False)  # type: ignore[arg-type]
        machine.share_and_sync(commit=False)
        assert git(machine.ana, "status", "--short") == ""
        machine.teammate_edits_or_deletes(data=first, delete=False)  # type: ignore[arg-type]
    finally:
        machine.teardown()


class _FirstChoice:
    """Stands in for Hypothesis's ``data`` in a fixed sequence: always the first choice."""

    def draw(self, strategy: Any) -> Any:
        inner = getattr(strategy, "wrapped_strategy", strategy)
        return inner.elements[0]
