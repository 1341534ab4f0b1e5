"""ChunkStore: per-file replace/delete, exact vector search, no FTS index and no copy of the
text (docs/storage.md), and a table of the first layout read and written as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from store_fakes import FakeEmbedder

from engram.store import ChunkStore, CodeChunkRecord
from engram.workspace import Workspace


def chunk(file: str, name: str, start: int, code: str) -> CodeChunkRecord:
    return CodeChunkRecord(
        id=f"{file}#{name}",
        file=file,
        kind="function",
        name=name,
        start_line=start,
        end_line=start + 3,
        content=code,
        content_hash=str(hash(code)),
    )


def test_chunks_round_trip_and_search(tmp_workspace: Workspace) -> None:
    store = ChunkStore(tmp_workspace)
    fake = FakeEmbedder()
    records = [
        chunk("src/auth.py", "loadConfig", 1, "def loadConfig(path): return toml.load(path)"),
        chunk("src/auth.py", "check_token", 9, "def check_token(t): return jwt.decode(t)"),
        chunk("src/db.py", "connect", 1, "def connect(url): return sqlite3.connect(url)"),
    ]
    store.upsert_chunks(records, fake.embed([r.content for r in records]), fake.model_id)
    assert store.count() == 3
    hits = store.vector_search(fake.embed(["sqlite3 connect url"])[0], 2)
    assert hits[0][0] == "src/db.py#connect"
    assert [c.name for c in store.chunks_for_file("src/auth.py")] == ["loadConfig", "check_token"]

    new = [chunk("src/auth.py", "verify", 2, "def verify(sig): return hmac.compare(sig)")]
    store.replace_file("src/auth.py", new, fake.embed([new[0].content]), fake.model_id)
    assert [c.name for c in store.chunks_for_file("src/auth.py")] == ["verify"]
    assert store.get_many(["src/auth.py#verify"]) == new

    other = ChunkStore(tmp_workspace, read_only=True)
    assert other.get_many(["src/db.py#connect"])[0].name == "connect"
    assert store.delete_file("src/db.py") == 1 and store.delete_file("src/db.py") == 0
    assert other.count() == 1
    assert store.vector_search(np.ones(5, np.float32), 3) == []


def test_the_table_keeps_no_fts_index_and_no_copy_of_the_text(tmp_workspace: Workspace) -> None:
    """Code search ranks in process (its own BM25 over file, name and code, and the
    vectors): the table's FTS index over a second and third copy of each chunk's text was
    never searched, and building it was ~1/8 of a cold index's CPU at 58k files."""
    store = ChunkStore(tmp_workspace)
    store.replace_files(["src/a.py"], [chunk("src/a.py", "first", 1, "def first(): pass")])
    with store.bulk():
        for n in range(3):
            file = f"src/m{n}.py"
            store.replace_files([file], [chunk(file, f"fn{n}", 1, f"def fn{n}(): return {n}")])
    store.compact()
    table = store._table.table()
    assert table is not None and table.list_indices() == []
    rows = table.to_arrow()
    assert rows.num_rows == 4
    assert rows.column("text").null_count == rows.column("search_text").null_count == 4
    assert [c.content for c in store.chunks_for_file("src/m2.py")] == ["def fn2(): return 2"]


def test_bulk_writes_defer_compaction_past_their_end(
    tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first index writes hundreds of batches; ``optimize`` after every few of them
    rewrote the growing table each time (O(N²) on a 50k-file workspace), and once at the
    end it rewrote the whole table a cold index had just written (its peak RSS). In
    ``bulk`` the writes do no upkeep and neither does its end; the next write outside
    does what is due."""
    from engram.store import hybrid

    monkeypatch.setattr(hybrid, "OPTIMIZE_EVERY_WRITES", 1)  # upkeep due after every write
    optimized: list[int] = []
    original = hybrid.HybridTable._optimize

    def counting(self: hybrid.HybridTable, table: object) -> None:
        optimized.append(1)
        original(self, table)

    monkeypatch.setattr(hybrid.HybridTable, "_optimize", counting)
    store = ChunkStore(tmp_workspace)
    store.upsert_chunks([chunk("src/a.py", "first", 1, "def first(): pass")])
    assert len(optimized) == 1
    with store.bulk():
        for n in range(6):
            file = f"src/m{n}.py"
            store.replace_files([file], [chunk(file, f"fn{n}", 1, f"def fn{n}(): return {n}")])
            store.replace_files([file], [chunk(file, f"name{n}", 1, f"def name{n}(): pass")])
        assert store.count() == 7  # readers see every row meanwhile
    assert len(optimized) == 1  # nothing while the run went on, nothing at its end
    store.replace_files(["src/x.py"], [chunk("src/x.py", "later", 1, "def later(): pass")])
    assert len(optimized) == 2  # outside bulk, writes keep their upkeep
    assert store.count() == 8


def _first_layout_table(root: Path) -> None:
    """A chunk table as Engram wrote it before: ``text`` and ``search_text`` filled, an
    FTS index over ``search_text``, every column compressed."""
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    from engram.store.chunk_store import chunk_schema

    rows = {
        "id": ["src/old.py#old", "src/keep.py#keep"],
        "file": ["src/old.py", "src/keep.py"],
        "kind": ["function", "function"],
        "name": ["old", "keep"],
        "start_line": [1, 1],
        "end_line": [2, 2],
        "content": ["def old(): pass", "def keep(): pass"],
        "text": ["File: src/old.py\n\ndef old(): pass", "File: src/keep.py\n\ndef keep(): pass"],
        "search_text": ["File: src/old.py\n\ndef old(): pass", "File: src/keep.py\n\nkeep"],
        "content_hash": ["h1", "h2"],
        "vector": [None, None],
        "dim": [0, 0],
        "model_id": [None, None],
    }
    schema = chunk_schema()  # as it was: no field asked for an encoding
    schema = pa.schema([f.remove_metadata() for f in schema], metadata=schema.metadata)
    db = lancedb.connect(str(root / ".engram"))
    table = db.create_table("chunks", pa.table(rows, schema=schema))
    table.create_index("search_text", config=FTS(with_position=False))
    assert [ix.index_type for ix in table.list_indices()] == ["FTS"]


def test_a_table_of_the_first_layout_is_read_and_written_and_loses_its_fts_index(
    tmp_workspace: Workspace,
) -> None:
    """The layout is the same (the two text columns stay, written as nulls), so a table an
    earlier Engram wrote needs no migration and one this Engram writes is still one an
    earlier Engram reads; its FTS index goes at the first write, so that no upkeep keeps
    it up to date."""
    _first_layout_table(tmp_workspace.root)
    store = ChunkStore(tmp_workspace)
    assert [c.name for c in store.all_chunks()] == ["old", "keep"]
    store.replace_files(["src/old.py"], [chunk("src/old.py", "new", 1, "def new(): pass")])
    assert sorted(c.name for c in store.all_chunks()) == ["keep", "new"]
    table = store._table.table()
    assert table is not None and table.list_indices() == []
    texts = dict(
        zip(*(table.to_arrow().column(c).to_pylist() for c in ("id", "text")), strict=True)
    )
    assert texts == {"src/keep.py#keep": "File: src/keep.py\n\ndef keep(): pass",
                     "src/old.py#new": None}  # fmt: skip
    store.close()


def test_the_code_is_stored_as_written(tmp_workspace: Workspace) -> None:
    """``content`` is written without Lance's string compression (~0.4 of the adds' CPU in
    a cold index): the table's data files hold at least the code's bytes."""
    store = ChunkStore(tmp_workspace)
    code = "def same():\n" + "    return 'the same line again'\n" * 4000  # compresses ~100x
    store.replace_files(["src/a.py"], [chunk("src/a.py", "same", 1, code)])
    assert store.get_many(["src/a.py#same"])[0].content == code
    data = tmp_workspace.root / ".engram" / "chunks.lance" / "data"
    assert sum(f.stat().st_size for f in data.iterdir()) >= len(code)
    store.close()
