"""A write made from records read earlier never undoes another process's flag (docs/storage.md).

Each of these read records, worked, and wrote them back whole under the engine's own lock
only, so a person's flag made between the read and the write by another process (a command
running in-process beside the engine) was written over and the flagged memory shown again:
the judges' late links (``app.remember.judge_remembered``), the vectors ``embed_missing``
adds, and an export imported again (``app.portability.import_file``). Now each reads and
writes under the store's writer lock (``MemoryStore.locked``), as every trust move does
(f14ba67); stop 33's review found them.

The interleaving is injected: the other process's flag starts the moment the records are
in hand, and is given time to land before they are written.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from engram.app import Engine
from engram.app import remember as remember_module
from engram.app.memories import flag
from engram.app.remember import judge_remembered, remember
from engram.lifecycle import trust as rules
from engram.lifecycle.contradictions import Contradiction
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
