"""MemoryStore behaviour: FTS freshness, filters, exact vector search, snapshots, errors."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import attrs
import numpy as np
import pytest
from store_fakes import FakeEmbedder

from engram.model import CodeAnchor, Memory, MemorySource, MemoryType
from engram.store import MemoryFilter, MemoryStore, StoreError
from engram.workspace import Workspace


def ids(hits: list[tuple[str, float]]) -> list[str]:
    return [h[0] for h in hits]


def test_fresh_add_is_found_by_keyword_search_at_once(store: MemoryStore) -> None:
    first = Memory("JWT tokens expire after 24 hours", type=MemoryType.GOTCHA)
    store.add([first])
    assert ids(store.keyword_search("jwt expire", 5)) == [first.id]
    for i in range(5):  # many single writes: each one visible immediately
        m = Memory(f"zebra{i} crossing rule number {i}")
        store.add([m])
        assert ids(store.keyword_search(f"zebra{i}", 5)) == [m.id]
    assert store.count() == 6


def test_update_and_delete_keep_fts_correct(store: MemoryStore) -> None:
    m = Memory("use pnpm for installs", type=MemoryType.PREFERENCE)
    other = Memory("pnpm workspaces live in packages/")
    store.add([m, other])
    store.update([attrs.evolve(m, content="use bun for installs")])
    assert ids(store.keyword_search("pnpm", 5)) == [other.id]
    assert ids(store.keyword_search("bun", 5)) == [m.id]
    assert store.get(m.id) is not None and store.get(m.id).content == "use bun for installs"  # type: ignore[union-attr]
    assert store.delete([m.id, "m-nothere"]) == 1
    assert store.keyword_search("bun", 5) == []
    assert store.get(m.id) is None
    assert store.count() == 1


def test_keyword_search_covers_tags_anchors_and_camel_case(store: MemoryStore) -> None:
    m = Memory(
        "call parseConfig before serving",
        tags=["startup"],
        anchors=[CodeAnchor("src/server/boot.py", symbol="bootServer")],
    )
    store.add([m])
    for query in (
        "parse config",
        "parseConfig",
        "startup",
        "boot.py",
        "src/server/boot.py",
        "bootServer",
        "it's the server",
    ):
        assert ids(store.keyword_search(query, 3)) == [m.id], query
    assert store.keyword_search("", 3) == []
    assert store.keyword_search("!!! ???", 3) == []


def _sample(store: MemoryStore) -> dict[str, Memory]:
    now = datetime.now(UTC)
    mems = {
        "gotcha": Memory(
            "retry the flaky payment call",
            type=MemoryType.GOTCHA,
            anchors=[CodeAnchor("src/pay.py")],
            source=MemorySource.AGENT_EXPLICIT,
        ),
        "decision": Memory(
            "payment retries use exponential backoff",
            type=MemoryType.DECISION,
            related_files=["src/pay.py"],
        ),
        "review": Memory("payment logs may hold card data", needs_review=True),
        "deprecated": Memory("payment goes through the old gateway", deprecated=True),
        "stale": Memory("payment module owns refunds", stale_at=now),
    }
    store.add(
        list(mems.values()), FakeEmbedder().embed([m.content for m in mems.values()]), "fake-32"
    )
    return mems


def test_filters_apply_to_list_keyword_and_vector_search(store: MemoryStore) -> None:
    mems = _sample(store)
    q = FakeEmbedder().embed(["payment"])[0]

    def all_three(flt: MemoryFilter | None) -> tuple[set[str], set[str], set[str]]:
        return (
            {m.id for m in store.list(flt)},
            set(ids(store.keyword_search("payment", 10, flt))),
            set(ids(store.vector_search(q, 10, flt))),
        )

    def expect(flt: MemoryFilter | None, *names: str) -> None:
        want = {mems[n].id for n in names}
        got = all_three(flt)
        assert got == (want, want, want), flt

    expect(None, "gotcha", "decision", "review", "stale")
    expect(MemoryFilter(include_deprecated=True), *mems)
    expect(MemoryFilter(include_stale=False), "gotcha", "decision", "review")
    expect(MemoryFilter(types=[MemoryType.GOTCHA, MemoryType.DECISION]), "gotcha", "decision")
    expect(MemoryFilter(sources=[MemorySource.AGENT_EXPLICIT]), "gotcha")
    expect(MemoryFilter(file="src/pay.py"), "gotcha", "decision")
    expect(MemoryFilter(file="src/other.py"))
    expect(MemoryFilter(needs_review=True), "review")
    expect(MemoryFilter(needs_review=False), "gotcha", "decision", "stale")
    assert set(store.ids_for_file("src/pay.py")) == {mems["gotcha"].id, mems["decision"].id}
    assert len(store.list(MemoryFilter(include_deprecated=True), limit=2)) == 2


def test_vector_search_matches_brute_force(store: MemoryStore) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(300, 24)).astype(np.float32)
    mems = [
        Memory(f"memory {i}", type=MemoryType.GOTCHA if i % 3 else MemoryType.DECISION)
        for i in range(300)
    ]
    store.add(mems[:150], vectors[:150], "rand")
    store.add(mems[150:], vectors[150:], "rand")
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for _ in range(5):
        q = rng.normal(size=24).astype(np.float32)
        cos = unit @ (q / np.linalg.norm(q))
        want = [mems[i].id for i in np.argsort(-cos)[:10]]
        got = store.vector_search(q, 10)
        assert ids(got) == want
        assert got[0][1] == pytest.approx(float(cos.max()), abs=1e-5)
        decisions = [i for i in np.argsort(-cos) if i % 3 == 0][:5]
        flt = MemoryFilter(types=[MemoryType.DECISION])
        assert ids(store.vector_search(q, 5, flt)) == [mems[i].id for i in decisions]
    assert store.vector_search(np.ones(7, np.float32), 3) == []  # other dimension: nothing


def test_vector_search_each_is_one_search_per_filter_and_brute_force(store: MemoryStore) -> None:
    """A dated query's two dense paths from one product: the same hits, scores to the bit,
    as one ``vector_search`` per filter, and the same ids as NumPy's exact answer."""
    from engram.model.timewindow import TimeWindow

    rng = np.random.default_rng(17)
    n = 2000
    vectors = rng.normal(size=(n, 32)).astype(np.float32)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    mems = [
        Memory(
            f"memory {i}",
            type=MemoryType.GOTCHA if i % 3 else MemoryType.DECISION,
            valid_from=start + timedelta(days=float(rng.uniform(0, 730))),
        )
        for i in range(n)
    ]
    store.add(mems, vectors, "rand")
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    stamps = np.array([m.valid_from.timestamp() for m in mems])
    march = TimeWindow(datetime(2025, 3, 1, tzinfo=UTC), datetime(2025, 4, 1, tzinfo=UTC))
    day = TimeWindow(datetime(2025, 3, 4, tzinfo=UTC), datetime(2025, 3, 7, tzinfo=UTC))
    year = TimeWindow(datetime(2024, 1, 1, tzinfo=UTC), datetime(2025, 1, 1, tzinfo=UTC))
    filters = [
        None,
        MemoryFilter(valid_within=march),
        MemoryFilter(valid_within=day),
        MemoryFilter(valid_within=year),  # half the store: not a selective filter
        MemoryFilter(types=[MemoryType.DECISION], valid_within=march),
    ]
    allowed = [
        np.ones(n, bool),
        march.mask(stamps),
        day.mask(stamps),
        year.mask(stamps),
        march.mask(stamps) & (np.arange(n) % 3 == 0),
    ]
    assert 0 < allowed[2].sum() < allowed[1].sum() < n // 4 < allowed[3].sum()
    for _ in range(5):
        q = rng.normal(size=32).astype(np.float32)
        together = store.vector_search_each(q, 10, filters, model_id="rand")
        assert together == [store.vector_search(q, 10, f, model_id="rand") for f in filters]
        cos = unit @ (q / np.linalg.norm(q))
        for hits, mask in zip(together, allowed, strict=True):
            rows = np.flatnonzero(mask)
            want = [mems[i].id for i in rows[np.argsort(-cos[rows])][:10]]
            assert ids(hits) == want
            assert [s for _, s in hits] == pytest.approx(sorted(cos[rows])[::-1][:10], abs=1e-5)
    assert store.vector_search_each(q, 10, filters, model_id="other") == [[]] * len(filters)


def test_cosines_score_each_row_the_same_whichever_rows_are_around_it() -> None:
    """A window's rows get the same cosines scored alone or within the whole store (BLAS's
    ``@`` does not promise it: its per-row sums depend on a row's place in the call)."""
    from engram.store.snapshot import cosines, normalise

    rng = np.random.default_rng(3)
    matrix = normalise(rng.normal(size=(5003, 384)).astype(np.float32))
    for _ in range(20):
        q = normalise(rng.normal(size=(1, 384)).astype(np.float32))[0]
        rows = np.sort(rng.choice(len(matrix), int(rng.integers(1, 2000)), replace=False))
        whole = cosines(matrix, q)
        assert np.array_equal(whole[rows], cosines(matrix[rows], q))
        assert whole == pytest.approx(matrix.astype(np.float64) @ q.astype(np.float64), abs=1e-6)


def test_update_keeps_vector_and_missing_vectors_tracks_models(store: MemoryStore) -> None:
    fake = FakeEmbedder()
    a, b = Memory("alpha beta"), Memory("gamma delta")
    store.add([a], fake.embed([a.content]), fake.model_id)
    store.add([b])
    assert [m.id for m in store.missing_vectors(fake.model_id)] == [b.id]
    store.update([attrs.evolve(a, confidence=0.9)])  # no vectors: keeps a's vector
    assert ids(store.vector_search(fake.embed(["alpha beta"])[0], 1)) == [a.id]
    assert {m.id for m in store.missing_vectors("another-model")} == {a.id, b.id}
    other = FakeEmbedder(dim=32, model_id="fake-b")
    store.update([a, b], other.embed([a.content, b.content]), other.model_id)
    assert store.missing_vectors(other.model_id) == []
    assert ids(store.vector_search(fake.embed(["gamma"])[0], 2, model_id=fake.model_id)) == []
    assert store.stats()["vectors"] == {"fake-b": 2}


def test_second_instance_sees_writes_after_refresh(tmp_workspace: Workspace) -> None:
    one, two = MemoryStore(tmp_workspace), MemoryStore(tmp_workspace)
    m = Memory("shared knowledge about caching")
    one.add([m], FakeEmbedder().embed([m.content]), "fake-32")
    assert two.get(m.id) is not None
    assert ids(two.keyword_search("caching", 3)) == [m.id]
    assert ids(two.vector_search(FakeEmbedder().embed(["caching"])[0], 3)) == [m.id]
    two.update([attrs.evolve(m, content="shared knowledge about eviction")])
    assert ids(one.keyword_search("eviction", 3)) == [m.id]
    assert one.get(m.id).content.endswith("eviction")  # type: ignore[union-attr]
    n = Memory("written by one")
    one.add([n])
    two.delete([n.id])
    assert one.get(n.id) is None and one.count() == 1


def test_read_only_never_writes(tmp_workspace: Workspace) -> None:
    ro = MemoryStore(tmp_workspace, read_only=True)
    assert ro.count() == 0 and ro.list() == [] and ro.keyword_search("x", 3) == []
    assert not tmp_workspace.engram_dir.exists()
    with pytest.raises(StoreError, match="read-only"):
        ro.add([Memory("nope")])
    rw = MemoryStore(tmp_workspace)
    m = Memory("now it exists")
    rw.add([m])
    before = sorted(p.name for p in (tmp_workspace.engram_dir / "memories.lance").rglob("*"))
    assert ro.get(m.id) is not None and ids(ro.keyword_search("exists", 3)) == [m.id]
    ro.compact()
    after = sorted(p.name for p in (tmp_workspace.engram_dir / "memories.lance").rglob("*"))
    assert before == after


def test_corrupted_store_gives_one_line_error(tmp_workspace: Workspace) -> None:
    store = MemoryStore(tmp_workspace)
    store.add([Memory("soon broken")])
    store.close()
    table_dir = tmp_workspace.engram_dir / "memories.lance"
    for manifest in (table_dir / "_versions").iterdir():
        manifest.write_bytes(b"garbage, not a lance manifest")
    with pytest.raises(StoreError) as info:
        MemoryStore(tmp_workspace).count()
    message = str(info.value)
    assert "\n" not in message and str(table_dir) in message and "move it aside" in message
    assert ".rs:" not in message and "Traceback" not in message


def test_writes_are_compacted_so_versions_do_not_pile_up(tmp_workspace: Workspace) -> None:
    store = MemoryStore(tmp_workspace, cleanup_after=timedelta(0))
    for i in range(45):
        store.add([Memory(f"note {i} about kiwis")])
    assert store.stats()["versions_kept"] < 15
    store.compact()
    assert store.stats()["versions_kept"] <= 2
    assert len(store.keyword_search("kiwis", 100)) == 45


def test_upkeep_handed_to_a_scheduler_runs_after_the_write_not_inside_it(
    tmp_workspace: Workspace,
) -> None:
    """The engine hands the compaction a write makes due to a thread of its own
    (``MemoryStore.upkeep_later``): the write returns uncompacted, asks once however many
    writes follow before the job runs, and the job compacts and leaves every row found."""
    from engram.store.hybrid import OPTIMIZE_EVERY_WRITES

    store = MemoryStore(tmp_workspace, cleanup_after=timedelta(0))
    asked: list[Callable[[], None]] = []
    store.upkeep_later(asked.append)
    for i in range(OPTIMIZE_EVERY_WRITES + 5):
        store.add([Memory(f"note {i} about kiwis")])
    assert len(asked) == 1
    piled_up = store.stats()["versions_kept"]
    assert piled_up > OPTIMIZE_EVERY_WRITES  # nothing compacted inside the writes
    asked[0]()
    assert store.stats()["versions_kept"] <= 2
    assert len(store.keyword_search("kiwis", 100)) == OPTIMIZE_EVERY_WRITES + 5
    for i in range(OPTIMIZE_EVERY_WRITES):
        store.add([Memory(f"more {i} about kiwis")])
    assert len(asked) == 2  # due again after as many writes


def test_upkeep_a_scheduler_never_ran_is_done_inside_a_later_write(
    tmp_workspace: Workspace,
) -> None:
    """A scheduler that dropped the job (an engine stopping) does not let versions pile
    up without end: after as many writes again the write compacts itself."""
    from engram.store.hybrid import OPTIMIZE_EVERY_WRITES

    store = MemoryStore(tmp_workspace, cleanup_after=timedelta(0))
    asked: list[Callable[[], None]] = []
    store.upkeep_later(asked.append)
    for i in range(2 * OPTIMIZE_EVERY_WRITES):
        store.add([Memory(f"note {i} about kiwis")])
    assert len(asked) == 1
    assert store.stats()["versions_kept"] < 5
    store.upkeep_later(None)


def test_after_its_own_write_a_store_reads_without_asking_lancedb_again(
    tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its own write left ``_versions/`` as it is and nobody has held the writer lock
    since: the reads that follow (a remember's, the next request's) trust the version
    they know instead of a LanceDB round trip each (``checkout_latest``)."""
    store = MemoryStore(tmp_workspace)
    store.add([Memory("the first note about kiwis")])
    table = store._table.table()
    assert table is not None
    calls: list[int] = []
    real = type(table).checkout_latest
    monkeypatch.setattr(type(table), "checkout_latest", lambda self: calls.append(1) or real(self))
    store.add([Memory("the second note about kiwis")])
    for _ in range(3):
        assert len(store.keyword_search("kiwis", 10)) == 2
    assert calls == []


def test_another_writer_right_after_our_write_is_seen_at_once(tmp_workspace: Workspace) -> None:
    """Trusting our own write's view of ``_versions/`` ends when anyone else takes the
    writer lock: another store (its own lock object, as another process has) writing
    within the same second is read at once, not after ``_versions/`` settles."""
    ours, theirs = MemoryStore(tmp_workspace), MemoryStore(tmp_workspace)
    ours.add([Memory("our note about kiwis")])
    assert len(ours.keyword_search("kiwis", 10)) == 1
    theirs.add([Memory("their note about kiwis")])
    assert len(ours.keyword_search("kiwis", 10)) == 2
    ours.add([Memory("our second note about kiwis")])
    assert len(theirs.keyword_search("kiwis", 10)) == 3


def test_old_record_schema_is_migrated_on_read(store: MemoryStore) -> None:
    m = Memory("legacy memory")
    store.add([m])
    raw = {
        "id": "m-legacy0001",
        "content": "legacy flat anchor",
        "type": "gotcha",
        "file": "src/old.py",
        "symbol": "f",
        "schema_version": 0,
    }
    table, _ = store._rows([m], [None], [None])
    table = table.set_column(0, "id", __import__("pyarrow").array([raw["id"]]))
    table = table.set_column(
        table.schema.get_field_index("record"),
        "record",
        __import__("pyarrow").array([json.dumps(raw)]),
    )
    store._table.write(lambda t: store._table.upsert(t, table))
    got = store.get("m-legacy0001")
    assert got is not None and got.anchors[0].file == "src/old.py" and got.schema_version == 1


def test_bad_arguments_are_rejected(store: MemoryStore) -> None:
    a = Memory("x")
    with pytest.raises(ValueError, match="shape"):
        store.add([a], np.zeros((2, 4), np.float32), "m")
    with pytest.raises(ValueError, match="model_id"):
        store.add([a], np.zeros((1, 4), np.float32))
    with pytest.raises(ValueError, match="twice"):
        store.add([a, a])
    assert store.keyword_search("x", 0) == [] and store.count() == 0


def test_foreign_write_is_seen_when_version_dir_is_settled(
    tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mtime shortcut for the version check never hides another instance's write."""
    import engram.store.hybrid as hybrid

    monkeypatch.setattr(hybrid, "_SETTLED_NS", 0)
    one, two = MemoryStore(tmp_workspace), MemoryStore(tmp_workspace)
    one.add([Memory("first")])
    assert two.count() == 1 and two.count() == 1  # second call takes the cheap path
    one.add([Memory("second")])
    assert two.count() == 2


def test_foreign_writes_are_patched_in_without_a_full_reload(
    tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeEmbedder()
    one, two = MemoryStore(tmp_workspace), MemoryStore(tmp_workspace)
    base = [Memory(f"base memory {i}") for i in range(5)]
    one.add(base, fake.embed([m.content for m in base]), fake.model_id)
    assert two.count() == 5  # first sight: full load
    loads: list[int] = []
    original = MemoryStore._load
    monkeypatch.setattr(MemoryStore, "_load", lambda self: (loads.append(1), original(self))[1])
    new = Memory("walrus facts", anchors=[CodeAnchor("src/zoo.py")])
    one.add([new], fake.embed([new.content]), fake.model_id)
    one.update([attrs.evolve(base[0], content="base memory changed to narwhal")])
    one.delete([base[1].id])
    one.compact()
    assert two.count() == 5
    assert two.get(new.id) is not None and two.get(base[1].id) is None
    assert two.get(base[0].id).content.endswith("narwhal")  # type: ignore[union-attr]
    assert ids(two.vector_search(fake.embed(["walrus facts"])[0], 1)) == [new.id]
    assert [m.id for m in two.list(MemoryFilter(file="src/zoo.py"))] == [new.id]
    assert ids(two.keyword_search("narwhal", 3)) == [base[0].id]
    assert loads == []
    third = Memory("written while the log is lost")
    one.add([third])
    with sqlite3.connect(tmp_workspace.engram_dir / "memories.changes.sqlite") as conn:
        conn.execute("DELETE FROM changes")  # a broken chain: still correct, by a reload
    assert two.get(third.id) is not None and loads == [1]


def test_reader_on_a_cleaned_up_version_reopens_and_retries(tmp_workspace: Workspace) -> None:
    one = MemoryStore(tmp_workspace, cleanup_after=timedelta(0))
    two = MemoryStore(tmp_workspace)
    one.add([Memory("apricot jam")])
    assert ids(two.keyword_search("apricot", 3))
    two._table._maybe_changed = lambda: False  # type: ignore[method-assign]  # stale handle
    one.add([Memory("apricot pie")])
    one.compact()  # removes the files of the version ``two`` still points at
    two._table.keyword_search("apricot", 5, None)  # stale or retried, never raises
    del two._table._maybe_changed
    assert len(two.keyword_search("apricot", 5)) == 2
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("Not found: data/xyz.lance")
        return "second try"

    assert two._table._with_retry("read", flaky) == "second try"


def test_table_from_a_newer_engram_is_refused(tmp_workspace: Workspace) -> None:
    from engram.store.hybrid import META_TABLE_VERSION, HybridTable
    from engram.store.memory_store import memory_schema

    MemoryStore(tmp_workspace).add([Memory("made by this version")])
    schema = memory_schema()
    older_engram = schema.with_metadata({**schema.metadata, META_TABLE_VERSION: b"0"})
    table = HybridTable(
        tmp_workspace.engram_dir,
        "memories",
        older_engram,
        key_column="id",
        text_column="search_text",
        lock=None,
        read_only=True,
    )
    with pytest.raises(StoreError, match="newer than this Engram"):
        table.table()
    migrated: list[int] = []
    newer_engram = schema.with_metadata({**schema.metadata, META_TABLE_VERSION: b"2"})
    table = HybridTable(
        tmp_workspace.engram_dir,
        "memories",
        newer_engram,
        key_column="id",
        text_column="search_text",
        lock=None,
        read_only=True,
        migrate=lambda _t, old: migrated.append(old),
    )
    with pytest.raises(StoreError, match="needs a migration"):
        table.table()


@pytest.mark.parametrize("prefilter_limit", [2000, 0])
def test_time_window_filters_every_search_and_follows_writes(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, prefilter_limit: int
) -> None:
    """``valid_within``: by the ids in the window (prefilter) or by over-fetching (limit 0)."""
    import engram.store.memory_store as memory_store
    from engram.model.timewindow import TimeWindow

    monkeypatch.setattr(memory_store, "MAX_PREFILTER_IDS", prefilter_limit)
    emb = FakeEmbedder()

    def dated(text: str, when: datetime) -> Memory:
        return Memory(text, valid_from=when, created_at=when, updated_at=when)

    march = dated("payment retries doubled the charge", datetime(2024, 3, 5, tzinfo=UTC))
    june = dated("payment webhook needs the raw body", datetime(2024, 6, 9, tzinfo=UTC))
    older = dated("payment amounts are integer cents", datetime(2023, 3, 20, tzinfo=UTC))
    mems = [march, june, older]
    store.add(mems, emb.embed([m.content for m in mems]), emb.model_id)
    q = emb.embed(["payment"])[0]

    def found(window: TimeWindow) -> tuple[set[str], set[str], set[str]]:
        flt = MemoryFilter(valid_within=window)
        return (
            {m.id for m in store.list(flt)},
            set(ids(store.keyword_search("payment", 10, flt))),
            set(ids(store.vector_search(q, 10, flt))),
        )

    march_2024 = TimeWindow(datetime(2024, 3, 1, tzinfo=UTC), datetime(2024, 4, 1, tzinfo=UTC))
    assert found(march_2024) == ({march.id},) * 3
    any_march = TimeWindow(march_2024.start, march_2024.end, every_year=True)
    assert found(any_march) == ({march.id, older.id},) * 3
    # a memory written after the window column was built is filtered like the others
    late = dated("payment refunds go through the ledger", datetime(2024, 3, 28, tzinfo=UTC))
    store.add([late], emb.embed([late.content]), emb.model_id)
    assert found(march_2024) == ({march.id, late.id},) * 3
    empty = TimeWindow(datetime(2020, 1, 1, tzinfo=UTC), datetime(2020, 2, 1, tzinfo=UTC))
    assert found(empty) == (set(), set(), set())
    # and a reopened store (fresh snapshot) reads valid_from from the stored records
    reopened = MemoryStore(store.workspace)
    try:
        flt = MemoryFilter(valid_within=march_2024)
        assert {m.id for m in reopened.list(flt)} == {march.id, late.id}
    finally:
        reopened.close()


def test_record_column_reads_arrow_rows_and_local_writes() -> None:
    """The snapshot's raw records: loaded rows stay Arrow until read, writes go on top."""
    import pyarrow as pa

    from engram.store.snapshot import RecordColumn

    column = RecordColumn(pa.chunked_array([["a", None], ["c"]]))
    assert len(column) == 3 and list(column) == ["a", None, "c"]
    column[1] = "b"
    column.append("d")
    column[0] = None
    assert list(column) == [None, "b", "c", "d"] and column[3] == "d"
    with pytest.raises(IndexError):
        column[4] = "x"
    with pytest.raises(IndexError):
        _ = column[9]
    empty = RecordColumn()
    empty.append("only")
    assert list(empty) == ["only"]


def test_record_column_extracts_a_field_from_loaded_and_written_rows() -> None:
    import pyarrow as pa

    from engram.store.snapshot import RecordColumn

    column = RecordColumn(pa.chunked_array([['{"v":"a"}', None], ['{"w":1}']]))
    column.append('{"v":"d"}')
    column[2] = '{"v":"c"}'
    assert column.extract(r'"v":"([^"]+)"') == ["a", None, "c", "d"]


def test_a_large_snapshot_load_hands_the_freed_heap_back(
    tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading the snapshot frees the scan's buffers, but glibc keeps freed pages mapped: a
    load of many rows asks for them to go back (``malloc_trim``), a small one does not pay
    for it (issue 18: ~290 MB of a language server's 810 MB at 200,000 memories)."""
    import engram.store.memory_store as memory_store
    from engram.store.heap import release_freed_heap

    writer = MemoryStore(tmp_workspace)
    writer.add(
        [Memory(content=f"note {i}", type=MemoryType.GOTCHA, confidence=0.7) for i in range(5)]
    )
    writer.close()
    trims: list[int] = []
    monkeypatch.setattr(memory_store, "release_freed_heap", lambda: trims.append(1) or True)
    for threshold, expected in ((100, 0), (5, 1)):
        monkeypatch.setattr(memory_store, "TRIM_AFTER_ROWS", threshold)
        trims.clear()
        reader = MemoryStore(tmp_workspace)
        assert reader.count() == 5  # the snapshot is loaded, whatever the trim did
        reader.close()
        assert len(trims) == expected, threshold
    # on glibc the real call runs (a no-op answer elsewhere)
    import platform

    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert release_freed_heap() is True


def test_a_listing_too_large_to_keep_decodes_without_caching(
    tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing every memory (the start-up index's history sync does) must not pin every
    decoded memory in the snapshot: at 200,000 memories that kept ~410 MB in a language
    server for good (issue 18). Small listings and single reads still cache."""
    import engram.store.memory_store as memory_store

    writer = MemoryStore(tmp_workspace)
    added = [Memory(content=f"note {i}", type=MemoryType.GOTCHA) for i in range(5)]
    writer.add(added)
    writer.close()
    monkeypatch.setattr(memory_store, "KEEP_DECODED_LISTING", 3)
    reader = MemoryStore(tmp_workspace)
    try:
        everything = reader.list()
        assert {m.id for m in everything} == {m.id for m in added}
        assert len(reader._snap.decoded) == 0  # decoded for the caller only
        assert reader.list() == everything  # and decoded again, the same
        few = reader.list(limit=2)
        assert len(few) == 2 and len(reader._snap.decoded) == 2
        oldest = reader.get(added[0].id)  # not among the two newest listed above
        assert oldest is not None and oldest.id == added[0].id
        assert len(reader._snap.decoded) == 3
    finally:
        reader.close()
