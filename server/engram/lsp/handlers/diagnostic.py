"""Pull diagnostics: textDocument/diagnostic (resultId, unchanged) and workspace/diagnostic."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from engram.lsp.diagnostics import SOURCE, build_diagnostics, result_id
from engram.lsp.folder import (
    Folder,
    anchored_files_blocking,
    locate_spans,
    read_lines_blocking,
    symbols_blocking,
)

if TYPE_CHECKING:
    from engram.lsp.server import EngramLanguageServer

UNCHANGED = types.DocumentDiagnosticReportKind.Unchanged


def register(server: EngramLanguageServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier=SOURCE, inter_file_dependencies=False, workspace_diagnostics=True
        ),
    )
    async def document_diagnostic(
        ls: EngramLanguageServer, params: types.DocumentDiagnosticParams
    ) -> types.DocumentDiagnosticReport:
        doc = ls.docs.get(params.text_document.uri)
        if not ls.pull or doc is None:
            # pushing (or not ours): an empty pull report avoids duplicates
            return types.RelatedFullDocumentDiagnosticReport(items=[], result_id="none")
        if not doc.loaded:
            await ls.refresh_document(doc)
        items = ls.diagnostics_for(doc)
        rid = result_id(items)
        doc.folder.session.applied(d.data["id"] for d in items if isinstance(d.data, dict))
        if params.previous_result_id == rid:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=rid)
        return types.RelatedFullDocumentDiagnosticReport(items=items, result_id=rid)

    @server.feature(types.WORKSPACE_DIAGNOSTIC)
    async def workspace_diagnostic(
        ls: EngramLanguageServer, params: types.WorkspaceDiagnosticParams
    ) -> types.WorkspaceDiagnosticReport:
        previous = {p.uri: p.value for p in params.previous_result_ids}
        reports: list[Any] = []
        for folder in list(ls.folders.values()):
            if (folder.engine is None and folder.link is None) or not folder.ready:
                continue
            reports += await _folder_reports(ls, folder, previous)
        return types.WorkspaceDiagnosticReport(items=reports)


async def _folder_reports(
    ls: EngramLanguageServer, folder: Folder, previous: dict[str, str]
) -> list[Any]:
    engine, link = folder.engine, folder.link
    partners: dict[str, list[tuple[str, str]]]
    if engine is None and link is not None:
        by_file, partners = await asyncio.to_thread(link.anchored)
    else:
        assert engine is not None
        by_file = await asyncio.to_thread(anchored_files_blocking, engine)
        from engram.app.memories import conflict_partners

        everyone = list({m.id: m for ms in by_file.values() for m in ms}.values())
        partners = await asyncio.to_thread(conflict_partners, engine, everyone)
    now = ls.clock()
    reports: list[Any] = []
    for rel, memories in by_file.items():
        uri = ls.uri_for(folder, rel)
        doc = ls.docs.get(uri)
        if doc is not None and doc.loaded:
            items = ls.diagnostics_for(doc)
            version = None
        else:
            lines = await asyncio.to_thread(read_lines_blocking, folder.root, rel)
            if engine is None and link is not None:
                _found, symbols, _partners = await asyncio.to_thread(
                    link.snapshot, rel, folder.has_graph
                )
            else:
                assert engine is not None
                symbols = await asyncio.to_thread(symbols_blocking, engine, rel, folder.has_graph)
            spans = locate_spans(memories, rel, lines, symbols)
            items = build_diagnostics(
                memories,
                spans,
                rel,
                folder.policy,
                now,
                lambda r: ls.uri_for(folder, r),
                _line_length(lines),
                partners,
            )
            version = None
        rid = result_id(items)
        if previous.get(uri) == rid:
            reports.append(
                types.WorkspaceUnchangedDocumentDiagnosticReport(
                    uri=uri, result_id=rid, version=version
                )
            )
        else:
            reports.append(
                types.WorkspaceFullDocumentDiagnosticReport(
                    uri=uri, items=items, result_id=rid, version=version
                )
            )
    return reports


def _line_length(lines: list[str]) -> Callable[[int], int]:
    def length(line: int) -> int:
        return len(lines[line]) if 0 <= line < len(lines) else 0

    return length
