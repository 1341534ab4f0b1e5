"""Tool usage counts in ``.engram/mcp/usage.sqlite``: popularity and per-module history.

Tool search ranks a tool higher when it has been called often (popularity) and, more
strongly, when it was called successfully while working in the same module before: that is
the workspace's own memory of which tools helped here. Counts are small integers in SQLite
(standard library), written once per call; reads are cached and refreshed on write.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tool_usage (
    tool TEXT PRIMARY KEY,
    calls INTEGER NOT NULL DEFAULT 0,
    successes INTEGER NOT NULL DEFAULT 0,
    failures INTEGER NOT NULL DEFAULT 0,
    last_used REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS module_usage (
    module TEXT NOT NULL,
    tool TEXT NOT NULL,
    calls INTEGER NOT NULL DEFAULT 0,
    successes INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (module, tool)
);
"""


def module_of(rel_path: str | None) -> str | None:
    """The module a workspace-relative file belongs to: its directory (``.`` at the root)."""
    if not rel_path:
        return None
    parent = PurePosixPath(rel_path.replace("\\", "/")).parent
    return str(parent)


class UsageStore:
    """Per-workspace tool usage; every method tolerates a damaged or read-only file."""

    def __init__(self, path: str, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._conn: sqlite3.Connection | None = None
        self._popularity: dict[str, int] | None = None
        self._modules: dict[str, dict[str, int]] = {}

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self.path, timeout=5.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            self._conn = conn
        return self._conn

    def record(self, tool: str, *, ok: bool, module: str | None = None) -> None:
        """Count one call of ``tool`` (qualified name) and, if known, its module."""
        try:
            db = self._db()
            db.execute(
                "INSERT INTO tool_usage(tool, calls, successes, failures, last_used) "
                "VALUES (?, 1, ?, ?, ?) ON CONFLICT(tool) DO UPDATE SET calls = calls + 1, "
                "successes = successes + excluded.successes, failures = failures + "
                "excluded.failures, last_used = excluded.last_used",
                (tool, int(ok), int(not ok), self._clock()),
            )
            if module is not None:
                db.execute(
                    "INSERT INTO module_usage(module, tool, calls, successes) VALUES (?, ?, 1, ?) "
                    "ON CONFLICT(module, tool) DO UPDATE SET calls = calls + 1, "
                    "successes = successes + excluded.successes",
                    (module, tool, int(ok)),
                )
        except sqlite3.Error as exc:
            log.warning("could not record MCP tool usage in %s: %s", self.path, exc)
        self._popularity = None
        self._modules.clear()

    def popularity(self) -> Mapping[str, int]:
        """Calls per tool."""
        if self._popularity is None:
            try:
                rows = self._db().execute("SELECT tool, calls FROM tool_usage").fetchall()
            except sqlite3.Error as exc:
                log.warning("MCP tool usage unreadable (%s): %s", self.path, exc)
                rows = []
            self._popularity = {str(t): int(c) for t, c in rows}
        return self._popularity

    def for_module(self, module: str) -> Mapping[str, int]:
        """Successful calls per tool while working in ``module`` (and its sub-modules)."""
        cached = self._modules.get(module)
        if cached is None:
            try:
                rows = (
                    self._db()
                    .execute(
                        "SELECT tool, SUM(successes) FROM module_usage WHERE module = ? OR "
                        "module LIKE ? ESCAPE '\\' GROUP BY tool",
                        (module, _like_prefix(module)),
                    )
                    .fetchall()
                )
            except sqlite3.Error as exc:
                log.warning("MCP tool usage unreadable (%s): %s", self.path, exc)
                rows = []
            cached = {str(t): int(s) for t, s in rows if s}
            self._modules[module] = cached
        return cached

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _like_prefix(module: str) -> str:
    escaped = module.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"{escaped}/%"
