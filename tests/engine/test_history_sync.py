"""The engine following git history: commit linkage, renames, changed code, co-access.

Real git repositories and the real ``engram.history`` / ``engram.observer``; the memory
store is the in-memory fake of conftest.py, so these run in about a second.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from tests.conftest import git

from engram.app import Engine
from engram.app.history_sync import CODE_CHANGED_CONFIDENCE_FACTOR, CODE_CHANGED_FLAG, sync_history
from engram.app.impact import impact
from engram.app.indexing import IndexOptions, index, run_index
from engram.app.memories import get, list_memories
from engram.app.observe import observe, observer_of, session_summary
from engram.app.remember import remember
from engram.config import EmbedConfig, EngramConfig, ObserverConfig
from engram.workspace import Workspace

from .conftest import Clock, FakeFilter, FakeStore

SOURCE = "def parse(path):\n    # must be absolute\n    return open(path).read()\n\n\nX = 1\n"


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_workspace: Workspace) -> Path:
    root = tmp_workspace.root
    (root / "app.py").write_text(SOURCE)
    (root / "other.py").write_text("Y = 2\n")
    commit_all(root, "init")
    return root


def anchored(engine: Engine, file: str = "app.py", end_line: int = 2) -> str:
    return remember(
        engine, "parse needs an absolute path", file=file, start_line=0, end_line=end_line
    ).memory.id


def test_remember_links_the_head_commit(engine: Engine, repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    memory = remember(engine, "a global fact about this project").memory
    assert memory.provenance.commit_sha == head


def test_remember_without_git_has_no_commit(tmp_path: Path, fake_store: FakeStore) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    config = EngramConfig(embed=EmbedConfig(model="none"))
    engine = Engine(Workspace(plain), config, store=fake_store, filter_factory=FakeFilter)
    memory = remember(engine, "works without git").memory
    assert memory.provenance.commit_sha is None
    assert sync_history(engine).skipped  # says why, does not raise


def test_renamed_file_carries_its_memories(engine: Engine, repo: Path) -> None:
    memory_id = anchored(engine)
    related = remember(engine, "app and other change together", related_files=["app.py"]).memory
    sync_history(engine)  # records the commit the renames are applied up to
    git(repo, "mv", "app.py", "core.py")
    commit_all(repo, "rename")

    report = sync_history(engine)

    assert report.renamed == 2
    moved = get(engine, memory_id)
    assert [a.file for a in moved.anchors] == ["core.py"]
    assert get(engine, related.id).related_files == ["core.py"]
    assert {m.id for m in list_memories(engine, file="core.py")} == {memory_id, related.id}
    assert list_memories(engine, file="app.py") == []
    assert sync_history(engine).renamed == 0  # applied once


def test_first_sync_applies_all_known_renames_but_not_onto_a_new_file(
    engine: Engine, repo: Path
) -> None:
    old_id = anchored(engine)
    git(repo, "mv", "app.py", "core.py")
    commit_all(repo, "rename")
    sync_history(engine)  # first run ever: every mined rename whose old path is gone
    assert get(engine, old_id).anchors[0].file == "core.py"

    git(repo, "mv", "core.py", "engine.py")
    commit_all(repo, "rename again")
    (repo / "core.py").write_text("NEW = True\n")  # a new file under the old name
    commit_all(repo, "new core")
    newer = remember(engine, "the new core module", file="core.py").memory
    sync_history(engine)
    assert get(engine, old_id).anchors[0].file == "engine.py"  # made before the rename
    assert get(engine, newer.id).anchors[0].file == "core.py"  # made after it: stays


def test_committed_change_under_an_anchor_asks_for_review(engine: Engine, repo: Path) -> None:
    memory_id = anchored(engine)
    before = get(engine, memory_id)
    assert before.provenance.commit_sha
    sync_history(engine)
    assert not get(engine, memory_id).needs_review  # nothing changed yet

    (repo / "app.py").write_text(SOURCE.replace("return open(path).read()", "return path"))
    sync_history(engine)
    assert not get(engine, memory_id).needs_review  # uncommitted edit: work in progress

    commit_all(repo, "change parse")
    report = sync_history(engine)
    after = get(engine, memory_id)
    assert report.code_changed == 1
    assert after.needs_review and CODE_CHANGED_FLAG in after.flags
    assert after.confidence == pytest.approx(before.confidence * CODE_CHANGED_CONFIDENCE_FACTOR)
    assert after.stale_at is None  # the file is still there: review, not stale

    sync_history(engine)
    assert get(engine, memory_id).confidence == after.confidence  # penalised once


def test_moved_lines_follow_and_deleted_files_go_stale(engine: Engine, repo: Path) -> None:
    memory_id = anchored(engine)
    gone_id = anchored(engine, "other.py", end_line=0)  # other.py has one line
    (repo / "app.py").write_text("import os\n\n" + SOURCE)
    (repo / "other.py").unlink()
    commit_all(repo, "move parse down, delete other")

    report = sync_history(engine)

    moved = get(engine, memory_id)
    assert (moved.anchors[0].start_line, moved.anchors[0].end_line) == (2, 4)
    assert not moved.needs_review and report.relocated == 1
    assert get(engine, gone_id).stale_at is not None and report.stale_marked == 1

    (repo / "other.py").write_text("Y = 2\n")
    commit_all(repo, "restore other")
    assert sync_history(engine).unstaled == 1
    assert get(engine, gone_id).stale_at is None


def test_coaccess_cold_start_from_co_commits(engine: Engine, repo: Path) -> None:
    for n in range(3):
        (repo / "app.py").write_text(SOURCE + f"\nV = {n}\n")
        (repo / "other.py").write_text(f"Y = {n}\n")
        commit_all(repo, f"change both {n}")
    assert observer_of(engine).coaccess_partners("app.py") == []

    report = sync_history(engine)

    assert report.coaccess_seeded >= 1
    partners = dict(observer_of(engine).coaccess_partners("app.py"))
    assert partners.get("other.py", 0) > 0
    assert sync_history(engine).coaccess_seeded == 0  # same HEAD: nothing to redo
    index(engine, chunks=False, history=False)
    ranked = {r.file: r.reasons for r in impact(engine, "app.py").ranked_files}
    # the seed is co-commits: impact counts them once, as co-change
    assert "opened together" not in ranked["other.py"]


def test_no_seed_when_the_observer_is_off(
    tmp_workspace: Workspace, repo: Path, fake_store: FakeStore
) -> None:
    config = EngramConfig(embed=EmbedConfig(model="none"), observer=ObserverConfig(enabled=False))
    engine = Engine(tmp_workspace, config, store=fake_store, filter_factory=FakeFilter)
    assert sync_history(engine).coaccess_seeded == 0
    assert not (tmp_workspace.engram_dir / "observer").exists()


def test_impact_ranks_a_strong_coaccess_partner(engine: Engine, repo: Path) -> None:
    (repo / "billing.py").write_text("def charge():\n    return 1\n")
    commit_all(repo, "billing")
    (repo / "invoice.py").write_text("def render():\n    return 2\n")
    commit_all(repo, "invoice")  # never committed together, no imports between them
    for n in range(3):
        session = f"s{n}"
        for path in ("billing.py", "invoice.py", "billing.py", "invoice.py"):
            observe(
                engine, {"kind": "editor", "action": "open", "files": [path], "session_id": session}
            )
        observe(engine, {"kind": "session_end", "session_id": session, "outcome": "success"})
    index(engine, chunks=False, history=False)

    report = impact(engine, "billing.py")

    ranked = {r.file: r for r in report.ranked_files}
    assert "invoice.py" in ranked
    assert "opened together" in ranked["invoice.py"].reasons


def test_session_summary_through_the_engine(engine: Engine, repo: Path, clock: Clock) -> None:
    assert session_summary(engine) == {
        "found": False,
        "session_id": None,
        "text": "no summary of a finished session yet",
    }
    observe(engine, {"kind": "editor", "action": "open", "files": ["app.py"], "session_id": "a1"})
    live = session_summary(engine, "a1")
    assert live["found"] and live["outcome"] == "running"
    observe(engine, {"kind": "session_end", "session_id": "a1", "outcome": "success"})
    done = session_summary(engine)
    assert done["found"] and done["session_id"] == "a1" and done["outcome"] == "success"
    assert "text" in done and isinstance(done["learned"], list)


INDEX_AND_HISTORY = IndexOptions(embed_chunks=False, seed=False, team=False, embed_memories=False)


def mining_threads() -> list[threading.Thread]:
    """An index run's history threads (mining, the steps after it) still alive."""
    names = ("engram-history-mining", "engram-history-sync")
    return [t for t in threading.enumerate() if t.name in names]


def test_an_index_run_mines_while_it_parses_and_then_follows_renames(
    engine: Engine, repo: Path
) -> None:
    """``run_index`` mines git history in a thread from its start (issue 18); renames are
    still followed after the graph, and the stage's progress is still heard."""
    memory_id = anchored(engine)
    first = run_index(engine, INDEX_AND_HISTORY)
    assert first.history is not None and first.history.mined is not None
    assert first.history.mined.commits == 1
    git(repo, "mv", "app.py", "core.py")
    commit_all(repo, "rename")
    heard: list[str] = []

    def progress(done: int, total: int | None, message: str = "") -> None:
        heard.append(message)

    run = run_index(engine, INDEX_AND_HISTORY, progress)
    assert run.history is not None and run.history.mined is not None
    assert run.history.mined.new_commits == 1 and run.history.renamed == 1
    assert [a.file for a in get(engine, memory_id).anchors] == ["core.py"]
    assert any(m.startswith("mining git history") for m in heard)
    assert mining_threads() == []


def test_a_cancelled_index_run_stops_its_mining(engine: Engine, repo: Path) -> None:
    calls = 0

    def cancel() -> bool:
        nonlocal calls
        calls += 1
        return True

    run = run_index(engine, INDEX_AND_HISTORY, cancel=cancel)
    assert run.code.interrupted and run.history is None
    assert mining_threads() == []
    again = run_index(engine, INDEX_AND_HISTORY)
    assert again.history is not None and again.history.mined is not None
    assert again.history.mined.commits == 1


def test_mining_that_fails_in_its_thread_is_reported(
    engine: Engine, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**kwargs: object) -> None:
        raise RuntimeError("git log died")

    monkeypatch.setattr(engine.history, "mine", broken)
    run = run_index(engine, INDEX_AND_HISTORY)
    assert (
        run.history is not None
        and run.history.skipped == "mining failed: RuntimeError: git log died"
    )
    assert mining_threads() == []


def test_a_cancel_after_mining_leaves_the_steps_to_the_next_run(engine: Engine, repo: Path) -> None:
    """Each step after mining (renames, staleness, co-access, co-change) may take seconds:
    a stop between them is heard there, and the next run does what was left."""
    import sys

    memory_id = anchored(engine)
    sync_history(engine)
    git(repo, "mv", "app.py", "core.py")
    commit_all(repo, "rename")

    def between_steps() -> bool:  # not while mining: only where sync_history itself asks
        return sys._getframe(1).f_code.co_name == "sync_history"

    cut = sync_history(engine, cancel=between_steps)
    assert cut.interrupted and cut.renamed == 0
    assert [a.file for a in get(engine, memory_id).anchors] == ["app.py"]
    assert sync_history(engine).renamed == 1
    assert [a.file for a in get(engine, memory_id).anchors] == ["core.py"]


def _within(*names: str) -> bool:
    """Whether the cancel is asked from inside one of the functions ``names``."""
    import sys

    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name in names:
            return True
        frame = frame.f_back
    return False


def test_a_stop_inside_rename_following_is_heard_there(engine: Engine, repo: Path) -> None:
    """Rename following ran to its end once begun (~2 s on babel at load 12, more at 58k
    files: git's rename detection over the new commits, chaining 40k renames): the cancel
    is now asked inside it, and nothing is written until every rename is known."""
    memory_id = anchored(engine)
    sync_history(engine)
    git(repo, "mv", "app.py", "core.py")
    commit_all(repo, "rename")

    cut = sync_history(engine, cancel=lambda: _within("renames_since", "_follow_renames"))
    assert cut.interrupted and cut.renamed == 0
    assert [a.file for a in get(engine, memory_id).anchors] == ["app.py"]
    assert sync_history(engine).renamed == 1
    assert [a.file for a in get(engine, memory_id).anchors] == ["core.py"]


def test_a_stop_inside_the_cochange_fit_is_heard_there(
    engine: Engine, tmp_workspace: Workspace
) -> None:
    """The co-change fit ran to its end once begun (~2 s on babel at load 12): the cancel
    is now asked at every query and Newton step, and a stopped fit stores nothing."""
    import subprocess

    root = tmp_workspace.root
    lines: list[str] = []
    for n in range(400):  # files that change in pairs: enough history to learn from
        lines += ["commit refs/heads/main",
                  f"committer Test <t@example.com> {1_600_000_000 + n * 60} +0000",
                  "data 6", "change"]  # fmt: skip
        for name in (f"pkg/a{n % 23}.py", f"pkg/b{n % 23}.py", f"pkg/c{n % 7}.py"):
            text = f"x = {n}"
            lines += [f"M 100644 inline {name}", f"data {len(text)}", text]
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"],
                   input=("\n".join(lines) + "\n").encode(), check=True)  # fmt: skip
    git(root, "checkout", "-q", "main")

    cut = sync_history(engine, cancel=lambda: _within("cochange_model"))
    assert cut.interrupted
    assert engine.history._meta("cochange_model") is None  # nothing half-fitted stored
    assert not sync_history(engine).interrupted
    assert engine.history.cochange_model() is not None


def test_a_stop_inside_the_coaccess_seed_is_heard_there(engine: Engine, repo: Path) -> None:
    """The co-access seed pairs every file committed with another in one SQLite statement
    (~0.8 CPU s at 58k files, 2 s at load 4): a stop is now asked while it runs, since the
    steps run in a thread beside the chunk pass and a stop there waits for them."""
    for n in range(3):
        (repo / "app.py").write_text(SOURCE + f"\nV = {n}\n")
        (repo / "other.py").write_text(f"Y = {n}\n")
        commit_all(repo, f"change both {n}")
    asked: list[bool] = []

    def in_pairs() -> bool:
        asked.append(_within("_pairs"))
        return asked[-1]

    import engram.history.git_history as git_history

    original = git_history._STEPS_PER_LOOK
    git_history._STEPS_PER_LOOK = 1  # a statement this small: looked at every step
    try:
        cut = sync_history(engine, cancel=in_pairs)
    finally:
        git_history._STEPS_PER_LOOK = original
    assert cut.interrupted and cut.coaccess_seeded == 0 and any(asked)
    assert observer_of(engine).coaccess_partners("app.py") == []
    assert sync_history(engine).coaccess_seeded >= 1
    assert dict(observer_of(engine).coaccess_partners("app.py")).get("other.py", 0) > 0


def test_a_stop_inside_the_staleness_check_is_heard_there(engine: Engine, repo: Path) -> None:
    """The staleness check reads each anchored memory's file and may ask git about it: a
    stop is heard at every memory, and nothing is written until all are looked at."""
    moved_id = anchored(engine)
    gone_id = remember(engine, "Y is the other setting", file="other.py", start_line=0,
                       end_line=0).memory.id  # fmt: skip
    assert gone_id != moved_id
    sync_history(engine)
    (repo / "app.py").write_text("import os\n\n" + SOURCE)
    (repo / "other.py").unlink()
    commit_all(repo, "move parse down, delete other")
    looked: list[int] = []

    def after_one_memory() -> bool:  # not between the steps: inside the check only
        if not _within("_check_code_changes"):
            return False
        looked.append(1)
        return len(looked) > 1

    cut = sync_history(engine, cancel=after_one_memory)
    assert cut.interrupted and cut.relocated == 0 and cut.stale_marked == 0
    assert get(engine, moved_id).anchors[0].start_line == 0
    assert get(engine, gone_id).stale_at is None
    report = sync_history(engine)
    assert report.relocated == 1 and report.stale_marked == 1
