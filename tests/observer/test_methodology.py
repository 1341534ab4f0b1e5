"""Methodology plugins: built-ins, and adding one without touching the core."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.errors import InvalidInput
from engram.model import UniversalPhase
from engram.observer import PluginRegistry
from engram.observer.methodology import MethodologyPlugin, TddPlugin


def test_builtin_phase_maps() -> None:
    registry = PluginRegistry()
    assert registry.get("tdd").map_phase("red") is UniversalPhase.DEFINE
    assert registry.get("tdd").map_phase("green") is UniversalPhase.IMPLEMENT
    assert registry.get("tdd").map_phase("refactor") is UniversalPhase.REFINE
    assert registry.get("bmad").map_phase("story_development") is UniversalPhase.IMPLEMENT
    assert registry.get("native").map_phase("qa_review") is UniversalPhase.VALIDATE
    assert registry.get("native").map_phase("something else") is UniversalPhase.EXPLORE
    assert registry.get("nonexistent").id == "native"


def test_work_unit_refs_and_work_state() -> None:
    bmad = PluginRegistry().get("bmad")
    ref = bmad.work_unit_ref(["3", "3.2"])
    assert ref.methodology == "bmad" and ref.label == "Epic 3 / Story 3.2"
    tdd = PluginRegistry().get("tdd")
    state = tdd.extract_work_state({"files_modified": ["a.py"], "tests_failed": 2})
    assert "red 2" in tdd.format_work_state(state)


PLUGIN_SOURCE = """
from engram.model import UniversalPhase, WorkUnitRef

class Kanban:
    id = "kanban"
    display_name = "Kanban"
    def map_phase(self, phase):
        return {"doing": UniversalPhase.IMPLEMENT, "review": UniversalPhase.VALIDATE}.get(
            phase, UniversalPhase.EXPLORE)
    def work_unit_ref(self, hierarchy, label=None):
        return WorkUnitRef("kanban", list(hierarchy), label or "card " + hierarchy[-1])
    def extract_work_state(self, facts):
        return dict(facts)
    def format_work_state(self, state):
        return "card in progress"
"""


def test_plugin_from_a_file_in_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "kanban_plugin.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    registry = PluginRegistry()
    assert registry.load_specs(["kanban_plugin.py:Kanban"], tmp_path) == ["kanban"]
    plugin = registry.get("kanban")
    assert isinstance(plugin, MethodologyPlugin)
    assert plugin.map_phase("review") is UniversalPhase.VALIDATE


def test_plugin_through_observer_config(tmp_workspace, sink) -> None:  # type: ignore[no-untyped-def]
    from engram.config import ObserverConfig
    from engram.observer import Observer

    (tmp_workspace.root / "kanban_plugin.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    obs = Observer(
        sink, workspace=tmp_workspace, config=ObserverConfig(plugins=["kanban_plugin.py:Kanban"])
    )
    obs.observe(
        {
            "session_id": "k",
            "kind": "session_start",
            "methodology": "kanban",
            "work_unit": ["board", "42"],
        }
    )
    obs.observe({"session_id": "k", "kind": "tool_result", "tool": "Edit", "files": ["a.py"]})
    obs.finalize("k", "abandoned")
    (memory,) = sink.memories.values()
    assert memory.type.value == "work_state" and "card in progress" in memory.content


def test_bad_plugins_are_refused_not_fatal() -> None:
    registry = PluginRegistry()
    with pytest.raises(InvalidInput):
        registry.register(object())
    assert registry.load_specs(["no_such_module_xyz:Thing", "garbage"]) == []
    assert "native" in registry.ids()


def test_entry_point_plugins_are_loaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import importlib.metadata
    import sys

    (tmp_path / "ep_kanban.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    point = importlib.metadata.EntryPoint("kanban", "ep_kanban:Kanban", "engram.methodologies")

    def fake_entry_points(group: str) -> list[importlib.metadata.EntryPoint]:
        return [point] if group == "engram.methodologies" else []

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    registry = PluginRegistry()
    assert registry.load_entry_points() == ["kanban"]
    assert registry.get("kanban").display_name == "Kanban"
    sys.modules.pop("ep_kanban", None)


def test_work_state_reads_a_bad_value_as_empty() -> None:
    """Facts come from a plugin (code from a package): a string where a list belongs is no
    list of one-letter files, and text where a count belongs counts 0 instead of raising."""
    plugin = TddPlugin()
    state = plugin.extract_work_state(
        {"files_modified": "src/app.py", "open_errors": None, "tests_passed": "many"}
    )
    assert state["files_modified"] == [] and state["open_errors"] == []
    assert state["tests_green"] == 0 and state["tests_red"] == 0
    good = plugin.extract_work_state(
        {"files_modified": ["src/app.py"], "tests_passed": 3, "tests_failed": "2"}
    )
    assert good["files_modified"] == ["src/app.py"]
    assert (good["tests_green"], good["tests_red"]) == (3, 2)
    assert "edited src/app.py" in plugin.format_work_state(good)
