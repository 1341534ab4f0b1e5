"""didOpen / didChange / didSave / didClose: keep anchors on their code, publish."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from engram.lsp.feature import Feature
from engram.lsp.publishing import publish, schedule_publish
from engram.lsp.tracking import apply_changes, open_document, refresh_document, show_digest

if TYPE_CHECKING:
    from engram.lsp.server import EngramLanguageServer


def register(server: EngramLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: EngramLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = open_document(ls, params.text_document.uri)
        if doc is None:
            return
        ls.observe_editor(doc, "open")
        await show_digest(ls, doc)  # what the digest knows, in milliseconds
        await refresh_document(ls, doc)
        publish(ls, doc)  # first diagnostics right away, not debounced

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: EngramLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        doc = ls.session.docs.get(params.text_document.uri)
        if doc is None:
            return
        apply_changes(ls, doc, params.content_changes)
        schedule_publish(ls, doc)
        ls.observe_editor(doc, "change")  # debounced per document

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: EngramLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        doc = ls.session.docs.get(params.text_document.uri)
        if doc is None:
            return
        ls.observe_editor(doc, "save")
        # the saved text is what the graph should know; re-anchor from it
        doc.folder.impact.pop(doc.rel, None)
        await refresh_document(ls, doc, reindex=True)
        publish(ls, doc)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: EngramLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        doc = ls.session.docs.pop(params.text_document.uri, None)
        if doc is None:
            return
        if doc.pending is not None:
            doc.pending.cancel()
        ls.observe_editor(doc, "close")
        ls.editor_events.forget_document(doc.folder, doc.rel)
        if ls.session.mode.push:
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=[])
            )


FEATURE = Feature("documents", register)
