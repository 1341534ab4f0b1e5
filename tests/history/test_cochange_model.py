"""The co-change ranking a repository's own history teaches (engram.history.cochange_model)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from engram.history import CommitRecord, FileChange, GitHistory, HistoryConfig
from engram.history.cochange_model import (
    ALL_FEATURES,
    FEATURES,
    FLOOR,
    CochangeModel,
    CommitIndex,
    candidate_features,
    fit_listwise,
    history_stats,
    learn,
    name_match,
    path_proximity,
    training_queries,
)
from engram.workspace import Workspace


def commit(n: int, *paths: str) -> CommitRecord:
    return CommitRecord(
        f"{n:040x}", (), 1_700_000_000 + n, tuple(FileChange("M", p) for p in paths)
    )


def drifting_history() -> list[CommitRecord]:
    """``api.py`` changed with ``old.py`` for a long time, then with ``new.py`` only.

    By ROSE's confidence ``old.py`` leads (150 of 250 commits vs 100); what the recent
    history says, and what the next commits do, is ``new.py``.
    """
    records: list[CommitRecord] = []
    for i in range(150):
        records.append(commit(len(records), "api.py", "old.py", f"noise{i % 7}.py"))
    for i in range(100):
        records.append(commit(len(records), "api.py", "new.py", f"other{i % 5}.py"))
        records.append(commit(len(records), f"unrelated{i % 9}.py", "docs.md"))
    return records


def history_of(tmp_path: Path, records: list[CommitRecord], **config: object) -> GitHistory:
    config.setdefault("auto_mine", False)
    tmp_path.mkdir(parents=True, exist_ok=True)
    history = GitHistory(
        Workspace.open(tmp_path),
        HistoryConfig(**config),  # type: ignore[arg-type]
        db_path=tmp_path / "history.sqlite",
    )
    history.ingest(records)
    return history


def test_the_ranking_is_learned_from_the_repositorys_own_recent_history(tmp_path: Path) -> None:
    records = drifting_history()
    rose = history_of(tmp_path / "rose", records, learn_ranking=False, recency_half_life=None)
    assert [p for p, _, _ in rose.cochange_partners("api.py", k=2)] == ["old.py", "new.py"]
    learned = history_of(tmp_path / "learned", records)
    model = learned.cochange_model()
    assert model is not None and model.trained_on > 30
    ranked = learned.rank_with_prior("api.py", k=3)
    assert ranked[0][0] == "new.py" and ranked[0][2] == 100  # (file, probability, support)
    assert abs(sum(p for _, p, _ in learned.rank_with_prior("api.py", k=1000)) - 1.0) < 1e-6
    rose.close()
    learned.close()


def test_the_model_is_stored_and_reused_until_the_history_grows(tmp_path: Path) -> None:
    records = drifting_history()
    first = history_of(tmp_path, records)
    model = first.cochange_model()
    assert model is not None
    first.close()
    again = GitHistory(
        Workspace.open(tmp_path),
        HistoryConfig(auto_mine=False),
        db_path=tmp_path / "history.sqlite",
    )
    again._ingested = True  # the stored history, as a later process opening it sees it
    reused = again.cochange_model()
    assert reused is not None and np.allclose(reused.weights, model.weights)
    again.close()


def test_too_little_history_keeps_the_m_estimate(tmp_path: Path) -> None:
    records = [commit(i, "a.py", "b.py") for i in range(10)]
    history = history_of(tmp_path, records)
    assert history.cochange_model() is None
    assert history.rank_with_prior("a.py", k=1)[0][0] == "b.py"
    history.close()


def test_self_training_queries_come_after_the_cutoff_with_history_before_it() -> None:
    index = CommitIndex.build(
        [(1, 1), (1, 2), (2, 1), (2, 3), (3, 1), (3, 2), (4, 4), (4, 5), (5, 1), (5, 2)],
        {1: "a", 2: "b", 3: "c", 4: "d", 5: "e"},
        [1, 2, 3, 4, 5],
    )
    cutoff, queries = training_queries(index, train_commits=1)
    assert cutoff == 4  # 5 commits: the last one (20 %) is held out
    assert sorted(queries, key=lambda q: q[0]) == [(1, {2}), (2, {1})]


def test_listwise_fit_prefers_the_feature_that_picks_the_true_partner() -> None:
    rng = np.random.default_rng(7)
    groups = []
    for _ in range(200):
        x = rng.normal(size=(6, 2))
        y = np.zeros(6)
        y[int(np.argmax(x[:, 0]))] = 1.0  # feature 0 decides, feature 1 is noise
        groups.append((x, y))
    _, _, weights = fit_listwise(groups)
    assert weights[0] == 0.0 and weights[1] > 3 * abs(weights[2])


def test_a_stored_model_for_other_features_is_ignored() -> None:
    assert CochangeModel.from_dict({"features": ["something else"]}) is None
    size = len(FEATURES)
    model = CochangeModel(np.zeros(size), np.ones(size), np.zeros(size + 1))
    assert CochangeModel.from_dict(model.to_dict()) is not None
    assert learn(CommitIndex.build([], {}, [])) is None


def test_path_proximity_and_name_match_read_only_the_paths() -> None:
    assert path_proximity("src/a/x.py", "src/a/y.py") == 1.0
    assert path_proximity("src/a/x.py", "src/b/y.py") == 2 / 3
    assert path_proximity("x.py", "docs/deep/y.md") == 1 / 3
    assert name_match("src/parser.rs", "tests/parser_test.rs") == 1.0
    assert name_match("lib/router.js", "test/test_router.spec.js") == 1.0
    assert name_match("flask/app.py", "flask/apps.py") == 0.5
    assert name_match("a.py", "b.py") == 0.0


def test_every_feature_is_computed_and_the_new_ones_say_what_they_mean() -> None:
    # commits 0..3: a with b (a day earlier), then a with c, c alone, d alone a minute apart
    rows = [(0, 1), (0, 2), (1, 1), (1, 3), (2, 3), (3, 4)]
    names = {1: "pkg/a.py", 2: "pkg/b.py", 3: "other/c.py", 4: "tests/test_a.py"}
    times = {0: 0, 1: 86_400, 2: 86_460, 3: 86_520}
    index = CommitIndex.build(rows, names, [1, 2, 3, 4], times)
    found = candidate_features(
        index, 1, features=ALL_FEATURES, popular=[4], stats=history_stats(index)
    )
    column = {name: found.features[:, i] for i, name in enumerate(ALL_FEATURES)}
    at = {f: i for i, f in enumerate(found.files)}
    assert set(at) == {2, 3, 4}
    assert column["last_together_age"][at[3]] < column["last_together_age"][at[2]]
    assert column["own_recent_confidence"][at[3]] > column["own_recent_confidence"][at[2]]
    assert column["partner_age"][at[4]] == 0.0  # d changed in the newest commit
    assert column["path_proximity"][at[2]] == 1.0 and column["name_match"][at[4]] == 1.0
    # d never changed in a commit with a, but in the same sitting as one of a's two commits
    assert column["session_confidence"][at[4]] == pytest.approx(math.log(0.5 + FLOOR))
    assert column["no_history"][at[4]] == 1.0


def test_a_model_keeps_the_names_of_its_features() -> None:
    size = len(FEATURES)
    model = CochangeModel(np.zeros(size), np.ones(size), np.zeros(size + 1))
    assert model.to_dict()["features"] == list(FEATURES)
    other = CochangeModel(np.zeros(1), np.ones(1), np.zeros(2), features=("partner_age",))
    assert CochangeModel.from_dict(other.to_dict()) is None  # another default: refit


def test_earlier_time_splits_label_the_commits_before_the_newest_window() -> None:
    rows = [(c, f) for c in range(10) for f in (1, 2 + c % 2)]
    index = CommitIndex.build(rows, {1: "a", 2: "b", 3: "c"}, [1, 2, 3])
    newest_cutoff, newest = training_queries(index, train_commits=2, window=0)
    earlier_cutoff, earlier = training_queries(index, train_commits=2, window=1)
    assert (newest_cutoff, earlier_cutoff) == (8, 6)
    assert len(newest) == len(earlier) == 4  # two commits of two files each
    assert training_queries(index, train_commits=2, window=4)[1] == []  # no history before


def test_author_features_read_who_made_the_commits() -> None:
    # a changed with b by ann twice, with c by bob once; ann's newest commit is c with d
    rows = [(0, 1), (0, 2), (1, 1), (1, 2), (2, 1), (2, 3), (3, 3), (3, 4)]
    names = {1: "a.py", 2: "b.py", 3: "c.py", 4: "d.py"}
    index = CommitIndex.build(rows, names, [1, 2, 3, 4])
    index.authors = ["ann", "ann", "bob", "ann"]
    found = candidate_features(
        index, 1, features=ALL_FEATURES, stats=history_stats(index), author="ann"
    )
    column = {name: found.features[:, i] for i, name in enumerate(ALL_FEATURES)}
    at = {f: i for i, f in enumerate(found.files)}
    assert set(at) == {2, 3}
    # ann's own commits of a.py: both with b.py, none with c.py
    assert column["author_confidence"][at[2]] == pytest.approx(math.log(1.0 + FLOOR))
    assert column["author_confidence"][at[3]] == pytest.approx(math.log(FLOOR))
    # c.py: one of its two commits is ann's; b.py: both
    assert column["author_partner_share"][at[3]] == pytest.approx(math.log(0.5 + FLOOR))
    assert column["author_partner_share"][at[2]] == pytest.approx(math.log(1.0 + FLOOR))
    # bob's only commit of the two: a.py with c.py, so c.py is all his recent work
    bob = candidate_features(
        index, 1, features=ALL_FEATURES, stats=history_stats(index), author="bob"
    )
    recent = bob.features[:, ALL_FEATURES.index("author_recent_rate")]
    assert recent[bob.files.index(3)] == pytest.approx(math.log(1.0 + FLOOR))
    assert recent[bob.files.index(2)] == pytest.approx(math.log(FLOOR))
    anonymous = candidate_features(index, 1, features=ALL_FEATURES, stats=history_stats(index))
    assert np.all(anonymous.features[:, ALL_FEATURES.index("author_confidence")] == math.log(FLOOR))
