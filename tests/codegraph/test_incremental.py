"""Incremental re-indexing, interruption and resume, and files that must not break a run."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from engram.codegraph import CodeGraph
from engram.config import IndexConfig
from engram.workspace import Workspace

from .conftest import write_tree

BASE = {
    "a.py": "import b\ndef fa():\n    return b.fb()\n",
    "b.py": "import c\ndef fb():\n    return c.fc()\n",
    "c.py": "def fc():\n    return 1\n",
    "d.py": "def fd():\n    return 2\n",
}


def closure(graph: CodeGraph) -> set[tuple[str, str, int]]:
    conn = sqlite3.connect(graph.db_path)
    rows = conn.execute(
        """SELECT fa.path, fd.path, c.depth FROM closure c
           JOIN files fa ON fa.id=c.ancestor JOIN files fd ON fd.id=c.descendant"""
    ).fetchall()
    conn.close()
    return {(a, d, depth) for a, d, depth in rows}


def fresh_closure(root: Path, tmp_path: Path) -> set[tuple[str, str, int]]:
    graph = CodeGraph(Workspace.open(root), db_path=tmp_path / "fresh.sqlite")
    graph.index()
    result = closure(graph)
    graph.close()
    return result


def count_closure_rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gains an item each time a graph rebuilds its whole closure."""
    from engram.codegraph import graph as graph_module

    rebuilds: list[int] = []
    rebuild = graph_module.CodeGraph._rebuild_closure

    def counted(
        self: CodeGraph,
        adjacency: graph_module._Adjacency,
        checkpoint: graph_module._Checkpoint | None = None,
    ) -> None:
        rebuilds.append(1)
        rebuild(self, adjacency, checkpoint)

    monkeypatch.setattr(graph_module.CodeGraph, "_rebuild_closure", counted)
    return rebuilds


def test_reindex_replaces_edges_and_updates_closure(make_graph, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(BASE)
    root = graph.workspace.root
    assert ("c.py", "a.py", 2) in closure(graph)
    # b now depends on d instead of c
    (root / "b.py").write_text("import d\ndef fb():\n    return d.fd()\n")
    result = graph.reindex_file("b.py")
    assert result.changed
    assert set(graph.dependencies("b.py")) == {"d.py"}
    rows = closure(graph)
    assert ("c.py", "a.py", 2) not in rows and ("c.py", "b.py", 1) not in rows
    assert ("d.py", "a.py", 2) in rows
    assert rows == fresh_closure(root, tmp_path)
    # unchanged content is skipped by hash
    assert not graph.reindex_file("b.py").changed


def test_index_skips_unchanged_files_by_hash(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(BASE)
    root = graph.workspace.root
    report = graph.index()
    assert report.files_indexed == 0 and report.files_unchanged == 4
    # touched but identical content: not re-parsed
    os.utime(root / "c.py", ns=(1, 1))
    report = graph.index()
    assert report.files_indexed == 0
    (root / "c.py").write_text("def fc():\n    return 3\n")
    report = graph.index()
    assert report.files_indexed == 1 and report.changed_files == ["c.py"]


def test_new_and_deleted_files_update_resolution(make_graph, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph({"main.py": "import later\n"})
    root = graph.workspace.root
    assert graph.dependencies("main.py") == {}
    (root / "later.py").write_text("x = 1\n")
    graph.reindex_file("later.py")
    assert set(graph.dependencies("main.py")) == {"later.py"}
    (root / "later.py").unlink()
    report = graph.index()
    assert report.removed_files == ["later.py"]
    assert graph.dependencies("main.py") == {}
    assert closure(graph) == fresh_closure(root, tmp_path)


def test_a_removed_file_takes_the_closure_rows_through_it(make_graph, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """z imports a, a imports b, b imports c: with b gone (an index run, or the LSP's
    re-index of the deleted path), c has no dependents left; a's and z's rows through b
    went with it (they outlived b when its dependents' rows on it were deleted before
    their resolution compared old and new dependencies)."""
    files = {"z.py": "import a\n", "a.py": "import b\n", "b.py": "import c\n", "c.py": "X = 1\n"}
    graph = make_graph(files)
    root = graph.workspace.root
    for how in ("index", "reindex_file"):
        write_tree(root, files)
        graph.index()
        assert [d[0] for d in graph.dependents("c.py")] == ["b.py", "a.py", "z.py"]
        (root / "b.py").unlink()
        if how == "index":
            assert graph.index().removed_files == ["b.py"]
        else:
            assert graph.reindex_file("b.py").removed
        assert graph.dependents("c.py") == []
        assert graph.dependencies("a.py") == {}
        assert closure(graph) == fresh_closure(root, tmp_path / how) == {("a.py", "z.py", 1)}


def test_interrupted_index_resumes_without_corruption(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    files = {f"m{i:03}.py": f"import m{i + 1:03}\ndef f{i}():\n    pass\n" for i in range(250)}
    write_tree(root, files)
    graph = CodeGraph(Workspace.open(root), IndexConfig())
    seen: list[int] = []

    def progress(done: int, total: int, path: str) -> None:
        seen.append(done)

    report = graph.index(progress=progress, cancel=lambda: len(seen) > 150)
    assert report.interrupted
    assert 100 <= graph.stats()["files"] < 250  # whole batches were committed
    graph.close()

    graph = CodeGraph(Workspace.open(root), IndexConfig())
    report = graph.index()
    assert not report.interrupted
    assert report.files_indexed + report.files_unchanged == 250
    assert report.files_indexed < 250  # the committed batch was not redone
    assert ("m002.py", "m000.py", 2) in closure(graph)
    assert closure(graph) == fresh_closure(root, tmp_path)
    graph.close()


def test_keyboard_interrupt_rolls_back_the_open_batch(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_tree(root, {f"m{i}.py": "x = 1\n" for i in range(30)})
    graph = CodeGraph(Workspace.open(root), IndexConfig())

    def progress(done: int, total: int, path: str) -> None:
        if done == 10:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        graph.index(progress=progress)
    assert graph.stats()["files"] == 0
    assert graph.index().files_indexed == 30
    graph.close()


def test_binary_huge_and_badly_encoded_files_never_fail(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(
        {
            "ok.py": "def fine():\n    pass\n",
            "latin.py": "# caf\xe9\ndef f():\n    return 'na\xefve'\n".encode("latin-1"),
            "blob.py": b"\x00\x01\x02binary",
            "big.py": "x = 1\n" * 500,
            "broken.py": "def broken(:\n    pass\nclass Ok:\n    pass\n",
            "utf16.ts": "export const a = 1;".encode("utf-16"),
        },
        max_file_bytes=1000,
    )
    report = graph.index()  # everything already stored; nothing fails on a second run
    assert report.files_indexed == 0
    assert {s.name for s in graph.symbols_in("latin.py")} == {"f"}
    assert "Ok" in {s.name for s in graph.symbols_in("broken.py")}
    assert graph.symbols_in("blob.py") == [] and graph.symbols_in("big.py") == []
    statuses = {path: status for path, _, _, status in graph.files()}
    assert statuses["blob.py"] == "binary" and statuses["big.py"] == "skipped"
    assert statuses["utf16.ts"] == "binary"


def test_gitignore_is_respected(tmp_workspace: Workspace) -> None:
    write_tree(
        tmp_workspace.root,
        {".gitignore": "generated/\n", "keep.py": "x = 1\n", "generated/out.py": "y = 2\n"},
    )
    graph = CodeGraph(tmp_workspace)
    graph.index()
    assert [p for p, *_ in graph.files()] == ["keep.py"]
    graph.close()


def test_gitignore_outside_git(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write_tree(
        root,
        {
            ".gitignore": "*.gen.py\n",
            "a.py": "",
            "b.gen.py": "",
            "sub/.gitignore": "x.py\n",
            "sub/x.py": "",
            "sub/y.py": "",
        },
    )
    graph = CodeGraph(Workspace.open(root))
    graph.index()
    assert [p for p, *_ in graph.files()] == ["a.py", "sub/y.py"]
    graph.close()


def test_project_facts(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(
        {
            "pyproject.toml": '[project]\nname = "demo"\ndependencies = ["flask>=3", "attrs"]\n'
            "[tool.pytest.ini_options]\n",
            "package.json": '{"name": "web", "devDependencies": {"vitest": "1", "react": "18"}}',
        }
    )
    facts = {f.key: f for f in graph.index().project_facts}
    assert "Flask" in facts["project.frameworks.python"].content
    assert facts["project.tests.python"].memory_type == "preference"
    assert "React" in facts["project.frameworks.node"].content
    assert "Vitest" in facts["project.tests.node"].content


def edges_of(graph: CodeGraph, src: str) -> set[tuple[str, str | None]]:
    """``(call name, file it resolves to or None)`` of the call edges of ``src``."""
    conn = sqlite3.connect(graph.db_path)
    rows = conn.execute(
        """SELECT e.dst_name, fd.path FROM edges e JOIN files fs ON fs.id=e.src_file
           LEFT JOIN files fd ON fd.id=e.dst_file WHERE fs.path=? AND e.kind='calls'""",
        (src,),
    ).fetchall()
    conn.close()
    return {(str(name), path) for name, path in rows}


def test_callers_follow_when_a_callee_is_removed_or_comes_back(
    make_graph,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """Editing only the callee's file re-resolves its callers (no edit to the caller).

    (A ``from lib import helper`` call keeps pointing at lib: the import names its source.)
    """
    graph = make_graph(
        {
            "lib.py": "def helper():\n    return 1\n\ndef other():\n    return 2\n",
            "app.py": "import lib\n\ndef run():\n    return lib.helper() + lib.other()\n",
        }
    )
    root = graph.workspace.root
    assert {("helper", "lib.py"), ("other", "lib.py")} <= edges_of(graph, "app.py")
    calls = {r for r in graph.symbol_dependents("lib.py", "helper") if r[1] == "calls"}
    assert calls == {("app.py", "calls", 4)}

    (root / "lib.py").write_text("def other():\n    return 2\n")  # helper is gone
    graph.reindex_file("lib.py")
    assert ("helper", "lib.py") not in edges_of(graph, "app.py")
    assert ("other", "lib.py") in edges_of(graph, "app.py")
    assert not [r for r in graph.symbol_dependents("lib.py", "helper") if r[1] == "calls"]

    (root / "lib.py").write_text("def helper():\n    return 3\n\ndef other():\n    return 2\n")
    graph.reindex_file("lib.py")  # and back: the caller's call resolves again
    assert ("helper", "lib.py") in edges_of(graph, "app.py")
    assert closure(graph) == fresh_closure(root, tmp_path)


def test_an_edit_reads_only_the_paths_it_resolves(make_graph, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Re-indexing one edited file must not read every file's path (docs/codegraph.md,
    "At 50,000 files": that map was 90 % of an edit); its imports still resolve, to a
    file it did not import before as well."""
    files: dict[str, str | bytes] = dict(BASE)
    files.update({f"pkg/m{i}.py": f"def m{i}():\n    return {i}\n" for i in range(30)})
    files["pkg/__init__.py"] = ""
    graph = make_graph(files)
    root = graph.workspace.root
    statements: list[str] = []
    graph._db().set_trace_callback(statements.append)
    (root / "b.py").write_text("import d\nfrom pkg import m7\ndef fb():\n    return m7.m7()\n")
    assert graph.reindex_file("b.py").changed
    graph._db().set_trace_callback(None)
    whole_table = [
        s for s in statements if "FROM files" in s and "WHERE" not in s.split("FROM files")[1]
    ]
    assert whole_table == [], whole_table
    assert set(graph.dependencies("b.py")) == {"d.py", "pkg/m7.py"}
    assert closure(graph) == fresh_closure(root, tmp_path)


def _indexes(db_path: Path) -> set[str]:
    conn = sqlite3.connect(db_path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    finally:
        conn.close()


def test_a_cold_index_builds_the_lookup_indexes_after_its_rows(tmp_path: Path) -> None:
    """A cold index loads nodes and edges without the name and target indexes and builds
    them once at the end (docs/codegraph.md, "How indexing works"); a run killed before
    that leaves them out, and the next run or edit puts them back."""
    write_tree(tmp_path / "ws", BASE)
    graph = CodeGraph(Workspace.open(tmp_path / "ws"), db_path=tmp_path / "g.sqlite")
    seen_while_loading: list[set[str]] = []

    def progress(done: int, total: int, what: str) -> None:
        if done == 2:
            seen_while_loading.append(_indexes(tmp_path / "g.sqlite"))

    graph.index(progress=progress)
    deferred = {"edges_dst", "edges_unresolved", "file_deps_dst"}
    assert seen_while_loading and not deferred & seen_while_loading[0]
    assert deferred <= _indexes(tmp_path / "g.sqlite")
    assert graph.dependents("c.py")  # the graph itself is complete

    conn = sqlite3.connect(tmp_path / "g.sqlite")
    for name in deferred:  # what a cold run killed part-way leaves
        conn.execute(f"DROP INDEX {name}")
    conn.close()
    (tmp_path / "ws" / "d.py").write_text("import c\ndef fd():\n    return c.fc()\n")
    assert graph.reindex_file("d.py").changed
    assert deferred <= _indexes(tmp_path / "g.sqlite")

    conn = sqlite3.connect(tmp_path / "g.sqlite")
    for name in deferred:
        conn.execute(f"DROP INDEX {name}")
    conn.close()
    graph.index()  # an index run over a graph that has files keeps the indexes throughout
    assert deferred <= _indexes(tmp_path / "g.sqlite")
    graph.close()


def graph_rows(db_path: Path) -> dict[str, set[tuple[object, ...]]]:
    """Every stored fact with files named instead of numbered (row ids may differ)."""
    conn = sqlite3.connect(db_path)
    queries = {
        "files": "SELECT path, language, hash, status, note, package, stale_at IS NULL FROM files",
        "nodes": """SELECT f.path, n.kind, n.name, n.qualname, n.start_line, n.end_line,
                    p.qualname, n.exported FROM nodes n JOIN files f ON f.id=n.file_id
                    LEFT JOIN nodes p ON p.id=n.parent_id""",
        "edges": """SELECT s.path, e.kind, e.dst_name, d.path, e.target, e.weight, e.line,
                    n.qualname FROM edges e JOIN files s ON s.id=e.src_file
                    LEFT JOIN files d ON d.id=e.dst_file LEFT JOIN nodes n ON n.id=e.src_node""",
        "imports": """SELECT f.path, i.module, i.names, i.wildcard, i.line, i.resolved
                      FROM imports i JOIN files f ON f.id=i.file_id""",
        "file_deps": """SELECT s.path, d.path, x.weight, x.kinds FROM file_deps x
                        JOIN files s ON s.id=x.src JOIN files d ON d.id=x.dst""",
    }
    out = {name: set(conn.execute(sql).fetchall()) for name, sql in queries.items()}
    conn.close()
    return out


def test_an_edit_that_stores_the_same_rows_rewrites_none(make_graph, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A second edit whose content stores the rows the first stored (a comment added at
    the end, a changed literal) moves only the file's hash: no rows rewritten, nothing
    resolved again, and the graph is the one a fresh index builds."""
    graph = make_graph(BASE)
    root = graph.workspace.root
    original = (root / "b.py").read_text()
    (root / "b.py").write_text(original + "# one\n")
    assert graph.reindex_file("b.py").changed  # the first edit stores its rows
    ids = {r[0] for r in graph._db().execute("SELECT id FROM nodes")}
    statements: list[str] = []
    graph._db().set_trace_callback(statements.append)
    (root / "b.py").write_text(original + "# one\n# two\n")
    assert graph.reindex_file("b.py").changed
    graph._db().set_trace_callback(None)
    writes = [s for s in statements if s.lstrip().startswith(("INSERT", "DELETE"))]
    assert writes == [], writes
    assert {r[0] for r in graph._db().execute("SELECT id FROM nodes")} == ids
    fresh = CodeGraph(Workspace.open(root), db_path=tmp_path / "fresh.sqlite")
    fresh.index()
    fresh.close()
    assert graph_rows(graph.db_path) == graph_rows(tmp_path / "fresh.sqlite")
    assert closure(graph) == fresh_closure(root, tmp_path / "again")
    # a structural change after it is stored in full
    (root / "b.py").write_text("import d\ndef fb():\n    return d.fd()\n")
    graph.reindex_file("b.py")
    assert set(graph.dependencies("b.py")) == {"d.py"}


def test_rows_another_connection_wrote_are_never_kept(make_graph, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """What this connection stored last is kept only while nobody wrote since: here another
    process stored a different version of the file in between."""
    graph = make_graph(BASE)
    root = graph.workspace.root
    original = (root / "b.py").read_text()
    (root / "b.py").write_text(original + "# one\n")
    graph.reindex_file("b.py")
    other = CodeGraph(Workspace.open(root))
    try:
        (root / "b.py").write_text("import d\ndef fb():\n    return d.fd()\n")
        other.reindex_file("b.py")
    finally:
        other.close()
    (root / "b.py").write_text(original + "# one\n# two\n")  # same rows as this one stored
    graph.reindex_file("b.py")
    assert set(graph.dependencies("b.py")) == {"c.py"}
    (tmp_path / "again").mkdir()
    fresh = CodeGraph(Workspace.open(root), db_path=tmp_path / "again" / "fresh.sqlite")
    fresh.index()
    fresh.close()
    assert graph_rows(graph.db_path) == graph_rows(tmp_path / "again" / "fresh.sqlite")


def test_a_whole_closure_rebuild_stores_the_rows_of_the_per_file_update(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rebuild of the whole closure (rows appended in the walk's order, its unique key
    and descendant index built after) stores every row, weight and path the per-file
    update stores, and leaves both indexes in place."""
    from engram.codegraph import graph as graph_module

    root = tmp_path / "ws"
    files = {
        f"p{i:02}.py": "".join(f"import p{j:02}\n" for j in (i + 1, i + 2, i * 3 % 40) if j < 40)
        + f"def f{i}():\n    return p{(i + 1) % 40:02}.f{(i + 1) % 40}()\n"
        for i in range(40)
    }
    write_tree(root, files)
    rebuilds = count_closure_rebuilds(monkeypatch)

    def index(full: bool, name: str) -> list[tuple[object, ...]]:
        monkeypatch.setattr(graph_module, "_FULL_CLOSURE_OVER", 0 if full else 10**9)
        graph = CodeGraph(Workspace.open(root), db_path=tmp_path / name)
        graph.index()
        conn = sqlite3.connect(graph.db_path)
        rows = conn.execute(
            """SELECT fa.path, fd.path, c.depth, c.weight, c.path FROM closure c
               JOIN files fa ON fa.id=c.ancestor JOIN files fd ON fd.id=c.descendant
               ORDER BY 1, 2"""
        ).fetchall()
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        conn.close()
        graph.close()
        assert {"closure_key", "closure_descendant"} <= names
        return rows

    rebuilt = index(True, "full.sqlite")
    assert rebuilds == [1]
    assert len(rebuilt) > 100 and any(depth == 3 for _, _, depth, _, _ in rebuilt)
    assert rebuilt == index(False, "per_file.sqlite")
    assert rebuilds == [1]


def _tables(db_path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows, row ids included (not the clock: mtime, stale mark)."""
    conn = sqlite3.connect(db_path)
    queries = {
        "files": "SELECT id, path, language, hash, size, status, note, package, "
        "stale_at IS NULL, basename FROM files ORDER BY id",
        "nodes": "SELECT * FROM nodes ORDER BY id",
        "edges": "SELECT * FROM edges ORDER BY id",
        "imports": "SELECT rowid, * FROM imports ORDER BY rowid",
        "file_deps": "SELECT * FROM file_deps ORDER BY src, dst",
        "closure": "SELECT * FROM closure ORDER BY ancestor, descendant",
    }
    out = {table: conn.execute(sql).fetchall() for table, sql in queries.items()}
    conn.close()
    return out


def test_chunked_resolution_stores_the_rows_of_one_file_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk pass resolves files a chunk at a time (docs/codegraph.md, "How indexing
    works"): the tables, row ids included, are the ones one file at a time gives, for a
    cold index, edits, a resumed resolution whose old import edges are in the way of the
    new ones' ids, and a removed file."""
    from engram.codegraph import graph as graph_module

    files = {
        f"p{i:02}.py": "".join(f"import p{j:02}\n" for j in (i + 1, i + 2, i * 3 % 40) if j < 40)
        + f"from p{(i + 5) % 40:02} import f{(i + 5) % 40}\n"
        + f"class C{i}(p{(i + 1) % 40:02}.Base):\n    def m(self):\n        return f{i}()\n"
        + f"def f{i}():\n    return p{(i + 1) % 40:02}.f{(i + 1) % 40}()\n"
        for i in range(40)
    }
    files.update({f"go/pkg/g{i}.go": f"package pkg\nfunc G{i}() int {{ return G{(i + 1) % 5}() }}\n"
                  for i in range(5)})  # fmt: skip

    def run(name: str, *, batch: int, chunk: int) -> list[dict[str, list[tuple[object, ...]]]]:
        root = tmp_path / name
        write_tree(root, files)
        monkeypatch.setattr(graph_module, "BATCH_SIZE", batch)
        monkeypatch.setattr(graph_module, "_RESOLVE_CHUNK", chunk)
        monkeypatch.setattr(graph_module, "_PRELOAD_IDS_OVER", 0)
        graph = CodeGraph(Workspace.open(root), db_path=tmp_path / f"{name}.sqlite")

        def edit(i: int, imported: int) -> None:
            path = root / f"p{i:02}.py"
            path.write_text(f"import p{imported:02}\n" + path.read_text())
            os.utime(path, ns=(imported, imported))

        graph.index()
        states = [_tables(graph.db_path)]
        # an edited file's rows take the highest ids; a batch that stores it again after
        # other files deletes them before those files' rows go in
        edit(39, 20)
        graph.reindex_file("p39.py")
        for i in range(30, 40, 3):
            edit(i, (i + 7) % 40)
        graph.index()
        states.append(_tables(graph.db_path))
        # files left to resolve (a run stopped after its parse phase), one of them with the
        # highest import edges, after files of its chunk that insert theirs
        edit(39, 21)
        graph.reindex_file("p39.py")
        conn = sqlite3.connect(graph.db_path)
        conn.execute("UPDATE files SET stale_at=1 WHERE path IN ('p30.py', 'p35.py', 'p39.py')")
        conn.commit()
        conn.close()
        graph.index()
        states.append(_tables(graph.db_path))
        (root / "p37.py").unlink()  # and the files that imported a removed one
        graph.index()
        states.append(_tables(graph.db_path))
        graph.close()
        return states

    one_at_a_time = run("single", batch=1, chunk=1)
    assert len(one_at_a_time[0]["edges"]) > 200 and one_at_a_time[0]["file_deps"]
    assert one_at_a_time[1] != one_at_a_time[2] != one_at_a_time[3]
    assert run("batched", batch=7, chunk=6) == one_at_a_time


SHIFTED = {
    "base.py": "class Base:\n    pass\n",
    "lib.py": (
        "from base import Base\n"
        "import util\n"
        "\n"
        "class Shape(Base):\n"
        "    def area(self):\n"
        "        side = util.side()\n"
        "        return side * side\n"
        "\n"
        "    def grow(self):\n"
        "        return self.area() + 1\n"
        "\n"
        "def make():\n"
        "    return Shape()\n"
    ),
    "util.py": "def side():\n    return 2\n",
    "app.py": "from lib import make\n\ndef run():\n    return make().area()\n",
}


def _reindex_traced(graph: CodeGraph, rel: str, text: str) -> list[str]:
    """Write ``text`` to ``rel``, re-index it and return the statements it wrote."""
    (graph.workspace.root / rel).write_text(text)
    statements: list[str] = []
    graph._db().set_trace_callback(statements.append)
    try:
        assert graph.reindex_file(rel).changed
    finally:
        graph._db().set_trace_callback(None)
    verbs = ("INSERT", "DELETE", "UPDATE")
    return [s for s in statements if s.lstrip().startswith(verbs)]


def _same_as_fresh(graph: CodeGraph, scratch: Path) -> None:
    scratch.mkdir()
    fresh = CodeGraph(Workspace.open(graph.workspace.root), db_path=scratch / "fresh.sqlite")
    fresh.index()
    fresh.close()
    assert graph_rows(graph.db_path) == graph_rows(scratch / "fresh.sqlite")
    assert closure(graph) == fresh_closure(graph.workspace.root, scratch)


def test_an_edit_that_only_moves_lines_updates_them_in_place(make_graph, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Lines inserted at the top, inside a method or deleted again move the line numbers
    of the rows past the edit with one UPDATE a table: no row is deleted or inserted, ids
    stay, nothing is resolved again, and the graph is the one a fresh index builds."""
    graph = make_graph(SHIFTED)
    original = SHIFTED["lib.py"]
    lines = original.splitlines(keepends=True)
    _reindex_traced(graph, "lib.py", original + "# end\n")  # the first edit stores in full
    ids = {r[0] for r in graph._db().execute("SELECT id FROM nodes")}
    top = "# a new first line\n"
    inside = "".join(lines[:6]) + "        # a comment inside area()\n\n" + "".join(lines[6:])
    for step, text in enumerate(
        [
            top + "\n" + original + "# end\n",  # every row moves
            top + original + "# end\n",  # back by one
            top + inside + "# end\n",  # area() and Shape span the edit: their ends move
            top + original + "# end\n",  # deleted again
        ]
    ):
        writes = _reindex_traced(graph, "lib.py", text)
        assert not [s for s in writes if s.lstrip().startswith(("INSERT", "DELETE"))], writes
        assert any("SET line = line +" in s for s in writes), writes
        assert {r[0] for r in graph._db().execute("SELECT id FROM nodes")} == ids
        _same_as_fresh(graph, tmp_path / f"fresh{step}")
    start, end = (
        graph._db()
        .execute("SELECT start_line, end_line FROM nodes WHERE qualname='Shape.area'")
        .fetchone()
    )
    assert (start, end) == (6, 8)


def test_an_edit_that_moves_lines_unevenly_or_changes_a_row_is_stored_in_full(
    make_graph,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """A line added at the top and one removed further down (lines before the removal move,
    lines after it do not), or a shift together with a renamed method: the rows are written
    again and resolved, and the graph is still the one a fresh index builds."""
    graph = make_graph(SHIFTED)
    original = SHIFTED["lib.py"]
    _reindex_traced(graph, "lib.py", original + "# end\n")
    uneven = "# top\n" + original.replace("\n\ndef make", "\ndef make")
    renamed = "# top\n\n" + original.replace("def grow", "def enlarge")
    for step, text in enumerate([uneven, renamed]):
        writes = _reindex_traced(graph, "lib.py", text)
        assert any(s.lstrip().startswith("INSERT INTO nodes") for s in writes), writes
        _same_as_fresh(graph, tmp_path / f"fresh{step}")
    assert graph.find_symbol("lib.py", "enlarge") is not None


def test_moved_lines_of_exports_and_resolved_imports_match_a_fresh_index(
    make_graph,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    """JavaScript: exported definitions (an exports edge each) and a resolved import (an
    imports edge) carry lines too; moved in place they are the rows a fresh index stores."""
    lib = (
        "import { side } from './util.js';\n"
        "\n"
        "export class Shape extends Base {\n"
        "  area() {\n"
        "    return side() * side();\n"
        "  }\n"
        "}\n"
        "\n"
        "export function make() {\n"
        "  return new Shape();\n"
        "}\n"
    )
    graph = make_graph({"util.js": "export function side() {\n  return 2;\n}\n", "lib.js": lib})
    _reindex_traced(graph, "lib.js", lib + "// end\n")
    kinds = {r[0] for r in graph._db().execute("SELECT DISTINCT kind FROM edges")}
    assert {"exports", "imports", "calls", "extends"} <= kinds
    head, tail = lib.split("    return side()")
    for step, text in enumerate(
        [
            "// top\n// top\n" + lib,
            "// top\n" + lib,
            "// top\n" + head + "\n\n    return side()" + tail,
        ]
    ):
        writes = _reindex_traced(graph, "lib.js", text)
        assert not [s for s in writes if s.lstrip().startswith(("INSERT", "DELETE"))], writes
        _same_as_fresh(graph, tmp_path / f"fresh{step}")
    line = graph._db().execute("SELECT line FROM edges WHERE kind='exports' AND dst_name='make'")
    assert line.fetchone()[0] == 12


def test_a_cold_index_where_few_files_import_rebuilds_the_same_closure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no closure yet, a cold index rebuilds it whole even when fewer than half the
    files have dependencies (at 58k files: 24,606 of 67,227), and stores the rows the
    per-file update stores."""
    from engram.codegraph import graph as graph_module

    root = tmp_path / "ws"
    files = {f"leaf{i:02}.py": f"def g{i}():\n    return {i}\n" for i in range(30)}
    files.update({
        f"p{i:02}.py": f"import p{(i + 1) % 10:02}\nimport leaf{i * 3:02}\n"
        f"def f{i}():\n    return p{(i + 1) % 10:02}.f{(i + 1) % 10}()\n"
        for i in range(10)
    })  # fmt: skip
    write_tree(root, files)
    rebuilds = count_closure_rebuilds(monkeypatch)

    def index(threshold: int, name: str) -> dict[str, list[tuple[object, ...]]]:
        monkeypatch.setattr(graph_module, "_FULL_CLOSURE_OVER", threshold)
        graph = CodeGraph(Workspace.open(root), db_path=tmp_path / name)
        graph.index()
        graph.close()
        return _tables(tmp_path / name)

    rebuilt = index(5, "rebuilt.sqlite")
    assert rebuilds == [1] and any(r[2] == 3 for r in rebuilt["closure"])
    assert index(10**9, "per_file.sqlite") == rebuilt
    assert rebuilds == [1]


def test_an_index_run_pauses_the_collector_and_leaves_it_as_it_found_it(tmp_path: Path) -> None:
    """A bulk pass runs with the cyclic collector off (its rows die by reference counting;
    docs/codegraph.md) and leaves it on or off as it was, also when the run fails."""
    import gc

    write_tree(tmp_path / "ws", BASE)
    graph = CodeGraph(Workspace.open(tmp_path / "ws"), db_path=tmp_path / "g.sqlite")
    seen: list[bool] = []

    def progress(done: int, total: int, what: str) -> None:
        seen.append(gc.isenabled())

    assert gc.isenabled()
    graph.index(progress=progress)
    assert seen and not any(seen[:-1]) and gc.isenabled()

    def stop(done: int, total: int, what: str) -> None:
        raise KeyboardInterrupt

    (tmp_path / "ws" / "e.py").write_text("def fe():\n    return 5\n")
    with pytest.raises(KeyboardInterrupt):
        graph.index(progress=stop)
    assert gc.isenabled()
    gc.disable()
    try:
        graph.index()
        assert not gc.isenabled()
    finally:
        gc.enable()
    graph.close()


def test_a_cold_index_resolves_from_its_kept_rows_what_reading_them_back_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold run hands its parse phase's calls and definition names to its resolution
    instead of reading them back (docs/codegraph.md, "How indexing works"); every table,
    row ids included, is the one reading them back gives: with everything kept, with
    nothing kept (the budget), with the budget spent part way (the rest read back), and for
    a file whose call object holds a separator of the kept text (read back)."""
    from engram.codegraph import graph as graph_module

    root = tmp_path / "ws"
    files: dict[str, str | bytes] = {
        f"p{i:02}.py": "".join(f"import p{j:02}\n" for j in (i + 1, i + 2, i * 3 % 30) if j < 30)
        + f"from p{(i + 5) % 30:02} import f{(i + 5) % 30}\n"
        + f"class C{i}(p{(i + 1) % 30:02}.Base):\n    def m(self):\n"
        + f"        return self.n() + f{i}() + p{(i + 2) % 30:02}.f{(i + 2) % 30}()\n"
        + f"def f{i}():\n    return p{(i + 1) % 30:02}.f{(i + 1) % 30}() + len([])\n"
        for i in range(30)
    }
    files.update({f"go/pkg/g{i}.go": f"package pkg\nfunc G{i}() int {{ return G{(i + 1) % 5}() }}\n"
                  for i in range(5)})  # fmt: skip
    files["sep.py"] = 'import p01\ndef s():\n    return "a\x01b".join(p01.f1())\n'
    files["blob.py"] = b"\0binary"
    write_tree(root, files)
    monkeypatch.setattr(graph_module, "_RESOLVE_CHUNK", 7)
    monkeypatch.setattr(graph_module, "_PRELOAD_IDS_OVER", 0)

    def index(name: str, budget: int) -> tuple[dict[str, list[tuple[object, ...]]], int]:
        graph = CodeGraph(Workspace.open(root), db_path=tmp_path / f"{name}.sqlite")
        graph.kept_budget = budget
        statements: list[str] = []
        graph._db().set_trace_callback(statements.append)
        graph.index()
        graph.close()
        read_back = [
            s for s in statements if "FROM edges WHERE src_file IN" in s and "'calls'" in s
        ]
        return _tables(tmp_path / f"{name}.sqlite"), len(read_back)

    kept, kept_reads = index("kept", 10**9)
    read, reads = index("read", 0)
    partly, partly_reads = index("partly", 120)
    assert kept["edges"] and any(r[1] == "calls" and r[4] is not None for r in kept["edges"])
    assert any(r[-1] for r in kept["imports"]) and kept["file_deps"] and kept["closure"]
    assert kept == read == partly
    # only the chunk with the file whose calls could not be kept read calls back
    assert kept_reads == 1
    assert reads == len(range(0, 37, 7)) > partly_reads > kept_reads


def test_import_names_are_stored_as_json_dumps_writes_them(make_graph) -> None:  # type: ignore[no-untyped-def]
    """The parse phase joins each import's names from their JSON forms instead of calling
    ``json.dumps`` per import (docs/codegraph.md, "a fourth pass"); the stored text is the
    same, whatever the names hold, and so are the queries that read it."""
    import json

    from engram.codegraph.parse_worker import json_names as _json_names

    for names in ([], ["a"], ["a", "b"], ['q"uote', "back\\slash", "tab\t", "é", "\u2028", "日本"]):
        assert _json_names(names) == json.dumps(names)
    graph = make_graph({
        "lib.py": "def helper():\n    return 1\ndef café():\n    return 2\n",
        "app.py": "from lib import helper, café\nimport lib\n\ndef run():\n    return helper()\n",
    })  # fmt: skip
    stored = graph._db().execute("SELECT names FROM imports ORDER BY rowid").fetchall()
    assert sorted(json.loads(r[0]) for r in stored) == [[], ["helper", "café"]]
    assert [r[0] for r in stored if json.loads(r[0])] == [json.dumps(["helper", "café"])]
    assert ("app.py", "imports", 1) in graph.symbol_dependents("lib.py", "helper")
