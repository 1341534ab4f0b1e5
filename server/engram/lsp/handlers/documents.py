"""didOpen / didChange / didSave / didClose: keep anchors on their code, publish."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from engram.lsp.server import EngramLanguageServer


def register(server: EngramLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: EngramLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = ls.open_document(params.text_document.uri)
        if doc is None:
            return
        ls.observe_editor(doc, "open")
        await ls.show_digest(doc)  # what the digest knows, in milliseconds
        await ls.refresh_document(doc)
        ls.publish(doc)  # first diagnostics right away, not debounced

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: EngramLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        doc = ls.docs.get(params.text_document.uri)
        if doc is None:
            return
        ls.apply_changes(doc, params.content_changes)
        ls.schedule_publish(doc)
        ls.observe_editor(doc, "change")  # debounced per document

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: EngramLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        doc = ls.docs.get(params.text_document.uri)
        if doc is None:
            return
        ls.observe_editor(doc, "save")
        # the saved text is what the graph should know; re-anchor from it
        doc.folder.impact.pop(doc.rel, None)
        await ls.refresh_document(doc, reindex=True)
        ls.publish(doc)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: EngramLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        doc = ls.docs.pop(params.text_document.uri, None)
        if doc is None:
            return
        if doc.pending is not None:
            doc.pending.cancel()
        ls.observe_editor(doc, "close")
        ls.editor_events.forget_document(doc.folder, doc.rel)
        if ls.push:
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=[])
            )
