"""Pull diagnostics: textDocument/diagnostic (resultId, unchanged) and workspace/diagnostic;
and what a change of the ``diagnostics`` settings does (new policy, shown again)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from engram.lsp.diagnostics import SOURCE, build_diagnostics, result_id
from engram.lsp.feature import Feature, SettingsChange
from engram.lsp.folder import (
    Folder,
    anchored_files_blocking,
    locate_spans,
    read_lines_blocking,
    symbols_blocking,
)
from engram.lsp.publishing import diagnostics_for, publish, request_pull_refresh
from engram.lsp.tracking import refresh_document

if TYPE_CHECKING:
    from engram.lsp.anchors import SymbolInfo
    from engram.lsp.server import EngramLanguageServer
    from engram.model import Memory

UNCHANGED = types.DocumentDiagnosticReportKind.Unchanged

Partners = dict[str, list[tuple[str, str]]]
WorkspaceReport = (
    types.WorkspaceFullDocumentDiagnosticReport | types.WorkspaceUnchangedDocumentDiagnosticReport
)


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
        doc = ls.session.docs.get(params.text_document.uri)
        if not ls.session.mode.pull or doc is None:
            # pushing (or not ours): an empty pull report avoids duplicates
            return types.RelatedFullDocumentDiagnosticReport(items=[], result_id="none")
        if not doc.loaded:
            await refresh_document(ls, doc)
        items = diagnostics_for(ls, doc)
        rid = result_id(items)
        doc.folder.ledger.applied(d.data["id"] for d in items if isinstance(d.data, dict))
        if params.previous_result_id == rid:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=rid)
        return types.RelatedFullDocumentDiagnosticReport(items=items, result_id=rid)

    @server.feature(types.WORKSPACE_DIAGNOSTIC)
    async def workspace_diagnostic(
        ls: EngramLanguageServer, params: types.WorkspaceDiagnosticParams
    ) -> types.WorkspaceDiagnosticReport:
        previous = {p.uri: p.value for p in params.previous_result_ids}
        reports: list[WorkspaceReport] = []
        for folder in list(ls.session.folders.values()):
            if (folder.engine is None and folder.link is None) or not folder.ready:
                continue
            reports += await _folder_reports(ls, folder, previous)
        return types.WorkspaceDiagnosticReport(items=reports)


async def reconfigure(ls: EngramLanguageServer, change: SettingsChange) -> None:
    """New trust level, severities, cap or mode: the same memories, shown anew."""
    for doc in ls.session.docs_of(change.folder):
        publish(ls, doc)
    request_pull_refresh(ls)


FEATURE = Feature(
    "diagnostics", register, settings=frozenset({"diagnostics"}), reconfigure=reconfigure
)


async def _folder_reports(
    ls: EngramLanguageServer, folder: Folder, previous: dict[str, str]
) -> list[WorkspaceReport]:
    link_lease = folder.links.acquire("workspace diagnostics") if folder.engine is None else None
    if link_lease is not None:
        with link_lease as link:
            by_file, partners = await asyncio.to_thread(link.anchored)

            def symbols_of(rel: str) -> Sequence[SymbolInfo]:
                return link.snapshot(rel, folder.has_graph)[1]

            return await _reports(ls, folder, previous, by_file, partners, symbols_of)
    lease = folder.engines.acquire("workspace diagnostics")
    if lease is None:
        return []
    with lease as engine:
        by_file = await asyncio.to_thread(anchored_files_blocking, engine)
        from engram.app.memories import conflict_partners

        everyone = list({m.id: m for ms in by_file.values() for m in ms}.values())
        partners = await asyncio.to_thread(conflict_partners, engine, everyone)
        return await _reports(
            ls,
            folder,
            previous,
            by_file,
            partners,
            lambda rel: symbols_blocking(engine, rel, folder.has_graph),
        )


async def _reports(
    ls: EngramLanguageServer,
    folder: Folder,
    previous: dict[str, str],
    by_file: Mapping[str, Sequence[Memory]],
    partners: Partners,
    symbols_of: Callable[[str], Sequence[SymbolInfo]],
) -> list[WorkspaceReport]:
    now = ls.session.clock()
    policy = folder.policy  # one settings snapshot for the whole report
    reports: list[WorkspaceReport] = []
    for rel, memories in by_file.items():
        uri = ls.session.uri_for(folder, rel)
        doc = ls.session.docs.get(uri)
        if doc is not None and doc.loaded:
            items = diagnostics_for(ls, doc)
        else:
            lines = await asyncio.to_thread(read_lines_blocking, folder.root, rel)
            symbols = await asyncio.to_thread(symbols_of, rel)
            spans = locate_spans(memories, rel, lines, symbols)
            items = build_diagnostics(
                memories,
                spans,
                rel,
                policy,
                now,
                lambda r: ls.session.uri_for(folder, r),
                _line_length(lines),
                partners,
            )
        rid = result_id(items)
        if previous.get(uri) == rid:
            reports.append(
                types.WorkspaceUnchangedDocumentDiagnosticReport(
                    uri=uri, result_id=rid, version=None
                )
            )
        else:
            reports.append(
                types.WorkspaceFullDocumentDiagnosticReport(
                    uri=uri, items=items, result_id=rid, version=None
                )
            )
    return reports


def _line_length(lines: list[str]) -> Callable[[int], int]:
    def length(line: int) -> int:
        return len(lines[line]) if 0 <= line < len(lines) else 0

    return length
