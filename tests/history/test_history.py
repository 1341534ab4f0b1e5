"""GitHistory on small real repositories: rules, renames, linkage, degrade paths, increments."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.conftest import git
from tests.history.conftest import RepoBuilder, body

from engram.history import (
    STATUS_EMPTY,
    STATUS_NO_GIT,
    STATUS_NOT_A_REPO,
    STATUS_OK,
    STATUS_SHALLOW,
    GitHistory,
    HistoryConfig,
)
from engram.history import git_history as git_history_module
from engram.workspace import Workspace


def open_history(root: Path, **config: object) -> GitHistory:
    """Plain ROSE arithmetic unless a test asks for recency weighting."""
    config.setdefault("recency_half_life", None)
    return GitHistory(Workspace.open(root), HistoryConfig(**config))  # type: ignore[arg-type]


def as_map(partners: list[tuple[str, float, int]]) -> dict[str, tuple[float, int]]:
    return {path: (confidence, support) for path, confidence, support in partners}


# ---------------------------------------------------------------------- association rules


def test_support_and_confidence_follow_rose(repo: RepoBuilder) -> None:
    repo.touch("a.py", "b.py")
    repo.touch("a.py", "b.py")
    repo.touch("a.py", "c.py")
    repo.touch("b.py", "d.py")
    history = open_history(repo.root)
    report = history.mine()
    assert report.status == STATUS_OK and report.new_commits == 4

    partners = history.cochange_partners("a.py")
    assert [p for p, _, _ in partners] == ["b.py", "c.py"]  # best first
    assert as_map(partners)["b.py"] == pytest.approx((2 / 3, 2))
    assert as_map(partners)["c.py"] == pytest.approx((1 / 3, 1))
    # the rule is directional: confidence divides by the commits of the queried file
    assert as_map(history.cochange_partners("b.py"))["a.py"] == pytest.approx((2 / 3, 2))
    assert as_map(history.cochange_partners("c.py"))["a.py"] == pytest.approx((1.0, 1))
    assert history.cochange_partners("a.py", min_support=2) == [("b.py", 2 / 3, 2)]
    assert history.cochange_partners("a.py", k=1) == [("b.py", 2 / 3, 2)]
    assert history.cochange_partners("unknown.py") == []
    assert history.commit_count("a.py") == 3


def test_recent_cochanges_weigh_more(repo: RepoBuilder) -> None:
    repo.touch("a.py", "old_partner.py")
    repo.touch("a.py", "old_partner.py")
    repo.touch("a.py", "new_partner.py")
    plain = as_map(open_history(repo.root).cochange_partners("a.py"))
    assert plain["old_partner.py"] == pytest.approx((2 / 3, 2))
    weighted = open_history(repo.root, recency_half_life=1.0).cochange_partners("a.py")
    # weights 1/4, 1/2, 1 (half-life one commit): new 1/1.75, old 0.75/1.75
    assert weighted[0] == ("new_partner.py", pytest.approx(1 / 1.75), 1)
    assert weighted[1] == ("old_partner.py", pytest.approx(0.75 / 1.75), 2)


def test_rank_with_prior_blends_history_graph_and_change_rate(repo: RepoBuilder) -> None:
    for _ in range(3):
        repo.touch("a.py", "CHANGES.rst")
    repo.touch("a.py", "b.py")
    repo.touch("c.py", "CHANGES.rst")
    history = open_history(repo.root)
    rates = history.change_rates()
    assert rates["CHANGES.rst"] == pytest.approx(4 / 5) and rates["b.py"] == pytest.approx(1 / 5)
    ranked = history.rank_with_prior(
        "a.py", {"b.py": 1.0, "graph_only.py": 1.0}, alpha=1.0, prior_share=0.5
    )
    scores = {f: s for f, s, _ in ranked}
    # (3 + 1 * (0.5 * 0 + 0.5 * 0.8)) / (4 + 1)
    assert scores["CHANGES.rst"] == pytest.approx((3 + 0.4) / 5)
    assert scores["b.py"] == pytest.approx((1 + 0.25 + 0.5 * 0.2) / 5)
    assert scores["graph_only.py"] == pytest.approx(0.25 / 5)
    assert [f for f, _, _ in ranked][:2] == ["CHANGES.rst", "b.py"]
    # a file without history still gets an answer: structure first, then what changes often
    fresh = history.rank_with_prior("new.py", {"b.py": 1.0}, prior_share=0.5)
    assert [f for f, _, _ in fresh][:2] == ["b.py", "CHANGES.rst"]
    assert all(support == 0 for _, _, support in fresh)


def test_huge_and_merge_commits_are_left_out(repo: RepoBuilder) -> None:
    repo.touch("a.py", "b.py")
    repo.touch("a.py", "c.py", "d.py", "e.py")  # 4 files > limit 3: relates everything
    git(repo.root, "checkout", "-q", "-b", "side")
    repo.touch("a.py", "f.py")
    git(repo.root, "checkout", "-q", "main")
    repo.touch("b.py", "g.py")
    git(repo.root, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    history = open_history(repo.root, max_files_per_commit=3)
    report = history.mine()
    assert report.skipped_commits == 1
    assert report.commits == 4  # the merge commit is not mined at all
    partners = as_map(history.cochange_partners("a.py"))
    assert set(partners) == {"b.py", "f.py"}
    assert partners["b.py"] == pytest.approx((0.5, 1))  # 2 eligible commits touch a.py


def test_deleted_partners_are_hidden_unless_asked(repo: RepoBuilder) -> None:
    repo.touch("a.py", "gone.py")
    repo.touch("a.py", "kept.py")
    repo.rm("gone.py")
    history = open_history(repo.root)
    history.mine()
    assert [p for p, _, _ in history.cochange_partners("a.py")] == ["kept.py"]
    everything = history.cochange_partners("a.py", include_deleted=True)
    assert {p for p, _, _ in everything} == {"kept.py", "gone.py"}


def test_coaccess_seed_is_jaccard_of_commit_sets(repo: RepoBuilder) -> None:
    repo.touch("a.py", "b.py")
    repo.touch("a.py", "b.py")
    repo.touch("a.py", "c.py")
    repo.touch("c.py", "b.py")
    history = open_history(repo.root, coaccess_min_support=2)
    history.mine()
    seed = history.coaccess_seed()
    # a: 3 commits, b: 3, together 2 -> 2 / (3 + 3 - 2)
    assert seed == [("a.py", "b.py", pytest.approx(0.5))]
    assert open_history(repo.root, coaccess_min_support=1).coaccess_seed()[0][2] == 0.5


def test_top_pairs_ranked_in_sql_match_every_pair_ranked(repo: RepoBuilder) -> None:
    for i in range(6):
        repo.touch("a.py", "b.py", *(["c.py"] if i % 2 else []), *(["d.py"] if i < 2 else []))
    repo.touch("c.py", "d.py")
    repo.touch("x.py", "d.py")
    repo.rm("x.py")
    history = open_history(repo.root, coaccess_min_support=1)
    history.mine()
    every = sorted(history._pairs(), key=lambda p: (-p[2], -p[3], p[0], p[1]))
    assert all("x.py" not in p[:2] for p in every)  # a deleted file pairs with nothing
    for k in (1, 3, len(every), len(every) + 5):
        assert history.top_pairs(k) == every[:k]
    assert history.top_pairs(1) == [("a.py", "b.py", 6, 1.0)]
    assert history.top_pairs(0) == []


# ---------------------------------------------------------------------- renames


def test_history_of_an_old_name_counts_for_the_new_name(repo: RepoBuilder) -> None:
    repo.touch("old.py", "x.py")
    repo.touch("old.py", "x.py")
    before = repo.mv("old.py", "pkg/new.py")
    repo.touch("pkg/new.py", "y.py")
    history = open_history(repo.root)
    report = history.mine()
    assert report.renames == 1
    partners = as_map(history.cochange_partners("pkg/new.py"))
    # four commits touch the file under either name (the rename commit is one of them)
    assert partners["x.py"] == pytest.approx((2 / 4, 2))
    assert partners["y.py"] == pytest.approx((1 / 4, 1))
    # x.py's partner is reported under the file's current name
    assert "pkg/new.py" in as_map(history.cochange_partners("x.py"))
    assert "old.py" not in as_map(history.cochange_partners("x.py"))
    # asking with the old name resolves to the same file
    assert as_map(history.cochange_partners("old.py")) == partners
    assert history.renames() == {"old.py": "pkg/new.py"}
    first = git(repo.root, "rev-list", "--max-parents=0", "HEAD").strip()
    assert history.renames_since(first) == {"old.py": "pkg/new.py"}
    assert history.renames_since(before) == {}
    assert history.renames_since("not-a-commit") == {}


def test_rename_chain_and_a_reused_name(repo: RepoBuilder) -> None:
    repo.touch("a.py", "x.py")
    repo.mv("a.py", "b.py")
    first_rename = git(repo.root, "rev-parse", "HEAD").strip()
    repo.touch("b.py", "y.py")
    repo.mv("b.py", "c.py")
    repo.touch("a.py", "z.py")  # a new file that happens to reuse the old name
    history = open_history(repo.root)
    history.mine()
    assert set(as_map(history.cochange_partners("c.py"))) == {"x.py", "y.py"}
    assert set(as_map(history.cochange_partners("a.py"))) == {"z.py"}
    assert history.renames_since(first_rename) == {"b.py": "c.py"}
    root = git(repo.root, "rev-list", "--max-parents=0", "HEAD").strip()
    assert history.renames_since(root) == {"a.py": "c.py", "b.py": "c.py"}


# ---------------------------------------------------------------------- commit linkage


def test_commits_touching_a_file_and_a_line_range(repo: RepoBuilder) -> None:
    lines = [f"line {i}\n" for i in range(20)]
    first = repo.commit({"m.py": "".join(lines), "other.py": body("other.py")}, "create")
    lines[2] = "line 2 edited\n"
    top_edit = repo.commit({"m.py": "".join(lines)}, "edit the top")
    lines[15] = "line 15 edited\n"
    bottom_edit = repo.commit({"m.py": "".join(lines)}, "edit the bottom")
    history = open_history(repo.root)

    whole = history.commits_touching("m.py")
    assert [c.sha for c in whole] == [bottom_edit, top_edit, first]
    assert whole[0].summary == "edit the bottom" and whole[0].author == "Engram Test"
    assert [c.sha for c in history.commits_touching("m.py", limit=1)] == [bottom_edit]
    # 0-based inclusive lines, as anchors store them: line index 2 is "line 2"
    assert [c.sha for c in history.commits_touching("m.py", 1, 3)] == [top_edit, first]
    assert [c.sha for c in history.commits_touching("m.py", 14, 16)] == [bottom_edit, first]
    assert history.commits_touching("missing.py") == []
    assert history.commits_touching("m.py", 500, 510) == []  # bad range: empty, no raise

    assert history.head_commit() == bottom_edit
    assert history.changed_since("m.py", top_edit) is True
    assert history.changed_since("other.py", top_edit) is False
    assert history.changed_since("m.py", "0" * 40) is None


def test_commits_touching_follows_a_renamed_file(repo: RepoBuilder) -> None:
    created = repo.touch("old.py")
    moved = repo.mv("old.py", "new.py")
    history = open_history(repo.root)
    assert [c.sha for c in history.commits_touching("new.py")] == [moved, created]


# ---------------------------------------------------------------------- degrade paths


def test_directory_without_git_degrades_with_a_reason(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    history = open_history(plain)
    assert history.status == STATUS_NOT_A_REPO
    assert "not inside a git repository" in history.reason
    report = history.mine()
    assert report.status == STATUS_NOT_A_REPO and report.new_commits == 0
    assert history.cochange_partners("a.py") == []
    assert history.commits_touching("a.py", 1, 2) == []
    assert history.renames() == {} and history.renames_since("abc") == {}
    assert history.coaccess_seed() == []
    assert history.head_commit() is None and history.changed_since("a.py", "abc") is None
    assert history.stats()["status"] == STATUS_NOT_A_REPO
    assert not (plain / ".engram").exists()  # nothing written for a non-repository


def test_missing_git_binary_degrades(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(git_history_module.shutil, "which", lambda _name: None)
    history = open_history(tmp_path)
    assert history.status == STATUS_NO_GIT
    assert "git is not installed" in history.reason
    assert history.cochange_partners("a.py") == []


def test_repository_without_commits_degrades(tmp_workspace: Workspace) -> None:
    history = GitHistory(tmp_workspace)
    assert history.status == STATUS_EMPTY
    assert history.mine().status == STATUS_EMPTY
    assert history.cochange_partners("a.py") == []
    assert history.commits_touching("a.py") == []


def test_shallow_clone_mines_what_it_has_and_says_so(repo: RepoBuilder, tmp_path: Path) -> None:
    repo.touch("a.py", "b.py")
    repo.touch("a.py", "b.py")
    repo.touch("a.py", "c.py")
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo.root}", str(clone))
    history = open_history(clone)
    assert history.status == STATUS_SHALLOW
    assert "shallow" in history.reason
    report = history.mine()
    assert report.status == STATUS_SHALLOW and report.new_commits == 1
    # the only commit is the shallow boundary: its "diff" is the whole tree, not a change
    assert report.skipped_commits == 1
    assert history.cochange_partners("a.py") == []

    deeper = tmp_path / "deeper"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{repo.root}", str(deeper))
    partial = open_history(deeper)
    partial.mine()
    assert as_map(partial.cochange_partners("a.py")) == {"c.py": pytest.approx((1.0, 1))}


# ---------------------------------------------------------------------- incremental mining


def test_mining_is_incremental_and_reports_progress(repo: RepoBuilder) -> None:
    repo.touch("a.py", "b.py")
    repo.touch("a.py", "b.py")
    calls: list[tuple[int, int]] = []
    history = open_history(repo.root)
    first = history.mine(progress=lambda done, total, _what: calls.append((done, total)))
    assert first.new_commits == 2 and first.commits == 2
    assert calls[0] == (0, 2) and calls[-1] == (2, 2)

    again = history.mine()
    assert again.new_commits == 0 and again.commits == 2

    repo.touch("a.py", "c.py")
    history_new_process = open_history(repo.root)  # state lives in .engram/history.sqlite
    third = history_new_process.mine()
    assert third.new_commits == 1 and third.commits == 3 and not third.rebuilt
    assert as_map(history_new_process.cochange_partners("a.py"))["c.py"][1] == 1

    # history rewritten under us: the last mined commit is gone, mine again from scratch
    git(repo.root, "commit", "-q", "--amend", "-m", "rewritten")
    rewritten = history_new_process.mine()
    assert rewritten.rebuilt and rewritten.commits == 3


def test_first_query_mines_when_nothing_was_mined(repo: RepoBuilder) -> None:
    repo.touch("a.py", "b.py")
    assert open_history(repo.root).cochange_partners("a.py") == [("b.py", 1.0, 1)]
    assert open_history(repo.root, auto_mine=False).cochange_partners("b.py") == [
        ("a.py", 1.0, 1)
    ]  # already mined by the first instance: state is shared through the database


def test_workspace_in_a_subfolder_sees_relative_paths(repo: RepoBuilder) -> None:
    repo.touch("sub/a.py", "sub/b.py", "top.py")
    repo.touch("sub/a.py", "sub/b.py")
    history = open_history(repo.root / "sub")
    history.mine()
    assert history.cochange_partners("a.py") == [("b.py", 1.0, 2)]
    assert len(history.commits_touching("a.py")) == 2


def test_git_log_runs_with_bounded_pack_memory(
    repo: RepoBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mining ``git log`` maps packs in small windows: with git's 1 GB default it alone
    was the 58k cold index's peak RSS (docs/codegraph.md, "At 50,000 files")."""
    import shutil

    real_git = shutil.which("git")
    assert real_git is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real_git} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    repo.touch("a.py", "b.py")
    report = open_history(repo.root).mine()
    assert report.new_commits == 1
    logs = [line for line in calls.read_text().splitlines() if " log " in f" {line} "]
    assert logs, calls.read_text()
    for line in logs:
        assert "core.packedGitWindowSize=8m" in line and "core.packedGitLimit=64m" in line


def test_head_commit_follows_every_way_head_moves(
    repo: RepoBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``head_commit`` is kept between remembers (no git process each time) and still
    answers what git says after a commit, a checkout, a reset, pack-refs and a detach."""
    first = repo.touch("a.py")
    history = open_history(repo.root)
    assert history.head_commit() == first
    asked: list[tuple[str, ...]] = []
    ask_git = history._git

    def counted(*args: str, timeout: float | None = None) -> str | None:
        asked.append(args)
        return ask_git(*args, timeout=timeout)

    monkeypatch.setattr(history, "_git", counted)
    assert history.head_commit() == first
    assert asked == []  # nothing moved: no git process
    second = repo.touch("a.py")
    assert history.head_commit() == second
    git(repo.root, "checkout", "-q", "-b", "side", first)
    assert history.head_commit() == first
    third = repo.touch("b.py")
    assert history.head_commit() == third
    git(repo.root, "pack-refs", "--all")
    assert history.head_commit() == third
    git(repo.root, "reset", "-q", "--hard", first)
    assert history.head_commit() == first
    git(repo.root, "checkout", "-q", "--detach", second)
    assert history.head_commit() == second
    git(repo.root, "checkout", "-q", "main")
    assert history.head_commit() == second


@pytest.mark.parametrize("dates", ["distinct", "tied"])
def test_a_history_over_max_commits_mines_its_newest_commits_only(
    repo: RepoBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dates: str
) -> None:
    """A history longer than ``max_commits`` is mined from the ``max_commits``-th newest
    commit on, oldest first: the window is bounded by that commit's time (``--since``) so
    git does not sort the whole history (docs/history.md, "Mining"), and commit times
    that tie at the window's edge neither widen nor narrow it."""
    import shutil

    for n in range(25):
        second = n if dates == "distinct" else 0
        monkeypatch.setenv("GIT_COMMITTER_DATE", f"2024-02-01T00:00:{second:02d}+00:00")
        repo.touch(f"f{n}.py", "shared.py")
    real_git = shutil.which("git")
    assert real_git is not None
    (tmp_path / "bin").mkdir()
    calls = tmp_path / "calls.txt"
    wrapper = tmp_path / "bin" / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real_git} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    history = open_history(repo.root, max_commits=10)
    report = history.mine()
    assert report.new_commits == 10 and report.commits == 10
    said = calls.read_text().splitlines()
    # counted no further than one past the limit; the mining log bounded by a time
    assert any("rev-list --count --no-merges --max-count=11" in line for line in said), said
    mining = [line for line in said if "--name-status" in line]
    assert len(mining) == 1 and "--since=@" in mining[0] and "--max-count=10" in mining[0]
    assert [history.commit_count(f"f{n}.py") for n in range(25)] == [0] * 15 + [1] * 10
    assert history.commit_count("shared.py") == 10
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2024-02-01T00:01:00+00:00")
    repo.touch("f25.py")
    again = history.mine()  # the next run mines what came after, whatever the window was
    assert again.new_commits == 1 and again.commits == 11
    assert history.commit_count("f25.py") == 1
