"""``Engine.reconfigure``: per-request settings on the open engine (docs/architecture.md,
"Settings"); settings baked in at open are refused (they need a new engine)."""

from __future__ import annotations

import attrs
import pytest

from engram.app.engine import Engine
from engram.config import SectionReloadError, load_config
from engram.workspace import Workspace


def test_a_retrieval_change_keeps_the_store_and_rebuilds_the_retriever(
    tmp_workspace: Workspace,
) -> None:
    config = load_config(tmp_workspace, {"embed": {"model": "none"}})
    with Engine(tmp_workspace, config) as engine:
        store, retriever = engine.store, engine.retriever
        new = attrs.evolve(config, retrieval=attrs.evolve(config.retrieval, default_k=3))
        assert engine.reconfigure(new) == {"retrieval"}
        assert engine.config is new
        assert engine.store is store  # the open store is kept
        assert engine.retriever is not retriever  # rebuilt from the new snapshot
        assert engine.retriever.config.default_k == 3


def test_a_change_baked_in_at_open_is_refused(tmp_workspace: Workspace) -> None:
    config = load_config(tmp_workspace, {"embed": {"model": "none"}})
    with Engine(tmp_workspace, config) as engine:
        new = attrs.evolve(config, embed=attrs.evolve(config.embed, model="other"))
        with pytest.raises(SectionReloadError, match="embed"):
            engine.reconfigure(new)
        assert engine.config is config
