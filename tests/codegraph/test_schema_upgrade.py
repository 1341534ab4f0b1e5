"""The graph database across Engram versions: old graphs open, upgraded or rebuilt, never a crash.

Schema 2 added ``files.basename`` (indexed) so naming-convention lookups do not scan every
path (docs/codegraph.md, "At 50,000 files"); schema 3 made the closure a rowid table with a
unique key index, so a cold index appends its rows, and schema 4 split ``edges_dst`` into a
resolved and an unresolved partial index (docs/codegraph.md, "a fourth pass").
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
GO_FILE = (
    "package cmd\ntype Command struct{}\ntype Other struct{}\n"
    "func (c *Command) Execute() error { return nil }\nfunc (o Other) Execute() {}\n"
)


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


def _downgrade_to_schema_2(db: Path) -> None:
    """Make ``db`` what Engram wrote before schema 3: the closure ``WITHOUT ROWID`` keyed
    by ``(ancestor, descendant)``, the ``nodes_name`` index, and (before schema 4) one
    ``edges_dst`` index over resolved and unresolved targets."""
    conn = sqlite3.connect(db)
    conn.executescript(
        """
        CREATE TABLE closure_old (
            ancestor INTEGER NOT NULL, descendant INTEGER NOT NULL, depth INTEGER NOT NULL,
            weight REAL NOT NULL, path TEXT NOT NULL, PRIMARY KEY (ancestor, descendant)
        ) WITHOUT ROWID;
        INSERT INTO closure_old SELECT * FROM closure;
        DROP TABLE closure;
        ALTER TABLE closure_old RENAME TO closure;
        CREATE INDEX closure_descendant ON closure(descendant);
        CREATE INDEX nodes_name ON nodes(name);
        DROP INDEX edges_dst;
        DROP INDEX edges_unresolved;
        CREATE INDEX edges_dst ON edges(dst_file, kind, dst_name);
        UPDATE meta SET value='2' WHERE key='schema';
        """
    )
    conn.commit()
    conn.close()


def _closure_and_indexes(db: Path) -> tuple[list[tuple[object, ...]], set[str], str]:
    """The closure's rows, the names of every table and index (an index defined with a
    WHERE clause named ``name WHERE``), and the closure table's SQL."""
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT * FROM closure ORDER BY ancestor, descendant").fetchall()
    names = {
        f"{r[0]} WHERE" if " WHERE " in str(r[1]).upper() else str(r[0])
        for r in conn.execute("SELECT name, sql FROM sqlite_master")
    }
    table = conn.execute("SELECT sql FROM sqlite_master WHERE name='closure'").fetchone()
    conn.close()
    return rows, names, str(table[0])


def test_a_schema_2_graph_keeps_its_closure_in_the_new_layout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Schema 3 stores the closure as a rowid table with a unique (ancestor, descendant)
    index (a cold index appends its rows instead of sorting them into the key): a schema
    2 graph's rows are copied over, not recomputed, and answer as before; the unread
    ``nodes_name`` index goes, and ``edges_dst`` becomes schema 4's two partial indexes."""
    root = tmp_path / "ws"
    graph = _indexed(root)
    db = graph.db_path
    dependents = graph.dependents("pkg/db.py")
    graph.close()
    rows, _, _ = _closure_and_indexes(db)
    _downgrade_to_schema_2(db)
    assert "WITHOUT ROWID" in _closure_and_indexes(db)[2]

    with caplog.at_level(logging.WARNING, logger="engram.codegraph.graph"):
        reopened = CodeGraph(Workspace.open(root))
        try:
            assert reopened.dependents("pkg/db.py") == dependents
            assert [d[0] for d in dependents] == ["pkg/repo.py"]
            # an edit that changes the dependencies updates the copied rows in place
            (root / "pkg" / "db.py").write_text("from pkg.repo import load\n\ndef connect():\n")
            assert reopened.reindex_file("pkg/db.py").changed
            assert ("pkg/repo.py", 1) in {(d[0], d[1]) for d in reopened.dependents("pkg/db.py")}
            assert ("pkg/db.py", 1) in {(d[0], d[1]) for d in reopened.dependents("pkg/repo.py")}
        finally:
            reopened.close()
    assert any(f"upgrading schema 2 -> {SCHEMA_VERSION}" in r.getMessage() for r in caplog.records)
    upgraded, names, table = _closure_and_indexes(db)
    assert "WITHOUT ROWID" not in table
    assert {"closure_key", "closure_descendant"} <= names and "nodes_name" not in names
    assert {"edges_dst WHERE", "edges_unresolved WHERE"} <= names  # partial, schema 4
    assert len(upgraded) == len(rows) + 1  # pkg/db.py now depends on pkg/repo.py

    fresh = CodeGraph(Workspace.open(root), db_path=tmp_path / "fresh.sqlite")
    fresh.index()
    fresh.close()
    assert upgraded == _closure_and_indexes(tmp_path / "fresh.sqlite")[0]


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
    assert any(f"upgrading schema 1 -> {SCHEMA_VERSION}" in r.getMessage() for r in caplog.records)
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


def test_a_graph_from_an_older_extractor_re_parses_its_go_files_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Extractor 2 names a Go method ``Type.Method``. A graph written before (plain
    ``Method``, no recorded extractor) would keep those rows until each file changed, so
    ``Command.Execute`` would resolve in one file and not the next: opening it makes the
    next index re-parse its Go files, and only those."""
    root = tmp_path / "ws"
    write_tree(root, {**FILES, "cmd/command.go": GO_FILE})
    graph = CodeGraph(Workspace.open(root))
    graph.index()
    db = graph.db_path
    graph.close()
    conn = sqlite3.connect(db)  # what extractor 1 wrote
    conn.execute("UPDATE nodes SET qualname=name WHERE kind='method'")
    conn.execute("DELETE FROM meta WHERE key='extractor'")
    conn.commit()
    conn.close()

    with caplog.at_level(logging.WARNING, logger="engram.codegraph.graph"):
        reopened = CodeGraph(Workspace.open(root))
        try:
            report = reopened.index()
            assert report.files_indexed == 1 and report.files_unchanged == len(FILES)
            names = {s.qualname for s in reopened.symbols_in("cmd/command.go")}
            assert {"Command.Execute", "Other.Execute"} <= names
            assert reopened.index().files_indexed == 0  # once
        finally:
            reopened.close()
    assert any("re-parses 1 files" in r.getMessage() for r in caplog.records)
