"""Methodology plugins: map a workflow's own phase names and work units to universal ones
(docs/observer.md).

The observer and retrieval only ever see :class:`~engram.model.UniversalPhase` and
:class:`~engram.model.WorkUnitRef`; what "story_development" or "red" means is the plugin's
business. Three plugins ship (native, BMAD, TDD). A user adds one without touching the core
in either of two ways:

* a package that declares an entry point in the group ``engram.methodologies``
  (``mine = "my_pkg.plugins:MyPlugin"``), or
* ``observer.plugins = ["my_pkg.plugins:MyPlugin"]`` in ``.engram/config.toml`` (a
  ``path/to/file.py:ClassName`` works too, for a plugin kept inside the repository).

A plugin is any object with the attributes and methods of :class:`MethodologyPlugin`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.jsontypes import JsonObject

import importlib
import importlib.util
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar, Protocol, runtime_checkable

from engram.errors import InvalidInput
from engram.model import UniversalPhase, WorkUnitRef

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "engram.methodologies"


@runtime_checkable
class MethodologyPlugin(Protocol):
    """What the observer needs from a methodology."""

    id: str
    display_name: str

    def map_phase(self, phase: str) -> UniversalPhase: ...

    def work_unit_ref(self, hierarchy: Sequence[str], label: str | None = None) -> WorkUnitRef: ...

    def extract_work_state(self, facts: Mapping[str, object]) -> JsonObject: ...

    def format_work_state(self, state: Mapping[str, object]) -> str: ...


def _items(value: object) -> list[object]:
    """A list a plugin's facts or state hold; anything else (a plugin's bad value) is empty."""
    return list(value) if isinstance(value, list | tuple) else []


def _count(value: object) -> int:
    """A count a plugin's facts hold; a value that is no number counts 0."""
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return 0


class _TablePlugin:
    """Shared behaviour: a phase table and a hierarchy label format."""

    id = "base"
    display_name = "base"
    phases: ClassVar[Mapping[str, UniversalPhase]] = {}
    levels: ClassVar[Sequence[str]] = ()

    def map_phase(self, phase: str) -> UniversalPhase:
        key = phase.strip().lower().replace("-", "_").replace(" ", "_")
        if key in UniversalPhase._value2member_map_:
            return UniversalPhase(key)
        return self.phases.get(key, UniversalPhase.EXPLORE)

    def work_unit_ref(self, hierarchy: Sequence[str], label: str | None = None) -> WorkUnitRef:
        parts = [str(h) for h in hierarchy if str(h).strip()]
        if not label:
            named = [
                f"{self.levels[i]} {p}" if i < len(self.levels) else p for i, p in enumerate(parts)
            ]
            label = " / ".join(named)
        return WorkUnitRef(methodology=self.id, hierarchy=parts, label=label)

    def extract_work_state(self, facts: Mapping[str, object]) -> JsonObject:
        return {
            "files_modified": _items(facts.get("files_modified")),
            "last_step": facts.get("last_step"),
            "open_errors": _items(facts.get("open_errors")),
            "work_unit": facts.get("work_unit"),
        }

    def format_work_state(self, state: Mapping[str, object]) -> str:
        parts = []
        if state.get("work_unit"):
            parts.append(f"working on {state['work_unit']}")
        files = [str(f) for f in _items(state.get("files_modified"))]
        if files:
            parts.append("edited " + ", ".join(files[:6]) + (" …" if len(files) > 6 else ""))
        errors = _items(state.get("open_errors"))
        if errors:
            parts.append("unresolved: " + "; ".join(str(e) for e in errors[:2]))
        if state.get("last_step"):
            parts.append(f"last step: {state['last_step']}")
        return "; ".join(parts) or "no recorded progress"


class NativePlugin(_TablePlugin):
    """Spec / subtask pipelines (the "native" methodology of docs/observer.md)."""

    id = "native"
    display_name = "Native (spec / subtask)"
    levels = ("Spec", "Subtask")
    phases: ClassVar[Mapping[str, UniversalPhase]] = {
        "planning": UniversalPhase.DEFINE,
        "spec": UniversalPhase.DEFINE,
        "coding": UniversalPhase.IMPLEMENT,
        "qa_review": UniversalPhase.VALIDATE,
        "qa_fix": UniversalPhase.REFINE,
        "debugging": UniversalPhase.REFINE,
        "insights": UniversalPhase.EXPLORE,
        "review": UniversalPhase.VALIDATE,
        "retrospective": UniversalPhase.REFLECT,
    }


class BmadPlugin(_TablePlugin):
    """BMAD: epics, stories, tasks; analyst / architect / dev / qa roles."""

    id = "bmad"
    display_name = "BMAD (epic / story)"
    levels = ("Epic", "Story", "Task")
    phases: ClassVar[Mapping[str, UniversalPhase]] = {
        "analyst": UniversalPhase.DEFINE,
        "pm": UniversalPhase.DEFINE,
        "architect": UniversalPhase.DEFINE,
        "story_creation": UniversalPhase.DEFINE,
        "dev": UniversalPhase.IMPLEMENT,
        "story_development": UniversalPhase.IMPLEMENT,
        "qa": UniversalPhase.VALIDATE,
        "story_acceptance": UniversalPhase.VALIDATE,
        "sm": UniversalPhase.REFLECT,
        "retrospective": UniversalPhase.REFLECT,
        "research": UniversalPhase.EXPLORE,
    }

    def extract_work_state(self, facts: Mapping[str, object]) -> JsonObject:
        state = super().extract_work_state(facts)
        state["current_story"] = facts.get("work_unit")
        return state


class TddPlugin(_TablePlugin):
    """Test-driven cycles: red (define), green (implement), refactor (refine)."""

    id = "tdd"
    display_name = "TDD (red / green / refactor)"
    levels = ("Feature", "Cycle")
    phases: ClassVar[Mapping[str, UniversalPhase]] = {
        "red": UniversalPhase.DEFINE,
        "green": UniversalPhase.IMPLEMENT,
        "refactor": UniversalPhase.REFINE,
        "assertion": UniversalPhase.VALIDATE,
    }

    def extract_work_state(self, facts: Mapping[str, object]) -> JsonObject:
        state = super().extract_work_state(facts)
        state["tests_green"] = _count(facts.get("tests_passed"))
        state["tests_red"] = _count(facts.get("tests_failed"))
        return state

    def format_work_state(self, state: Mapping[str, object]) -> str:
        base = super().format_work_state(state)
        green, red = state.get("tests_green", 0), state.get("tests_red", 0)
        return f"{base}; test runs green {green}, red {red}"


BUILTIN_PLUGINS: dict[str, type[_TablePlugin]] = {
    "native": NativePlugin,
    "bmad": BmadPlugin,
    "tdd": TddPlugin,
}


def _load_spec(spec: str, workspace_root: Path | None) -> object:
    """``module:Class`` or ``path/to/file.py:Class`` -> an instance."""
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise InvalidInput(f"observer.plugins entry {spec!r} must look like module:Class")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_absolute() and workspace_root is not None:
            path = workspace_root / path
        module_spec = importlib.util.spec_from_file_location(f"engram_plugin_{path.stem}", path)
        if module_spec is None or module_spec.loader is None or not path.is_file():
            raise InvalidInput(f"observer plugin file {path} not found")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise InvalidInput(f"cannot import observer plugin module {target}: {exc}") from exc
    factory: object = getattr(module, attr, None)
    if factory is None:
        raise InvalidInput(f"observer plugin {spec}: {target} has no {attr}")
    return factory() if isinstance(factory, type) else factory


class PluginRegistry:
    """All known methodology plugins by id: built-ins, entry points, configured specs."""

    def __init__(self) -> None:
        self._plugins: dict[str, MethodologyPlugin] = {
            name: cls() for name, cls in BUILTIN_PLUGINS.items()
        }

    def register(self, plugin: object) -> MethodologyPlugin:
        if not isinstance(plugin, MethodologyPlugin):
            raise InvalidInput(
                f"{plugin!r} is not a methodology plugin (needs id, display_name, map_phase, "
                "work_unit_ref, extract_work_state, format_work_state)"
            )
        self._plugins[plugin.id] = plugin
        return plugin

    def load_entry_points(self) -> list[str]:
        from importlib.metadata import entry_points

        loaded = []
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                obj = ep.load()
                self.register(obj() if isinstance(obj, type) else obj)
                loaded.append(ep.name)
            except Exception as exc:  # a broken third-party plugin must not stop the server
                log.warning("methodology plugin %s not loaded: %s", ep.name, exc)
        return loaded

    def load_specs(self, specs: Sequence[str], workspace_root: Path | None = None) -> list[str]:
        loaded = []
        for spec in specs:
            try:
                loaded.append(self.register(_load_spec(spec, workspace_root)).id)
            except InvalidInput as exc:
                log.warning("%s", exc)
        return loaded

    def get(self, plugin_id: str | None) -> MethodologyPlugin:
        if plugin_id and plugin_id in self._plugins:
            return self._plugins[plugin_id]
        if plugin_id:
            log.info("unknown methodology %r, using native", plugin_id)
        return self._plugins["native"]

    def ids(self) -> list[str]:
        return sorted(self._plugins)


__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "BmadPlugin",
    "MethodologyPlugin",
    "NativePlugin",
    "PluginRegistry",
    "TddPlugin",
]
