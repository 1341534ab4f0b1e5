"""The ``[history]`` settings section reaches the engine's GitHistory, from a workspace file
without approval (it runs no code and opens no connection), and a change applies in place."""

from __future__ import annotations

import attrs
import pytest
from tests.history.conftest import RepoBuilder

from engram.app.engine import Engine
from engram.config import Reload, load_settings, sections_of
from engram.workspace import Workspace


def test_the_history_section_is_a_data_setting_that_reaches_the_engines_history(
    repo: RepoBuilder, tmp_path_factory: pytest.TempPathFactory
) -> None:
    repo.touch("a.py", "b.py", "c.py")
    repo.touch("a.py", "b.py", "c.py")
    repo.touch("a.py", "b.py")
    (repo.root / ".engram").mkdir(exist_ok=True)
    (repo.root / ".engram" / "config.toml").write_text(
        "[history]\nmax_files_per_commit = 2\nrecency_half_life = 0\n"
    )
    workspace = Workspace.open(repo.root)
    approvals = tmp_path_factory.mktemp("user-config")
    loaded = load_settings(
        workspace, {"embed": {"model": "none"}}, environ={"XDG_CONFIG_HOME": str(approvals)}
    )
    assert loaded.trust.state == "none"  # nothing to approve: the section applies at once
    assert loaded.config.history.max_files_per_commit == 2
    with Engine(workspace, loaded.config) as engine:
        history = engine.history
        # the three-file commits are over the workspace's limit: only a.py + b.py is mined
        assert history.cochange_partners("a.py") == [("b.py", 1.0, 1)]
        assert history.commit_count("a.py") == 1


def test_a_history_change_applies_to_the_open_history(repo: RepoBuilder) -> None:
    repo.touch("a.py", "old.py")
    repo.touch("a.py", "old.py")
    repo.touch("a.py", "new.py")
    assert "history" in sections_of(Reload.REQUEST)
    from engram.config import load_config

    workspace = Workspace.open(repo.root)
    config = load_config(
        workspace, {"embed": {"model": "none"}, "history": {"recency_half_life": 0}}
    )
    with Engine(workspace, config) as engine:
        history = engine.history
        assert history.cochange_partners("a.py")[0] == ("old.py", pytest.approx(2 / 3), 2)
        weighted = attrs.evolve(config.history, recency_half_life=1.0)
        assert engine.reconfigure(attrs.evolve(config, history=weighted)) == {"history"}
        assert engine.history is history  # the same open history, not a new engine's
        # weights 1/4, 1/2, 1 (half-life one commit): the newest partner now ranks first
        assert history.cochange_partners("a.py")[0] == ("new.py", pytest.approx(1 / 1.75), 1)
