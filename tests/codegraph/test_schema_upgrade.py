"""The graph database across Engram versions: old graphs open, upgraded or rebuilt, never a crash.

Schema 2 added ``files.basename`` (indexed) so naming-convention lookups do not scan every
path (docs/codegraph.md, "At 50,000 files").
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest
from tests.codegraph.conftest import write_tree

from engram.codegraph import CodeGraph, ImpactAnalyzer
from engram.codegraph.graph import SCHEMA_VERSION
from engram.workspace import Workspace

FILES: dict[str, str | bytes] = {
    "pkg/__init__.py": "",
    "pkg/db.py": "def connect():\n    return 1\n",
    "pkg/repo.py": "from pkg.db import connect\n\ndef load():\n    return connect()\n",
    "tests/test_db.py": "def test_nothing():\n    pass\n",
    "other/Test_DB.py": "def test_other():\n    pass\n",
    "js/util.js": "export function f() { return 1 }\n",
    "js/util.test.ts": "import { f } from './util'\n",
}


def _indexed(root: Path) -> CodeGraph:
    write_tree(root, FILES)
    graph = CodeGraph(Workspace.open(root))
    graph.index()
    return graph


def _downgrade_to_schema_1(db: Path) -> None:
    """Make ``db`` what Engram wrote before schema 2: no basename column, schema 1."""
    conn = sqlite3.connect(db)
    conn.execute("DROP INDEX files_basename")
    conn.execute("ALTER TABLE files DROP COLUMN basename")
    conn.execute("UPDATE meta SET value='1' WHERE key='schema'")
    conn.commit()
    conn.close()


def test_basename_lookup_is_exact_and_batched(tmp_path: Path) -> None:
    graph = _indexed(tmp_path / "ws")
    try:
        found = graph.paths_with_basenames(["test_db.py", "util.test.ts", "missing.py"])
        # exact: other/Test_DB.py differs in case and is not a test of pkg/db.py by name
        assert found == {"test_db.py": ["tests/test_db.py"], "util.test.ts": ["js/util.test.ts"]}
        assert graph.paths_with_basename("db.py") == ["pkg/db.py"]
        report = ImpactAnalyzer(graph).impact("pkg/db.py")
        assert report.tests == ["tests/test_db.py"]
        assert ImpactAnalyzer(graph).impact("js/util.js").tests == ["js/util.test.ts"]
    finally:
        graph.close()


def test_a_schema_1_graph_is_upgraded_in_place(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "ws"
    graph = _indexed(root)
    db = graph.db_path
    graph.close()
    _downgrade_to_schema_1(db)

    with caplog.at_level(logging.WARNING, logger="engram.codegraph.graph"):
        reopened = CodeGraph(Workspace.open(root))
        try:
            # no re-index: the upgrade fills the column from the stored paths
            assert reopened.paths_with_basename("test_db.py") == ["tests/test_db.py"]
            assert ImpactAnalyzer(reopened).impact("pkg/db.py").tests == ["tests/test_db.py"]
            assert reopened.stats()["files"] == len(FILES)
        finally:
            reopened.close()
    assert any("upgrading schema 1 -> 2" in r.getMessage() for r in caplog.records)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone() == (
        str(SCHEMA_VERSION),
    )
    plan = " ".join(
        str(row)
        for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT path FROM files WHERE basename IN ('a', 'b')"
        )
    )
    conn.close()
    assert "files_basename" in plan


def test_a_graph_from_a_newer_engram_is_discarded_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "ws"
    graph = _indexed(root)
    db = graph.db_path
    graph.close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value='99' WHERE key='schema'")
    conn.commit()
    conn.close()

    with caplog.at_level(logging.WARNING, logger="engram.codegraph.graph"):
        reopened = CodeGraph(Workspace.open(root))
        try:
            assert reopened.stats()["files"] == 0  # discarded, not misread
            reopened.index()
            assert reopened.paths_with_basename("test_db.py") == ["tests/test_db.py"]
        finally:
            reopened.close()
    assert any("has schema 99" in r.getMessage() for r in caplog.records)


def test_a_file_that_is_not_a_database_is_discarded_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "ws"
    write_tree(root, FILES)
    ws = Workspace.open(root)
    db = ws.ensure_engram_dir() / "graph.sqlite"
    db.write_bytes(b"this is not sqlite\n" * 200)

    with caplog.at_level(logging.WARNING, logger="engram.codegraph.graph"):
        graph = CodeGraph(ws)
        try:
            report = graph.index()
            assert report.files_indexed == len(FILES)
            assert graph.paths_with_basename("db.py") == ["pkg/db.py"]
        finally:
            graph.close()
    assert any("unreadable" in r.getMessage() for r in caplog.records)


def test_opening_a_current_graph_waits_for_no_writer(tmp_path: Path) -> None:
    """A language server opening the graph while an index holds the write lock (a long
    resolve) must not wait for it: opening a current graph writes nothing."""
    root = tmp_path / "ws"
    graph = _indexed(root)
    db = graph.db_path
    graph.close()
    writer = sqlite3.connect(db, timeout=0.1, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        reader = CodeGraph(Workspace.open(root))
        try:
            assert reader.paths_with_basename("db.py") == ["pkg/db.py"]
        finally:
            reader.close()
    finally:
        writer.rollback()
        writer.close()


def test_tables_without_a_recorded_schema_are_upgraded(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    graph = _indexed(root)
    db = graph.db_path
    graph.close()
    _downgrade_to_schema_1(db)
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM meta")
    conn.commit()
    conn.close()
    reopened = CodeGraph(Workspace.open(root))
    try:
        assert reopened.paths_with_basename("test_db.py") == ["tests/test_db.py"]
    finally:
        reopened.close()
