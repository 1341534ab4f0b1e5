"""A small JSON file of engine bookkeeping in ``.engram/engine_state.json``.

It holds what the use cases must remember between runs: the last commit whose renames were
applied (``history_sync``), the commit the co-access graph was seeded from, the digest
of each team file already read (``team``) and whether a whole graph pass ever completed
(``indexing.GRAPH_INDEXED``). Written atomically (temp file + rename), one write at a
time in a process.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from engram.workspace import Workspace

#: File name under ``.engram/``.
ENGINE_STATE_FILE = "engine_state.json"

JsonValue = str | int | float | bool | None | list["JsonValue"] | dict[str, "JsonValue"]

#: One write at a time in this process: the workspace engine serves calls side by side, and
#: an index run's history steps run in a thread (the team sync and they both write here).
#: Each write reads, changes one key and replaces the file; two at once through one
#: temporary file lost a key or failed with FileNotFoundError.
_WRITING = threading.Lock()


class EngineState:
    """Read and write keys of the engine's bookkeeping file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def of(cls, workspace: Workspace) -> EngineState:
        return cls(workspace.engram_dir / ENGINE_STATE_FILE)

    def _load(self) -> dict[str, JsonValue]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> JsonValue:
        return self._load().get(key)

    def set(self, key: str, value: JsonValue) -> None:
        with _WRITING:
            data = self._load()
            data[key] = value
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path)


__all__ = ["ENGINE_STATE_FILE", "EngineState", "JsonValue"]
