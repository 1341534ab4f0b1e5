"""A write made from records read earlier never undoes another process's flag (docs/storage.md).

Each of these read records, worked, and wrote them back whole under the engine's own lock
only, so a person's flag made between the read and the write by another process (a command
running in-process beside the engine) was written over and the flagged memory shown again:
the judges' late links (``app.remember.judge_remembered``), the vectors ``embed_missing``
adds, and an export imported again (``app.portability.import_file``). Now each reads and
writes under the store's writer lock (``MemoryStore.locked``), as every trust move does
(f14ba67); stop 33's review found them.

The system's slow read-modify-writes (team sync, prune, consolidate, history sync's renames
and staleness check) work outside the lock (git, the file system, the judges, the model)
and, under it, read the records again and make their change on each as it stands, or leave
one whose claim changed meanwhile (``lifecycle.trust.same_claim``); written from the first
read, each undid a person's flag or confirm, deleted a memory restored meanwhile, or
deleted an edited one in a merge (stop 33, trust33).

The interleaving is injected: the other process's flag starts the moment the records are
in hand, and is given time to land before they are written.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.conftest import git

from engram.app import Engine, maintenance, team
from engram.app import remember as remember_module
from engram.app.history_sync import sync_history
from engram.app.memories import confirm, flag
from engram.app.remember import judge_remembered, remember
from engram.app.trust import edit
from engram.lifecycle import trust as rules
from engram.lifecycle.contradictions import Contradiction
from engram.lifecycle.team import render_team_file
from engram.model import Memory


def test_a_flag_made_while_the_judges_link_is_never_written_over(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, command = two
    other = remember(engine, "Uploads go to the staging bucket.", scope="global").memory
    new = remember(engine, "Uploads skip the staging bucket now.", scope="global").memory
    assert rules.conflict_ids(new) == [] and rules.is_shown(other)

    def the_judges_say_they_contradict(
        memory: Memory, pairs: object, judges: object
    ) -> list[Contradiction]:
        return [Contradiction(other, "opposite", "the judges read them as opposite", 0.5)]

    flagged = threading.Thread(target=flag, args=(command, other.id, "not_useful"))
    link = remember_module.link_contradictions

    def link_while_another_flags(*args, **kwargs):  # type: ignore[no-untyped-def]
        if flagged.ident is None:
            flagged.start()
            flagged.join(timeout=1.0)  # blocked by the writer lock: the links go first
        return link(*args, **kwargs)

    monkeypatch.setattr(remember_module, "judge_pairs", the_judges_say_they_contradict)
    monkeypatch.setattr(remember_module, "link_contradictions", link_while_another_flags)
    notes = judge_remembered(engine, new.id, [(other.id, 0.5)])
    flagged.join(timeout=30)
    assert notes and flagged.ident is not None and not flagged.is_alive()

    for store in (engine, command):
        stored = store.store.get(other.id)
        assert stored is not None
        assert rules.state_of(stored) is rules.TrustState.FLAGGED, stored
        assert new.id in rules.conflict_ids(stored), stored  # and the link is kept too


def test_a_flag_made_while_memories_embed_is_never_written_over(
    two: tuple[Engine, Engine],
) -> None:
    """``engram index`` embeds the memories with no vector for the model (after a switch of
    model, or stored keyword-only) in batches, each taking seconds: the records it read
    before a batch were written back whole with their vectors, over a flag another process
    made meanwhile (the trust32 report left it). Now each is written as the store holds it,
    under the writer lock, while it still holds the text its vector was made of."""
    from tests.engine.conftest import HashEmbedder

    from engram.app.indexing import embed_missing
    from engram.app.trust import edit

    engine, command = two
    kept = remember(engine, "Uploads go to the staging bucket.", scope="global").memory
    edited = remember(engine, "Reports are emailed on Fridays.", scope="global").memory
    hasher = HashEmbedder()

    class Slow:
        """The model, during whose batch the person flags one memory and edits another."""

        model_id, dim = hasher.model_id, hasher.dim

        def embed(self, texts: list[str]) -> object:
            flag(engine, kept.id, "not_useful")
            edit(engine, edited.id, content="Reports are emailed on Fridays and Mondays.")
            return hasher.embed(texts)

    command._embedder = Slow()  # type: ignore[assignment]
    report = embed_missing(command)
    assert report["embedded"] == 1  # the edited one waits for the next run, its text moved

    stored = engine.store.get(kept.id)
    assert stored is not None
    assert rules.state_of(stored) is rules.TrustState.FLAGGED, stored
    assert [m.id for m in command.store.missing_vectors(hasher.model_id)] == [edited.id]
    changed = engine.store.get(edited.id)
    assert changed is not None and changed.content.endswith("and Mondays."), changed


def test_a_flag_made_while_an_export_is_imported_again_is_never_written_over(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Importing one's own export again updates each memory in place and keeps its state
    as the store holds it (``_keep_trust``): read under the engine's lock alone, a flag
    another process made between the read and the write was written over (stop 33)."""
    from engram.app import portability
    from engram.app.portability import export, import_file

    engine, command = two
    memory = remember(engine, "Uploads go to the staging bucket.", scope="global").memory
    exported = tmp_path / "export.json"
    exported.write_text(
        export(engine).replace("the staging bucket", "the staging bucket first"),
        encoding="utf-8",
    )
    flagged = threading.Thread(target=flag, args=(engine, memory.id, "not_useful"))
    keep = portability._keep_trust

    def keep_while_another_flags(stored: Memory, imported: Memory) -> Memory:
        if flagged.ident is None:
            flagged.start()
            flagged.join(timeout=1.0)  # blocked by the writer lock: the import goes first
        return keep(stored, imported)

    monkeypatch.setattr(portability, "_keep_trust", keep_while_another_flags)
    import_file(command, exported)
    flagged.join(timeout=30)
    assert flagged.ident is not None and not flagged.is_alive()
    stored = engine.store.get(memory.id)
    assert stored is not None and stored.content.endswith("bucket first."), stored
    assert rules.state_of(stored) is rules.TrustState.FLAGGED, stored


# --------------------------------------------------------------------------- the system's own work


def _interleaved(
    monkeypatch: pytest.MonkeyPatch, command: Engine, other: Callable[[], object]
) -> threading.Event:
    """When the command first has a record in hand (or looked for one), ``other`` runs in
    a thread and may land (1 s) before the command goes on."""
    started = threading.Event()
    thread = threading.Thread(target=other)
    store = command.store
    memory_at = store._memory_at

    def read_while_another_writes(row: int, keep: bool = True) -> Memory | None:
        found = memory_at(row, keep)
        if not started.is_set():
            started.set()
            thread.start()
            thread.join(timeout=1.0)  # blocked by the writer lock: the command goes first
        return found

    get_many = store.get_many

    def look_while_another_writes(ids: list[str]) -> list[Memory]:
        found = get_many(ids)  # a look that finds nothing (a new team file) counts too
        if not started.is_set():
            started.set()
            thread.start()
            thread.join(timeout=1.0)
        return found

    monkeypatch.setattr(store, "_memory_at", read_while_another_writes)
    monkeypatch.setattr(store, "get_many", look_while_another_writes)

    def finished() -> None:
        thread.join(timeout=30)
        assert started.is_set() and not thread.is_alive()

    started.finished = finished  # type: ignore[attr-defined]
    return started


def _both(engine: Engine, command: Engine, memory_id: str) -> list[Memory]:
    found = [e.store.get(memory_id) for e in (engine, command)]
    assert all(m is not None for m in found), found
    return [m for m in found if m is not None]


def _commit(root: Path, message: str, who: str = "Engram Test") -> None:
    ident = ["-c", f"user.name={who}", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", *ident, "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", *ident, "commit", "-qm", message], cwd=root, check=True)


def test_prune_never_unflags_a_memory_flagged_meanwhile(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, command = two
    root = engine.workspace.root
    (root / "jobs.py").write_text("def run():\n    return 1\n")
    memory = remember(engine, "run() in jobs.py retries twice.", file="jobs.py").memory
    (root / "jobs.py").unlink()  # prune marks it stale
    assert command.store.get(memory.id) is not None
    started = _interleaved(monkeypatch, command, lambda: flag(engine, memory.id, "not_useful"))

    report = maintenance.prune(command)
    started.finished()  # type: ignore[attr-defined]
    assert report.stale_marked == [memory.id]
    for stored in _both(engine, command, memory.id):
        assert rules.state_of(stored) is rules.TrustState.FLAGGED, stored
        assert stored.stale_at is not None
    assert [e.event for e in engine.audit.for_memory(memory.id)][-2:] == ["flag", "file_gone"]


def test_prune_never_deletes_a_memory_restored_meanwhile(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forgotten memory past its 30 days is deleted by prune; restored by the person
    while prune was looking, it is kept."""
    from engram.app.memories import forget, restore

    engine, command = two
    memory = remember(engine, "The cache key includes the locale.", scope="global").memory
    forget(engine, memory.id)
    later = datetime.now(UTC) + rules.RETENTION * 2
    command.clock = lambda: later
    assert command.store.get(memory.id) is not None
    started = _interleaved(monkeypatch, command, lambda: restore(engine, memory.id))

    report = maintenance.prune(command)
    started.finished()  # type: ignore[attr-defined]
    assert report.deleted == []
    for stored in _both(engine, command, memory.id):
        assert rules.state_of(stored) is rules.TrustState.ACTIVE, stored


def _twins(engine: Engine) -> tuple[Memory, Memory]:
    first = remember(engine, "The deploy queue drains before every release.", scope="global")
    with engine.write_lock:  # a second, separate record of the same claim
        twin = rules.admit(
            Memory(
                "The deploy queue drains before every release of jobs.",
                type=first.memory.type,
                scope=first.memory.scope,
            ),
            rules.Actor.person("Ana"),
            now=engine.clock(),
        ).memory
        engine.store.add([twin])
    return first.memory, twin


def test_consolidate_never_merges_over_a_flag_made_meanwhile(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, command = two
    first, twin = _twins(engine)
    assert command.store.get(first.id) is not None
    started = _interleaved(monkeypatch, command, lambda: flag(engine, first.id, "wrong_scope"))

    report = maintenance.consolidate(command)
    started.finished()  # type: ignore[attr-defined]
    for stored in _both(engine, command, first.id):
        assert rules.state_of(stored) is rules.TrustState.FLAGGED, stored
        assert stored.content == first.content
    assert all(e.store.get(twin.id) is not None for e in (engine, command))
    assert report.merged == [], report


def test_consolidate_never_deletes_a_memory_edited_meanwhile(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, command = two
    first, twin = _twins(engine)
    text = "The deploy queue drains before every release of jobs, twice."
    assert command.store.get(twin.id) is not None
    started = _interleaved(monkeypatch, command, lambda: edit(engine, twin.id, content=text))

    maintenance.consolidate(command)
    started.finished()  # type: ignore[attr-defined]
    for stored in _both(engine, command, twin.id):
        assert stored.content == text
    assert "of jobs" not in (engine.store.get(first.id) or first).content


def test_consolidate_still_merges_when_nothing_changed_but_a_use(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A use counted meanwhile is no reason to leave the merge: it is kept on the record."""
    from engram.app import recall

    engine, command = two
    first, twin = _twins(engine)
    assert command.store.get(first.id) is not None
    started = _interleaved(monkeypatch, command, lambda: recall.record_access(engine, [first.id]))

    report = maintenance.consolidate(command)
    started.finished()  # type: ignore[attr-defined]
    assert report.merged == [f"{first.id} <- {twin.id} (text ratio 92)"], report
    kept = engine.store.get(first.id)
    assert kept is not None and kept.content.endswith("of jobs.") and kept.access_count >= 1
    assert engine.store.get(twin.id) is None


def _team_file(root: Path, memory: Memory, who: str = "Ada Walker") -> None:
    folder = root / ".engram-team"
    folder.mkdir(exist_ok=True)
    now = datetime(2026, 11, 29, tzinfo=UTC)
    (folder / f"{memory.id}.json").write_text(
        render_team_file(memory, shared_by=who, shared_at=now)
    )
    _commit(root, "team", who)


def test_team_sync_never_unflags_a_memory_flagged_meanwhile(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, command = two
    root = engine.workspace.root
    shared = Memory("derive_key salts with the class name.", id="m-00000000c1")
    _team_file(root, shared)
    team.sync_team(engine)
    _team_file(root, Memory("derive_key salts with the module name.", id=shared.id))
    assert command.store.get(shared.id) is not None
    started = _interleaved(monkeypatch, command, lambda: flag(engine, shared.id, "not_useful"))

    report = team.sync_team(command)
    started.finished()  # type: ignore[attr-defined]
    assert report.updated == 1, report
    for stored in _both(engine, command, shared.id):
        assert rules.state_of(stored) is rules.TrustState.FLAGGED, stored
        assert stored.content == "derive_key salts with the module name."


def test_team_sync_never_undoes_a_confirm_of_a_file_synced_meanwhile(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process synced the new file and the person confirmed it while this sync
    was reading: this sync's admission does not write the unconfirmed arrival back."""
    engine, command = two
    root = engine.workspace.root
    other = remember(engine, "The worker pool has four threads.", scope="global").memory
    shared = Memory("sign() needs a secret key.", id="m-00000000c2")
    _team_file(root, shared)

    def sync_and_confirm() -> None:
        team.sync_team(engine)
        confirm(engine, shared.id)

    assert command.store.get(other.id) is not None
    started = _interleaved(monkeypatch, command, sync_and_confirm)
    team.sync_team(command)
    started.finished()  # type: ignore[attr-defined]
    for stored in _both(engine, command, shared.id):
        assert rules.state_of(stored) is rules.TrustState.VERIFIED, stored


def _repo(root: Path) -> None:
    (root / "jobs.py").write_text("def run():\n    return 1\n")
    (root / "other.py").write_text("Y = 2\n")
    _commit(root, "init")


def test_a_rename_followed_never_unflags_a_memory_flagged_meanwhile(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, command = two
    root = engine.workspace.root
    _repo(root)
    memory = remember(engine, "run() in jobs.py retries twice.", file="jobs.py").memory
    git(root, "mv", "jobs.py", "work.py")
    _commit(root, "rename")
    assert command.store.get(memory.id) is not None
    started = _interleaved(monkeypatch, command, lambda: flag(engine, memory.id, "not_useful"))

    report = sync_history(command)
    started.finished()  # type: ignore[attr-defined]
    assert report.renamed == 1, report
    for stored in _both(engine, command, memory.id):
        assert rules.state_of(stored) is rules.TrustState.FLAGGED, stored
        assert stored.files == ["work.py"]


def test_a_file_gone_never_unflags_a_memory_flagged_meanwhile(
    two: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, command = two
    root = engine.workspace.root
    _repo(root)
    memory = remember(engine, "run() in jobs.py retries twice.", file="jobs.py").memory
    (root / "jobs.py").unlink()
    assert command.store.get(memory.id) is not None
    started = _interleaved(monkeypatch, command, lambda: flag(engine, memory.id, "not_useful"))

    report = sync_history(command)
    started.finished()  # type: ignore[attr-defined]
    assert report.stale_marked == 1, report
    for stored in _both(engine, command, memory.id):
        assert rules.state_of(stored) is rules.TrustState.FLAGGED, stored
        assert stored.stale_at is not None
