"""The engine's side of a thin language server's link (``engram.lsp.remote``).

The workspace's engine process (``engram.daemon``) runs :func:`answer` for ``lsp``
requests; ``engram.cli.engine_commands`` hands it in, so the daemon imports no front end
(docs/architecture.md, layers). It reads through the same folder code an in-process
language server uses (``engram.lsp.folder``), so both show a file the same way.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from engram.errors import InvalidInput

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.app.index_lock import IndexHolder

log = logging.getLogger(__name__)

#: The most memories one ``memories`` request names or returns.
MAX_IDS = 1000

#: One ``index`` at a time in this engine: every window of the workspace asks for one at
#: start, and VS Code's first index follows its start at once. Two runs at the same time
#: wrote the same graph rows ("UNIQUE constraint failed: nodes.id", seen in a real VS Code
#: on the 6k-file gs-ws slice); the second now waits and finds the files unchanged.
_INDEXING = threading.Lock()
#: The runs of ``index`` requests going on, by the id their window gave them, and those a
#: window asked to stop (``cancel_index``): the progress's cancel in the editor.
_RUNNING: set[str] = set()
_CANCELLED: set[str] = set()


def answer(
    engine: Engine,
    request: Mapping[str, object],
    note: Callable[[str], None] | None = None,
) -> dict[str, object]:
    """The engine's side of this link: what a thin language server reads from it (run in
    the engine process, which gets it from ``engram.cli.engine_commands``).

    ``snapshot``: the memories of a file (``app.memories.for_file``) and its code symbols,
    after re-indexing it when asked (on save); ``impact``: the one-line impact summary
    hover shows; ``index``: the keyword-only index the language server runs at start;
    ``anchored``: files with diagnostic-type memories (pull diagnostics, workspace-wide);
    ``memories``: memories by id and the review queue (an editor session's ledger).

    ``note``: where an ``index`` tells its progress as it runs (:class:`IndexNotes`);
    ``cancel_index`` stops the ``index`` of the same ``run`` id (the editor's cancel).
    """
    from engram.lsp import folder as lsp_folder
    from engram.lsp.anchors import memory_key
    from engram.lsp.remote import partners_json
    from engram.model import memory_to_dict

    what = request.get("what")
    file = request.get("file")
    if what == "snapshot":
        if not isinstance(file, str):
            raise InvalidInput("snapshot needs a file")
        has_graph = bool(request.get("has_graph"))
        snap = lsp_folder.snapshot_blocking(
            engine, file, [], has_graph, bool(request.get("reindex"))
        )
        symbols = [[s.name, s.qualname, s.span.start, s.span.end] for s in snap.symbols]
        known = request.get("known")
        key = [list(k) for k in memory_key(snap.memories)]
        partners = partners_json(snap.partners)  # a partner may change on its own
        if isinstance(known, list) and known == key:  # nothing to decode over there
            return {"unchanged": True, "symbols": symbols, "partners": partners}
        return {
            "memories": [memory_to_dict(m) for m in snap.memories],
            "symbols": symbols,
            "partners": partners,
        }
    if what == "impact":
        if not isinstance(file, str):
            raise InvalidInput("impact needs a file")
        return {"summary": lsp_folder.impact_blocking(engine, file)}
    if what == "index":
        import attrs

        from engram.app.indexing import LSP_INDEX, run_index
        from engram.model import to_jsonable

        options = attrs.evolve(LSP_INDEX, history=bool(request.get("history")))
        notes = IndexNotes(note)
        raw_run = request.get("run")
        run_id = raw_run if isinstance(raw_run, str) and raw_run else None

        def cancelled() -> bool:
            return run_id is not None and run_id in _CANCELLED

        if run_id is not None:
            _RUNNING.add(run_id)
        try:
            if not _INDEXING.acquire(blocking=False):
                notes.say("waiting for another window's index of this folder")
                while not _INDEXING.acquire(timeout=0.25):
                    if cancelled():
                        return {"report": {"interrupted": True}}
            try:
                run = run_index(engine, options, notes.progress, cancelled, on_wait=notes.waiting)
                data = to_jsonable(run.code)
            finally:
                _INDEXING.release()
        finally:
            _RUNNING.discard(run_id or "")
            _CANCELLED.discard(run_id or "")
        return {"report": data if isinstance(data, dict) else {}}
    if what == "cancel_index":  # the editor's cancel of its progress
        raw_run = request.get("run")
        if isinstance(raw_run, str) and raw_run in _RUNNING:
            _CANCELLED.add(raw_run)
            return {"cancelled": True}
        return {"cancelled": False}
    if what == "reindex":
        files = request.get("files")
        done = []
        for rel in files if isinstance(files, list) else []:
            if isinstance(rel, str):
                try:
                    engine.codegraph.reindex_file(rel)
                    done.append(rel)
                except Exception as exc:  # one file must not stop the others
                    log.debug("reindex of %s failed: %s", rel, exc)
        return {"files": done}
    if what == "anchored":
        from engram.app.memories import conflict_partners

        by_file = lsp_folder.anchored_files_blocking(engine)
        everyone = list({m.id: m for ms in by_file.values() for m in ms}.values())
        return {
            "files": {f: [memory_to_dict(m) for m in ms] for f, ms in by_file.items()},
            "partners": partners_json(conflict_partners(engine, everyone)),
        }
    if what == "memories":  # an editor session's ledger (engram.sessionSummary)
        from engram.app.memories import list_memories

        raw_ids = request.get("ids")
        listed = raw_ids if isinstance(raw_ids, list) else []
        ids = [i for i in listed if isinstance(i, str)][:MAX_IDS]
        review = request.get("review")
        limit = min(review, MAX_IDS) if isinstance(review, int) and review > 0 else 0
        found = engine.store.get_many(ids) if ids else []
        queue = list_memories(engine, needs_review=True, limit=limit) if limit else []
        return {
            "memories": [memory_to_dict(m) for m in found],
            "review": [memory_to_dict(m) for m in queue],
        }
    raise InvalidInput(f"unknown language-server request {what!r}")


class IndexNotes:
    """An ``index`` request's progress, as JSON notes ``{"message", "percentage"}`` for the
    editor's ``$/progress`` (``engram.lsp.background.engine_notes`` shows them).

    The engine's start-up index waited for ``.engram/index.lock`` while ``engram index``
    ran in a terminal, and the editor showed "indexing" with nothing moving: it now says
    whom it waits for (the pid and command the lock names), then how far it got.
    """

    def __init__(self, note: Callable[[str], None] | None) -> None:
        from engram.app.indexing import index_phases
        from engram.progress import PhaseBar

        self.note = note
        self.bar = PhaseBar(index_phases(), "indexing", interval=PROGRESS_INTERVAL)

    def say(self, message: str, percentage: int | None = None) -> None:
        if self.note is not None:
            self.note(json.dumps({"message": message, "percentage": percentage}))

    def waiting(self, holder: IndexHolder) -> None:
        self.say(f"waiting for another index ({holder.describe()})")

    def progress(self, done: int, total: int | None, message: str = "") -> None:
        shown = self.bar(done, total, message)
        if shown is not None:
            self.say(*shown)


#: Seconds between two progress notes of one index (the last one always goes out).
PROGRESS_INTERVAL = 0.2


__all__ = ["IndexNotes", "answer"]
