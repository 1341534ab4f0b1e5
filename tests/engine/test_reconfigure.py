"""``Engine.reconfigure``: per-request settings on the open engine (docs/architecture.md,
"Settings"); settings baked in at open are refused (they need a new engine)."""

from __future__ import annotations

import threading

import attrs
import pytest

from engram.app.engine import Engine
from engram.app.observe import observe, observer_of
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


def test_an_index_change_applies_to_the_open_code_graph_at_its_next_run(
    tmp_workspace: Workspace,
) -> None:
    (tmp_workspace.root / "app.py").write_text("def charge(x):\n    return x\n")
    config = load_config(tmp_workspace, {"embed": {"model": "none"}})
    with Engine(tmp_workspace, config) as engine:
        graph = engine.codegraph
        assert not graph.index().notes
        small = attrs.evolve(config.index, max_file_bytes=100, exclude=["app.py"])
        assert engine.reconfigure(attrs.evolve(config, index=small)) == {"index"}
        assert engine.codegraph is graph  # the same open graph, not a new engine's
        (tmp_workspace.root / "big.py").write_text("def big():\n    return 1\n" * 20)
        report = graph.index()
        assert report.removed_files == ["app.py"]  # the new exclude
        assert any("big.py: skipped" in note for note in report.notes)  # the new size cap


def test_an_index_change_waits_for_the_index_run_in_progress(
    tmp_workspace: Workspace,
) -> None:
    """No run mixes two settings: the change lands after the run holding the graph."""
    config = load_config(tmp_workspace, {"embed": {"model": "none"}})
    with Engine(tmp_workspace, config) as engine:
        graph = engine.codegraph
        new = attrs.evolve(config, index=attrs.evolve(config.index, max_file_bytes=10))
        done = threading.Event()
        with graph._lock:  # what an index run holds from start to end
            worker = threading.Thread(target=lambda: (engine.reconfigure(new), done.set()))
            worker.start()
            assert not done.wait(0.2)
            assert graph.config.max_file_bytes == config.index.max_file_bytes
        worker.join(30)
        assert done.is_set() and graph.config.max_file_bytes == 10


def test_an_observer_change_keeps_the_observer_and_its_running_sessions(
    tmp_workspace: Workspace,
) -> None:
    config = load_config(tmp_workspace, {"embed": {"model": "none"}})
    with Engine(tmp_workspace, config) as engine:
        observer = observer_of(engine)
        observe(engine, {"session_id": "s1", "kind": "session_start"})
        state = observer._sessions["s1"].state
        assert observer.gate_for(state).max_memories != 1 and observer.llm is None
        gates = {"interactive": {"max_memories": 1}}
        llm = attrs.evolve(config.llm, base_url="http://127.0.0.1:9", model="m")
        new = attrs.evolve(
            config,
            observer=attrs.evolve(
                config.observer, session_gates=gates, coaccess_half_life_days=1.0
            ),
            llm=llm,
        )
        assert engine.reconfigure(new) == {"observer", "llm"}
        assert observer_of(engine) is observer  # reconfigured, not rebuilt
        assert observer._sessions["s1"].state is state  # the running session is kept
        assert observer.gate_for(state).max_memories == 1
        assert observer.stats.half_life_s == 86400.0
        assert observer.llm is not None  # the observer's LLM client follows [llm]
        assert observe(engine, {"session_id": "s1", "kind": "session_end"}).accepted


def test_an_mcp_change_is_not_the_engines(tmp_workspace: Workspace) -> None:
    """The MCP hub belongs to a front end (it rebuilds it); the engine just takes the
    snapshot, so a hub built from it afterwards has the new pool settings."""
    config = load_config(tmp_workspace, {"embed": {"model": "none"}})
    with Engine(tmp_workspace, config) as engine:
        store = engine.store
        new = attrs.evolve(config, mcp=attrs.evolve(config.mcp, max_connections=2))
        assert engine.reconfigure(new) == {"mcp"}
        assert engine.store is store and engine.config.mcp.max_connections == 2
