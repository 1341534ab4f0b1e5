"""How the SQLite files a store write touches are opened (engram.store.sidefile)."""

from __future__ import annotations

from pathlib import Path

from engram.store.changelog import ChangeLog
from engram.store.digest import Digest
from engram.store.pending import PendingCheck, PendingChecks
from engram.store.sidefile import wal_connect
from engram.workspace import Workspace

#: ``PRAGMA synchronous`` values: 1 is NORMAL, 2 (FULL) fsyncs the WAL on every commit
NORMAL = 1


def test_wal_connect_is_wal_without_an_fsync_per_commit(tmp_path: Path) -> None:
    conn = wal_connect(tmp_path / "x.sqlite", timeout=1.0)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == NORMAL


def test_every_writer_beside_the_store_opens_through_it(tmp_workspace: Workspace) -> None:
    """The change log, the pending checks and the digest (the audit trail has its own
    kill test in tests/trust) all commit without an fsync per commit."""
    changes = ChangeLog(tmp_workspace.engram_dir / "t.changes.sqlite")
    tmp_workspace.ensure_engram_dir()
    changes.record(1, 2, ["m-1"])
    pending = PendingChecks(tmp_workspace)
    pending.add([PendingCheck("m-1", (("m-2", 0.5),), "test")])
    digest = Digest(tmp_workspace)
    connections = [changes._connection(), pending._connect(True), digest._connect(True)]
    assert [c.execute("PRAGMA synchronous").fetchone()[0] for c in connections if c] == [NORMAL] * 3
    assert changes.touched_since(1, 2) == {"m-1"}
    assert [c.memory_id for c in pending.all()] == ["m-1"]
