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
