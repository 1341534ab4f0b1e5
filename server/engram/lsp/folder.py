"""One workspace folder served by the language server: its Engine and what is cached of it.

Multi-root workspaces get one :class:`Folder` (and one Engine, one store) per root, and
every request is routed by URI. The caches here (memories per file, code symbols, impact
summaries) are what hover and diagnostics read, so those never touch the disk or a model.
They are written only on the event loop thread; the blocking work that fills them (store
reads, the code graph, impact analysis) runs in worker threads via the ``*_blocking``
functions, which take plain values and return plain values.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from engram.anchors import LineSpan
from engram.lsp.anchors import SymbolInfo, locate_anchor
from engram.lsp.diagnostics import DiagnosticPolicy, make_policy
from engram.lsp.engines import Slot
from engram.lsp.ledger import SessionLedger
from engram.model import Memory
from engram.workspace import Workspace

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.config import EngramConfig
    from engram.lsp.remote import EngineLink

log = logging.getLogger(__name__)

#: Memory types worth a workspace-wide diagnostic scan (``workspace/diagnostic``).
MAX_WORKSPACE_FILES = 500


@attrs.frozen
class FileSnapshot:
    """What a worker thread found for one file: memories, spans, symbols."""

    memories: tuple[Memory, ...]
    spans: dict[str, LineSpan]
    symbols: tuple[SymbolInfo, ...]
    #: memory id -> the shown memories it conflicts with, ``(id, text)`` (marked in hover
    #: and diagnostics; docs/trust.md "Conflicts")
    partners: dict[str, list[tuple[str, str]]] = attrs.field(factory=dict)


def symbol_at(symbols: Sequence[SymbolInfo], line: int) -> SymbolInfo | None:
    """The innermost definition containing ``line``."""
    best: SymbolInfo | None = None
    for symbol in symbols:
        if symbol.span.contains(line) and (
            best is None or symbol.span.end - symbol.span.start < best.span.end - best.span.start
        ):
            best = symbol
    return best


def find_symbol_span(symbols: Sequence[SymbolInfo], name: str | None) -> LineSpan | None:
    if not name:
        return None
    for symbol in symbols:
        if symbol.qualname == name:
            return symbol.span
    for symbol in symbols:
        if symbol.name == name or symbol.name == name.rsplit(".", 1)[-1]:
            return symbol.span
    return None


def locate_spans(
    memories: Sequence[Memory], rel: str, lines: Sequence[str], symbols: Sequence[SymbolInfo]
) -> dict[str, LineSpan]:
    """Current spans of the memories anchored in ``rel`` (first anchor in the file)."""
    spans: dict[str, LineSpan] = {}
    for memory in memories:
        anchor = next((a for a in memory.anchors if a.file == rel), None)
        if anchor is None:
            continue
        spans[memory.id] = locate_anchor(anchor, lines, find_symbol_span(symbols, anchor.symbol))
    return spans


@attrs.frozen
class FolderSettings:
    """A folder's settings as one immutable value, replaced whole on a settings change.

    Background work reads the snapshot it started with (``settings = folder.settings``),
    so a change never shows it half of the old settings and half of the new.
    """

    #: the merged settings (files, user, editor); ``None`` until first read
    config: EngramConfig | None = None
    #: the editor's own settings (initializationOptions + ``workspace/configuration``)
    overrides: Mapping[str, object] = attrs.field(factory=dict)
    policy: DiagnosticPolicy = attrs.field(factory=DiagnosticPolicy)


def _close_engine(engine: Engine) -> None:
    engine.close()


def _close_link(link: EngineLink) -> None:
    link.close()


@attrs.define(eq=False)
class Folder:
    """A workspace root, its engine (once open) and the caches hover/diagnostics read.

    Identity (``uri``, ``root``, ``name``, ``workspace``) never changes; ``settings`` is an
    immutable snapshot replaced whole; the engine and the link sit in leased
    :class:`~engram.lsp.engines.Slot` s so a replaced one is closed only when its last user
    finishes; the rest is status and caches written on the event loop thread.
    """

    uri: str
    root: Path
    name: str = ""
    workspace: Workspace = attrs.field(init=False)
    settings: FolderSettings = attrs.field(factory=FolderSettings)
    #: the in-process engine: only when the workspace engine cannot be reached, or a
    #: command needs one (docs/engine.md, "Front ends")
    engines: Slot[Engine] = attrs.field(init=False)
    #: the connection to the workspace engine (engram.daemon), when there is one
    links: Slot[EngineLink] = attrs.field(init=False)
    #: set once the engine exists and its store is open
    ready: bool = False
    #: one line for the user when the engine could not open
    error: str | None = None
    #: never set up (no ``.engram/`` nor ``.engram-team/``): not served, nothing written,
    #: no engine, until the user sets it up (``engram.setUp``; docs/lsp.md "Which folders
    #: are served")
    left_out: bool = False
    #: "indexing 120/800" while the code graph is being brought up to date
    indexing: str | None = None
    symbols: dict[str, tuple[SymbolInfo, ...]] = attrs.field(factory=dict)
    impact: dict[str, str | None] = attrs.field(factory=dict)
    ledger: SessionLedger = attrs.field(factory=SessionLedger)
    #: child processes working for this folder (background embedding), ended at shutdown
    children: list[subprocess.Popen[bytes]] = attrs.field(factory=list)
    #: one in-process engine is opened at a time (commands may race to open it)
    opening: asyncio.Lock = attrs.field(factory=asyncio.Lock)

    def __attrs_post_init__(self) -> None:
        self.name = self.name or self.root.name
        self.workspace = Workspace(self.root)
        self.engines = Slot(_close_engine, "engine")
        self.links = Slot(_close_link, "link to the workspace engine")

    @property
    def engine(self) -> Engine | None:
        """The current in-process engine (lease it with ``engines`` before using it)."""
        return self.engines.current

    @property
    def link(self) -> EngineLink | None:
        """The current link to the workspace engine (lease it with ``links`` to use it)."""
        return self.links.current

    @property
    def config(self) -> EngramConfig | None:
        return self.settings.config

    @property
    def policy(self) -> DiagnosticPolicy:
        return self.settings.policy

    def contains(self, path: Path) -> bool:
        return path == self.root or self.root in path.parents

    def leave_out_if_not_set_up(self) -> bool:
        """Leave the folder out when nobody set Engram up in it; True when left out.

        Its commands then fail with :data:`error`, one line naming how to set it up.
        """
        self.left_out = not self.workspace.is_set_up
        if self.left_out:
            self.error = (
                f"Engram is not set up in {self.name}: set it up with 'Engram: Set Up This "
                "Folder' (VS Code), :EngramSetup (Neovim) or 'engram index' in the folder"
            )
        return self.left_out

    def take_in(self) -> None:
        """The user set the folder up: it is served from its next start."""
        if self.left_out:
            self.left_out = False
            self.error = None

    @property
    def has_graph(self) -> bool:
        return (self.workspace.engram_dir / "graph.sqlite").exists()

    def configure(self, config: EngramConfig, agent: bool, overrides: Mapping[str, object]) -> None:
        """Replace the settings snapshot (one assignment: readers see old or new)."""
        diag = config.diagnostics
        policy = make_policy(
            trust_level=diag.trust_level,
            max_per_file=diag.max_per_file,
            severity=diag.severity,
            agent_severity=diag.agent_severity,
            agent=agent,
        )
        self.settings = FolderSettings(config, overrides, policy)


# --------------------------------------------------------------------------- worker side


def open_engine_blocking(root: Path, overrides: Mapping[str, object]) -> Engine:
    """Import and open the engine; a bad setting falls back to the files' settings."""
    from engram.app import Engine
    from engram.config import ConfigError

    try:
        return Engine.open(Workspace(root), dict(overrides))
    except ConfigError as exc:
        log.warning("%s; editor settings ignored", exc)
        return Engine.open(Workspace(root), {})


def load_config_blocking(root: Path, overrides: Mapping[str, object]) -> EngramConfig:
    """The folder's settings without an engine; a bad editor setting falls back as above."""
    from engram.config import ConfigError, load_config

    try:
        return load_config(Workspace(root), dict(overrides))
    except ConfigError as exc:
        log.warning("%s; editor settings ignored", exc)
        return load_config(Workspace(root), {})


def warm_blocking(engine: Engine) -> None:
    """Open the store (imports LanceDB) so the first didOpen is served from memory."""
    _ = engine.store


def symbols_blocking(engine: Engine, rel: str, has_graph: bool) -> tuple[SymbolInfo, ...]:
    if not has_graph:
        return ()
    try:
        found = engine.codegraph.symbols_in(rel)
    except Exception as exc:  # the graph is optional for diagnostics
        log.debug("symbols of %s unavailable: %s", rel, exc)
        return ()
    return tuple(
        SymbolInfo(s.name, s.qualname, LineSpan(max(0, s.start_line - 1), max(0, s.end_line - 1)))
        for s in found
    )


def snapshot_blocking(
    engine: Engine, rel: str, lines: Sequence[str], has_graph: bool, reindex: bool = False
) -> FileSnapshot:
    """Memories of ``rel`` from the store snapshot, symbols from the graph, located spans."""
    if reindex and has_graph:
        try:
            engine.codegraph.reindex_file(rel)
        except Exception as exc:
            log.debug("reindex of %s failed: %s", rel, exc)
    from engram.app.memories import conflict_partners, for_file

    memories = tuple(for_file(engine, rel))
    symbols = symbols_blocking(engine, rel, has_graph)
    return FileSnapshot(
        memories,
        locate_spans(memories, rel, lines, symbols),
        symbols,
        conflict_partners(engine, memories),
    )


def impact_blocking(engine: Engine, rel: str) -> str | None:
    from engram.api.render import impact_summary
    from engram.app.impact import impact

    try:
        return impact_summary(impact(engine, rel))
    except Exception as exc:  # no graph yet, file not in graph: no summary
        log.debug("impact of %s unavailable: %s", rel, exc)
        return None


def read_lines_blocking(root: Path, rel: str) -> list[str]:
    from engram.lsp.anchors import split_lines
    from engram.workspace import WorkspaceError, confine

    try:
        return split_lines(confine(root, rel).read_text(encoding="utf-8", errors="replace"))
    except (OSError, WorkspaceError):
        return []


def anchored_files_blocking(engine: Engine) -> dict[str, list[Memory]]:
    """Files with diagnostic-type memories anchored in them -> those memories."""
    from engram.app.memories import list_memories
    from engram.model import ANCHORED_DIAGNOSTIC_TYPES

    by_file: dict[str, list[Memory]] = {}
    for memory in list_memories(engine, type=[t.value for t in ANCHORED_DIAGNOSTIC_TYPES]):
        for path in dict.fromkeys(a.file for a in memory.anchors):
            by_file.setdefault(path, []).append(memory)
    return dict(list(by_file.items())[:MAX_WORKSPACE_FILES])


ProgressFn = Callable[[int, int, str], None]
