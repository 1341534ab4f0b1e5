"""ChunkStore: per-file replace/delete, BM25 over contextual text, exact vector search."""

from __future__ import annotations

import numpy as np
import pytest
from store_fakes import FakeEmbedder

from engram.store import ChunkStore, CodeChunkRecord
from engram.store.chunk_store import contextual_chunk_text
from engram.workspace import Workspace


def chunk(file: str, name: str, start: int, code: str) -> CodeChunkRecord:
    text = contextual_chunk_text(file, "function", name, start, start + 3, code)
    return CodeChunkRecord(
        id=f"{file}#{name}",
        file=file,
        kind="function",
        name=name,
        start_line=start,
        end_line=start + 3,
        content=code,
        text=text,
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
    store.upsert_chunks(records, fake.embed([r.text for r in records]), fake.model_id)
    assert store.count() == 3
    assert store.keyword_search("load config", 3)[0][0] == "src/auth.py#loadConfig"
    assert store.keyword_search("db.py", 3)[0][0] == "src/db.py#connect"
    hits = store.vector_search(fake.embed(["sqlite3 connect url"])[0], 2)
    assert hits[0][0] == "src/db.py#connect"
    assert [c.name for c in store.chunks_for_file("src/auth.py")] == ["loadConfig", "check_token"]

    new = [chunk("src/auth.py", "verify", 2, "def verify(sig): return hmac.compare(sig)")]
    store.replace_file("src/auth.py", new, fake.embed([new[0].text]), fake.model_id)
    assert [c.name for c in store.chunks_for_file("src/auth.py")] == ["verify"]
    assert store.keyword_search("jwt decode", 3) == []
    assert store.keyword_search("hmac", 3)[0][0] == "src/auth.py#verify"

    other = ChunkStore(tmp_workspace, read_only=True)
    assert other.get_many(["src/db.py#connect"])[0].name == "connect"
    assert store.delete_file("src/db.py") == 1 and store.delete_file("src/db.py") == 0
    assert other.count() == 1
    assert store.vector_search(np.ones(5, np.float32), 3) == []


def test_bulk_writes_defer_index_upkeep_to_the_end(
    tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first index writes hundreds of batches; ``optimize`` after every few of them
    rewrote the growing table each time (O(N²) on a 50k-file workspace). In ``bulk`` the
    writes do no upkeep and one upkeep at the end leaves every row searchable."""
    from engram.store import hybrid

    monkeypatch.setattr(hybrid, "MAX_UNINDEXED_ROWS", 1)  # upkeep due after every write
    optimized: list[int] = []
    original = hybrid.HybridTable._optimize

    def counting(self: hybrid.HybridTable, table: object) -> None:
        optimized.append(1)
        original(self, table)

    monkeypatch.setattr(hybrid.HybridTable, "_optimize", counting)
    store = ChunkStore(tmp_workspace)
    store.upsert_chunks([chunk("src/a.py", "first", 1, "def first(): pass")])  # FTS built
    with store.bulk():
        for n in range(6):
            file = f"src/m{n}.py"
            store.replace_files([file], [chunk(file, f"fn{n}", 1, f"def fn{n}(): return {n}")])
            store.replace_files([file], [chunk(file, f"name{n}", 1, f"def name{n}(): pass")])
        assert optimized == []  # nothing while the run goes on
        assert store.count() == 7  # and readers see every row meanwhile
    assert len(optimized) == 1  # one upkeep at the end
    assert store.keyword_search("name5", 3)[0][0] == "src/m5.py#name5"
    store.replace_files(["src/x.py"], [chunk("src/x.py", "later", 1, "def later(): pass")])
    assert len(optimized) == 2  # outside bulk, writes keep their upkeep


def _data_bytes(workspace: Workspace) -> int:
    data = workspace.engram_dir / "chunks.lance" / "data"
    return sum(f.stat().st_size for f in data.iterdir())


def test_the_long_text_columns_are_stored_as_written(tmp_workspace: Workspace) -> None:
    """content, text and search_text are written without Lance's string compression: at
    58k files it cost ~6 CPU s of a cold index for ~1/3 of the table's disk (issue 18,
    docs/codegraph.md "A sixth look"). Repetitive code shows it: compressed, these rows
    took a fraction of their bytes."""
    store = ChunkStore(tmp_workspace)
    body = "    total = compute_value(total, item.price, item.count)\n" * 40
    records = [chunk(f"src/m{n}.py", f"fn{n}", 1, f"def fn{n}():\n{body}") for n in range(120)]
    store.upsert_chunks(records)
    raw = sum(len(r.content) + len(r.text) for r in records)
    assert _data_bytes(tmp_workspace) > raw  # search_text on top: never below the two
    back = {r.id: r for r in store.get_many([r.id for r in records])}
    assert [back[r.id] for r in records] == records
    assert store.keyword_search("compute value", 3)


def test_a_table_written_compressed_takes_and_gives_rows_as_before(
    tmp_workspace: Workspace,
) -> None:
    """A chunk table written before (Lance's default encoding) is opened, written and read
    as it was: new rows go in with its own encoding, old and new come back the same."""
    import lancedb
    import pyarrow as pa

    from engram.store.chunk_store import chunk_schema

    schema = chunk_schema()
    old = pa.schema([pa.field(f.name, f.type, f.nullable) for f in schema], schema.metadata)
    directory = tmp_workspace.ensure_engram_dir()
    table = lancedb.connect(str(directory)).create_table("chunks", schema=old)
    first = chunk("src/a.py", "loadConfig", 1, "def loadConfig(path): return toml.load(path)")
    table.add(
        pa.table(
            {
                **{c: [getattr(first, c)] for c in ("id", "file", "kind", "name", "content")},
                **{c: [getattr(first, c)] for c in ("start_line", "end_line", "text")},
                "search_text": [first.text],
                "content_hash": [first.content_hash],
                "vector": [None],
                "dim": [0],
                "model_id": [None],
            },
            schema=old,
        )
    )
    store = ChunkStore(tmp_workspace)
    second = chunk("src/b.py", "connect", 1, "def connect(url): return sqlite3.connect(url)")
    store.upsert_chunks([second])
    assert store.get_many([first.id, second.id]) == [first, second]
    assert store.keyword_search("sqlite3", 3)[0][0] == second.id
    assert store.keyword_search("toml", 3)[0][0] == first.id
    stored = lancedb.connect(str(directory)).open_table("chunks").schema.field("content")
    assert not stored.metadata  # the table keeps the encoding it was written with
