"""Rename maps folded into chains and applied to memories, and renames stored as mined (no
git: the commits are given)."""

from __future__ import annotations

import random
from pathlib import Path

from engram.history import (
    CommitRecord,
    FileChange,
    GitHistory,
    apply_renames,
    fold_renames,
    parse_log,
)
from engram.model import CodeAnchor, Memory, MemoryRelation, RelationType
from engram.workspace import Workspace


def test_fold_renames_chains_and_cancels_round_trips() -> None:
    assert fold_renames([("a", "b"), ("b", "c")]) == {"a": "c", "b": "c"}
    assert fold_renames([("a", "b"), ("b", "a")]) == {"b": "a"}
    assert fold_renames([("a", "b"), ("c", "a")]) == {"a": "b", "c": "a"}
    assert fold_renames([("a", "a"), ("", "x")]) == {}


def test_apply_renames_returns_only_changed_copies() -> None:
    anchored = Memory(
        content="retry the token refresh",
        anchors=[CodeAnchor(file="old.py", symbol="refresh", start_line=3, end_line=9)],
        related_files=["old.py", "new.py", "other.py"],
        relations=[MemoryRelation(RelationType.REQUIRED_WITH, target_file="old.py")],
    )
    untouched = Memory(content="unrelated", related_files=["other.py"])
    changed = apply_renames([anchored, untouched], {"old.py": "new.py"})
    assert [m.id for m in changed] == [anchored.id]
    moved = changed[0]
    assert moved.anchors[0].file == "new.py"
    assert moved.anchors[0].symbol == "refresh" and moved.anchors[0].start_line == 3
    assert moved.related_files == ["new.py", "other.py"]  # de-duplicated, order kept
    assert all(r.target_file == "new.py" for r in moved.relations)
    # the inputs are left alone: the caller decides what to write
    assert anchored.anchors[0].file == "old.py"
    assert apply_renames([anchored], {}) == []


def test_relation_targets_follow_renames() -> None:
    relation = MemoryRelation(RelationType.VALIDATES, target_file="a.py")
    memory = Memory(content="x", relations=[relation])
    (moved,) = apply_renames([memory], {"a.py": "b.py"})
    assert moved.relations[0].target_file == "b.py"


def test_parse_log_reads_renames_and_odd_paths() -> None:
    raw = (
        b"\x01" + b"a" * 40 + b" " + b"b" * 40 + b"\x021700000000\x00\n"
        b"M\x00src/x.py\x00R087\x00old name.py\x00new\tname.py\x00D\x00gone.py\x00"
        b"\x01" + b"c" * 40 + b"\x021700000001\x00"
    )
    # split the stream at awkward places: records must survive chunk boundaries
    chunks = [raw[i : i + 7] for i in range(0, len(raw), 7)]
    first, second = list(parse_log(chunks))
    assert first == CommitRecord(
        "a" * 40,
        ("b" * 40,),
        1700000000,
        (
            FileChange("M", "src/x.py"),
            FileChange("R", "new\tname.py", "old name.py"),
            FileChange("D", "gone.py"),
        ),
    )
    assert first.paths == ["src/x.py", "new\tname.py", "gone.py"]
    assert second.sha == "c" * 40 and second.parents == () and second.changes == ()


def _fold_by_scanning(renames: list[tuple[str, str]]) -> dict[str, str]:
    """The first ``fold_renames``: every rename scans the whole map (quadratic)."""
    final: dict[str, str] = {}
    for old, new in renames:
        if not old or not new or old == new:
            continue
        for key, value in list(final.items()):
            if value == old:
                final[key] = new
        final[old] = new
        for key in [k for k, v in final.items() if k == v]:
            del final[key]
    return final


def test_fold_renames_equals_the_scanning_fold_on_random_chains() -> None:
    # a few names renamed into each other many times: chains, round trips, renames into a
    # name that had a history, empty names; the map and its order must be the scan's
    rng = random.Random(18)
    names = ["a", "b", "c", "d", "e", "f", ""]
    for _ in range(500):
        renames = [(rng.choice(names), rng.choice(names)) for _ in range(rng.randint(0, 30))]
        folded = fold_renames(renames)
        expected = _fold_by_scanning(renames)
        assert folded == expected, renames
        assert list(folded.items()) == list(expected.items()), renames


def _renaming_history() -> list[CommitRecord]:
    """Files renamed in chains, back, into names that had a history, deleted and re-added."""
    rng = random.Random(28)
    names = [f"src/m{i}.py" for i in range(12)]
    records: list[CommitRecord] = []
    for n in range(300):
        old, new = rng.sample(names, 2)
        changes = [FileChange("R", new, old)] if n % 3 == 0 else []
        changes += [FileChange(rng.choice("AMD"), p) for p in rng.sample(names, 3) if p != new]
        records.append(CommitRecord(f"{n:040x}", (), 1_700_000_000 + n, tuple(changes)))
    return records


def _tables(history: GitHistory) -> list[list[tuple[object, ...]]]:
    conn = history._db()
    return [
        conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
        for table in ("paths", "commits", "commit_files", "renames")
    ]


def test_the_canon_index_changes_no_mined_row(tmp_path: Path) -> None:
    # paths(canon) makes a rename's move of the paths it names an index lookup instead of
    # a scan of every path; the rows mined must be those of the schema without it
    records = _renaming_history()
    stores = []
    for name in ("indexed", "scanned"):
        root = tmp_path / name
        root.mkdir()
        history = GitHistory(Workspace.open(root), db_path=root / "history.sqlite")
        if name == "scanned":
            history._db().execute("DROP INDEX paths_canon")
        report = history.ingest(records)
        assert report.renames == 100
        stores.append(_tables(history))
    assert stores[0] == stores[1]
    assert any(canon != path_id for path_id, _path, canon, _alive in stores[0][0])
