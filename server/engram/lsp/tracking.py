"""Open documents: their memories (from the digest, the store or the workspace engine),
where those memories' anchors are now as the user edits, and the impact summary hover
shows. docs/lsp.md, "anchors follow edits".

Blocking reads run in worker threads with a lease on the folder's engine or link
(:mod:`engram.lsp.engines`); the results are written to the session on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from engram.lsp import anchors as anchor_ops
from engram.lsp.anchors import SymbolInfo, TextEdit, memory_key
from engram.lsp.folder import FileSnapshot, impact_blocking, locate_spans, snapshot_blocking
from engram.lsp.publishing import document_lines, publish
from engram.lsp.session import DocumentState
from engram.workspace import uri_to_path

if TYPE_CHECKING:
    from engram.lsp.folder import Folder
    from engram.lsp.server import EngramLanguageServer

log = logging.getLogger(__name__)


def open_document(ls: EngramLanguageServer, uri: str) -> DocumentState | None:
    session = ls.session
    folder = session.folder_for_uri(uri)
    path = uri_to_path(uri)
    if folder is None or path is None:
        return None
    try:
        rel = folder.workspace.relative(path)
    except Exception:
        return None
    doc = DocumentState(uri=uri, folder=folder, rel=rel)
    session.docs[uri] = doc
    return doc


async def refresh_document(
    ls: EngramLanguageServer, doc: DocumentState, reindex: bool = False
) -> bool:
    """Reload the document's memories and relocate their anchors (in a thread).

    Returns True when what the document shows may have changed.
    """
    folder = doc.folder
    lines = document_lines(ls, doc.uri)
    snap: FileSnapshot | None = None
    if folder.ready:
        snap = await _snapshot(doc, lines, reindex)
        if snap is None and (folder.link is not None or doc.loaded):
            return False
    if snap is None:
        if doc.loaded:
            return False
        snap = await digest_snapshot(doc, lines)
    if ls.session.docs.get(doc.uri) is not doc:
        return False  # closed meanwhile
    key = memory_key(snap.memories)
    changed = key != doc.memory_key or snap.partners != doc.partners or not doc.loaded or reindex
    doc.memories, doc.memory_key, doc.partners = snap.memories, key, snap.partners
    if changed or reindex:
        doc.spans = snap.spans
    else:  # keep the edit-tracked spans, add any new ones
        for mid, span in snap.spans.items():
            doc.spans.setdefault(mid, span)
    if snap.symbols or folder.ready:
        folder.symbols[doc.rel] = snap.symbols
    doc.loaded = True
    if folder.ready and doc.rel not in folder.impact:
        folder.impact[doc.rel] = None
        ls.spawn(compute_impact(folder, doc.rel), f"impact of {doc.rel}")
    return changed


async def _snapshot(doc: DocumentState, lines: list[str], reindex: bool) -> FileSnapshot | None:
    """From the workspace engine when linked, else the in-process engine; None: no answer."""
    folder = doc.folder
    link_lease = folder.links.acquire("document snapshot")
    if link_lease is not None:
        from engram.daemon.client import EngineError
        from engram.daemon.wire import WireError

        known = doc.memories if doc.loaded and not reindex else None
        try:
            with link_lease as link:
                found, symbols, partners = await asyncio.to_thread(
                    link.snapshot, doc.rel, folder.has_graph, reindex, known
                )
        except (WireError, EngineError) as exc:
            log.info("the engine did not answer for %s: %s", doc.rel, exc)
            return None
        memories = doc.memories if found is None else found
        return FileSnapshot(
            memories, locate_spans(memories, doc.rel, lines, symbols), symbols, partners
        )
    lease = folder.engines.acquire("document snapshot")
    if lease is None:
        return None
    with lease as engine:
        return await asyncio.to_thread(
            snapshot_blocking, engine, doc.rel, lines, folder.has_graph, reindex
        )


async def digest_snapshot(doc: DocumentState, lines: list[str]) -> FileSnapshot:
    """What the SQLite digest knows of the file: shown before the engine answers."""
    from engram.lsp.remote import digest_memories

    memories, partners = await asyncio.to_thread(digest_memories, doc.folder.root, doc.rel)
    return FileSnapshot(memories, locate_spans(memories, doc.rel, lines, ()), (), partners)


async def show_digest(ls: EngramLanguageServer, doc: DocumentState) -> None:
    """A just-opened document's memories from the digest, published at once."""
    if doc.loaded:
        return
    snap = await digest_snapshot(doc, document_lines(ls, doc.uri))
    if doc.loaded or ls.session.docs.get(doc.uri) is not doc:
        return  # the engine was faster
    doc.memories, doc.memory_key = snap.memories, memory_key(snap.memories)
    doc.spans, doc.partners = snap.spans, snap.partners
    doc.loaded = True
    if snap.memories:
        publish(ls, doc)


async def compute_impact(folder: Folder, rel: str) -> None:
    if not folder.has_graph:
        return
    link_lease = folder.links.acquire("impact")
    if link_lease is not None:
        try:
            with link_lease as link:
                folder.impact[rel] = await asyncio.to_thread(link.impact, rel)
        except Exception as exc:  # no summary rather than no hover
            log.debug("impact of %s unavailable: %s", rel, exc)
        return
    lease = folder.engines.acquire("impact")
    if lease is None:
        return
    with lease as engine:
        folder.impact[rel] = await asyncio.to_thread(impact_blocking, engine, rel)


async def refresh_docs(ls: EngramLanguageServer, docs: Sequence[DocumentState]) -> None:
    """Refresh each document; publish what changed (and what was never published)."""
    for doc in docs:
        if await refresh_document(ls, doc) or doc.published_id is None:
            publish(ls, doc)


async def refresh_folder(ls: EngramLanguageServer, folder: Folder) -> None:
    await refresh_docs(ls, ls.session.docs_of(folder))


def apply_changes(
    ls: EngramLanguageServer,
    doc: DocumentState,
    changes: Sequence[types.TextDocumentContentChangeEvent],
) -> None:
    """Shift tracked anchor spans by incremental edits; relocate on full-text edits."""
    edits: list[TextEdit] = []
    full = False
    for change in changes:
        if not isinstance(change, types.TextDocumentContentChangePartial):
            full = True  # the whole text: relocate every anchor from it
            continue
        rng = change.range
        edits.append(
            TextEdit(
                rng.start.line, rng.start.character, rng.end.line, rng.end.character, change.text
            )
        )
    if full:
        lines = document_lines(ls, doc.uri)
        symbols: tuple[SymbolInfo, ...] = doc.folder.symbols.get(doc.rel, ())
        doc.spans = locate_spans(doc.memories, doc.rel, lines, symbols)
    elif edits:
        doc.spans = anchor_ops.shift_all(doc.spans, edits)


async def poll_store(ls: EngramLanguageServer) -> None:
    """Pick up writes by other processes (a second editor window, the CLI, an agent)."""
    session = ls.session
    while True:
        await asyncio.sleep(session.poll_seconds)
        for folder in list(session.folders.values()):
            if not folder.ready or folder.link is not None:
                continue  # the engine tells a linked folder about every write
            for doc in session.docs_of(folder):
                try:
                    if await refresh_document(ls, doc):
                        publish(ls, doc)
                except Exception as exc:
                    log.debug("refresh of %s failed: %s", doc.rel, exc)
