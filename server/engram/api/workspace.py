"""Declarations of the workspace use cases: impact, the observer, status, team and upkeep.

See :mod:`engram.api.declare` for what a declaration holds; the functions they run live in
``engram.app``.

Long on purpose: one declaration block per workspace use case; each block is the whole
contract of its command (arguments, limits, renderings), and the blocks share the helpers at
the top. The order of ``USE_CASES`` is the order of docs/commands.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from engram.api import render
from engram.api.declare import JsonObject, Kind, Spelling, Surface, UseCase, spec
from engram.errors import InvalidInput
from engram.model import Memory, memory_json, to_jsonable

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.app.doctor import DoctorCheck
    from engram.app.maintenance import ConsolidateReport
    from engram.app.team import ShareReport, TeamSyncReport
    from engram.codegraph import ImpactReport, IndexReport
    from engram.codegraph import ReindexResult as ReindexResult_
    from engram.lifecycle import PruneReport
    from engram.observer import ObserveResult
    from engram.report import ReportData

CLI, LSP, MCP = Surface.CLI, Surface.LSP, Surface.MCP
EDITOR = frozenset({CLI, LSP})


def _json(value: object) -> JsonObject:
    data = to_jsonable(value)
    return dict(data) if isinstance(data, dict) else {"result": data}


# --------------------------------------------------------------------------- impact


def split_target(value: object) -> dict[str, object]:
    """``FILE`` or ``FILE:SYMBOL`` (the CLI's one positional) -> ``file`` and ``symbol``."""
    if not isinstance(value, str):
        raise InvalidInput("target: expected FILE or FILE:SYMBOL")
    if ":" not in value or value.rsplit(":", 1)[1].strip() == "":
        return {"file": value.rstrip(":") or value}
    file, symbol = value.rsplit(":", 1)
    if not file:
        raise InvalidInput(f"expected FILE or FILE:SYMBOL, got {value!r}")
    return {"file": file, "symbol": symbol.strip()}


@attrs.frozen
class ImpactArgs:
    file: str = attrs.field(
        metadata=spec(
            "workspace-relative or absolute path", path=True, surfaces=frozenset({LSP, MCP})
        )
    )
    symbol: str | None = attrs.field(
        default=None,
        metadata=spec(
            "a function or class in the file", max_length=500, surfaces=frozenset({LSP, MCP})
        ),
    )


def _impact_check(engine: Engine, a: ImpactArgs, surface: Surface) -> ImpactArgs:
    """The file must exist (CLI and MCP; an editor may ask about a buffer not saved yet).
    On the CLI ``a:b`` may be a file named so, and an empty graph is indexed first.

    Over MCP a misspelt path answered as if it were a file nothing depends on, with the
    workspace's most changed files as its "ranked files" ("changes often"): an agent took
    that noise for the impact of the file it meant.
    """
    from engram.app.indexing import GRAPH_INDEXED, index
    from engram.app.state import EngineState

    engine.relative(a.file)  # no file, the root, outside: refused before anything runs
    if surface is LSP:
        return a
    if surface is CLI and a.symbol is not None:
        whole = f"{a.file}:{a.symbol}"
        if engine.workspace.resolve(whole).exists():
            a = ImpactArgs(file=whole)
    if not engine.workspace.resolve(a.file).exists():
        raise InvalidInput(f"{a.file} does not exist in {engine.workspace.root}")
    if surface is not CLI:
        return a
    if int(engine.codegraph.stats().get("files", 0)) == 0:
        index(engine)  # impact on a never-indexed workspace would say nothing
    elif not engine.read_only and not EngineState.of(engine.workspace).get(GRAPH_INDEXED):
        index(engine, chunks=False)  # only what remember anchored is in it: the whole graph
    return a


def _impact(engine: Engine, a: ImpactArgs) -> ImpactReport:
    from engram.app.impact import impact

    return impact(engine, a.file, a.symbol)


def _impact_json(report: ImpactReport) -> JsonObject:
    from engram.api.render import impact_summary

    out = _json(report)
    out["summary"] = impact_summary(report)
    return out


IMPACT: UseCase[ImpactArgs, ImpactReport] = UseCase(
    name="impact",
    returns=(
        "the ImpactReport (`target`, `direct_dependents`, `transitive_dependents`, "
        "`symbol_references`, `dependencies`, `cochange`, `tests`, `ranked_files`, "
        "`score`, `notes`) plus a one-line `summary`"
    ),
    summary="what a change to a file (or a symbol in it) may break",
    args=ImpactArgs,
    run=_impact,
    to_json=_impact_json,
    to_text=render.impact_text,
    notes=lambda r: list(r.notes),
    prepare=_impact_check,
    guidance=(
        "Direct and transitive dependents, files that usually change with it (from git "
        "history), tests that exercise it, and memories attached to those places. Call it "
        "before a refactor."
    ),
    spellings=(
        Spelling(
            name="target",
            help="FILE or FILE:SYMBOL",
            surfaces=frozenset({CLI}),
            kinds=(Kind.TEXT,),
            apply=split_target,
            positional=True,
            metavar="FILE[:SYMBOL]",
            required=True,
        ),
    ),
)


# --------------------------------------------------------------------------- observer


@attrs.frozen
class ObserveArgs:
    event: dict[str, object] = attrs.field(
        metadata=spec("an observer event: {session_id, kind, tool, files, exit_code, …}")
    )


def _observe(engine: Engine, a: ObserveArgs) -> ObserveResult:
    from engram.app.observe import observe

    return observe(engine, dict(a.event))


OBSERVE: UseCase[ObserveArgs, ObserveResult] = UseCase(
    name="observe",
    returns=(
        'the observer\'s ObserveResult (`{"accepted", "session_id", "step", "signals", '
        '"elapsed_ms", …}`)'
    ),
    summary="feed one observer event (a tool call, a test run, a commit …)",
    args=ObserveArgs,
    run=_observe,
    to_json=_json,
    to_text=lambda r: render.one_line_summary(r),
    surfaces=frozenset({LSP, MCP}),
    guidance=(
        "Report what you just did so Engram can learn from it: a tool call or result (Read, "
        "Edit, Bash with exit code, test run), a commit, or reasoning such as 'that approach "
        "failed because…'. Learned memories are promoted only after tests pass or a commit."
    ),
    folder_arg=None,
)


@attrs.frozen
class SessionArgs:
    session_id: str | None = attrs.field(
        default=None,
        metadata=spec("the observer session", max_length=200, default_text="the latest"),
    )


def _session(engine: Engine, a: SessionArgs) -> JsonObject:
    from engram.app.observe import session_summary

    return _json(session_summary(engine, a.session_id))


SESSION_SUMMARY: UseCase[SessionArgs, JsonObject] = UseCase(
    name="session_summary",
    returns=(
        "the observer's session card; over LSP the editor session's `{\"applied\", "
        '"learned", "corrected", "needs_review", "observer"}`'
    ),
    summary="what a session used from memory, what it learned, what needs review",
    args=SessionArgs,
    run=_session,
    to_json=lambda d: d,
    to_text=lambda d: str(d.get("text") or ""),
    surfaces=frozenset({LSP, MCP}),
    folder_arg=None,
)


# --------------------------------------------------------------------------- status


@attrs.frozen
class NoArgs:
    pass


def _stats(engine: Engine, _a: NoArgs) -> JsonObject:
    from engram.app.doctor import stats

    return _json(stats(engine))


STATS: UseCase[NoArgs, JsonObject] = UseCase(
    name="stats",
    returns=(
        '`{"total", "shown", "active", "needs_review", "stale", "deprecated", "pinned", '
        '"user_verified", "anchored", "by_type", "by_source", "by_scope", "store_bytes", '
        '"embedding_model", "workspace"}` (over LSP also `ready`, `indexing`, `session`)'
    ),
    summary="counts of memories by type, source and state",
    args=NoArgs,
    run=_stats,
    to_json=lambda d: d,
    to_text=render.stats_text,
    surfaces=EDITOR,
    folder_arg=None,
)


def _doctor(engine: Engine, _a: NoArgs) -> list[DoctorCheck]:
    from engram.app.doctor import doctor

    return doctor(engine)


def _doctor_ok(checks: list[DoctorCheck]) -> bool:
    return all(c.ok or c.level != "error" for c in checks)


#: How a failing check is marked by its level ("skipped": not run, see the line naming why).
_MARKS = {"error": "FAIL", "skipped": "skip"}


def _doctor_text(checks: list[DoctorCheck]) -> str:
    lines = []
    for check in checks:
        mark = "ok  " if check.ok else _MARKS.get(check.level, "warn")
        lines.append(f"{mark}  {check.name:<16} {check.detail}")
    return "\n".join(lines)


DOCTOR: UseCase[NoArgs, list[DoctorCheck]] = UseCase(
    name="doctor",
    returns=(
        '`{"ok", "checks": [{"name", "ok", "detail", "level", "facts"?}]}` (`facts`: the '
        "check's figures as a JSON object, e.g. the code search's unembedded chunks)"
    ),
    summary="check the installation, store, model, grammars and git",
    args=NoArgs,
    run=_doctor,
    to_json=lambda checks: {
        "ok": _doctor_ok(checks),
        "checks": [c.to_dict() for c in checks],
    },
    to_text=_doctor_text,
    exit_code=lambda checks: 0 if _doctor_ok(checks) else 1,
    surfaces=EDITOR,
    folder_arg=None,
)


@attrs.frozen
class ReportArgs:
    file: str | None = attrs.field(
        default=None,
        metadata=spec(
            "where to write the page",
            positional=True,
            metavar="FILE",
            surfaces=frozenset({CLI}),
            default_text=".engram/report.html",
        ),
    )
    module: str | None = attrs.field(
        default=None,
        metadata=spec(
            "the file whose impact graph to draw",
            path=True,
            cli=("--module", "-m"),
            metavar="PATH",
            default_text="the file with the most memories",
        ),
    )
    open: bool = attrs.field(
        default=False,
        metadata=spec("open it in the default browser", surfaces=frozenset({CLI})),
    )


@attrs.frozen
class ReportWritten:
    path: Path
    data: ReportData
    #: ``--open`` asked and no browser answered
    no_browser: bool = False


def _report(engine: Engine, a: ReportArgs) -> ReportWritten:
    from engram.app.report import write_report

    path, data = write_report(engine, a.file, a.module)
    if a.open:
        import webbrowser

        return ReportWritten(path, data, no_browser=not webbrowser.open(path.as_uri()))
    return ReportWritten(path, data)


def _report_json(r: ReportWritten) -> JsonObject:
    from engram.report import CHART_IDS

    return {
        "path": str(r.path),
        "uri": r.path.as_uri(),
        "charts": list(CHART_IDS),
        "module": r.data.impact.module,
        "totals": dict(r.data.totals),
    }


REPORT: UseCase[ReportArgs, ReportWritten] = UseCase(
    name="report",
    returns='`{"path", "uri", "charts", "module", "totals"}`',
    summary="write an HTML report: memories over time, health, co-change, impact",
    args=ReportArgs,
    run=_report,
    to_json=_report_json,
    to_text=lambda r: str(r.path),
    notes=lambda r: [f"no browser found; open {r.path.as_uri()}"] if r.no_browser else [],
    surfaces=EDITOR,
    folder_arg=None,
)


# --------------------------------------------------------------------------- team


@attrs.frozen
class ShareArgs:
    ids: list[str] = attrs.field(
        factory=list,
        metadata=spec(
            "share exactly these memories",
            max_length=1000,
            memory_id=True,
            positional=True,
            metavar="ID",
            default_text="every memory someone stands behind",
        ),
    )
    commit: bool = attrs.field(default=False, metadata=spec("also git add + commit the files"))


def _share(engine: Engine, a: ShareArgs) -> ShareReport:
    from engram.app.team import share

    return share(engine, a.ids, commit=a.commit)


def _memories(count: int) -> str:
    return f"{count} memory" if count == 1 else f"{count} memories"


def _share_text(report: ShareReport) -> str:
    if report.written:
        return f"shared {_memories(len(report.written))} in {report.folder}/"
    if report.unchanged:
        text = (
            f"nothing new to share: {_memories(len(report.unchanged))} already in {report.folder}/"
        )
        if report.committed:  # an earlier share's files, written but never committed
            text += f"; committed those git did not have yet as {report.committed[:10]}"
        return text
    if report.refused:  # ids were given: the hint below ("share it by id") would be wrong
        return f"nothing shared: {_memories(len(report.refused))} refused (the reasons are above)"
    return "nothing to share: confirm a memory first (engram confirm ID), or share it by id"


def _share_notes(report: ShareReport) -> list[str]:
    notes = [f"wrote {path}" for path in report.written[:10]]
    if report.committed:
        notes.append(f"committed as {report.committed[:10]}; push it with your code")
    elif report.written:
        notes.append(f"commit {report.folder}/ and push it (or use --commit)")
    notes += [f"not shared {reason}" for reason in report.refused]
    return notes


SHARE: UseCase[ShareArgs, ShareReport] = UseCase(
    name="share",
    returns=(
        '`{"folder", "written": [path], "unchanged": [id], "refused": ["id: reason"], '
        '"committed": sha | null}`'
    ),
    summary="write taught, confirmed or pinned memories (or the given ids) to the team folder",
    args=ShareArgs,
    run=_share,
    to_json=_json,
    to_text=_share_text,
    notes=_share_notes,
    exit_code=lambda r: 1 if r.refused and not (r.written or r.unchanged) else 0,
    surfaces=EDITOR,
    touched=lambda r: [p.rsplit("/", 1)[-1].removesuffix(".json") for p in r.written] or None,
    folder_arg=None,
)


def _sync(engine: Engine, _a: NoArgs) -> TeamSyncReport:
    from engram.app.team import sync_team

    return sync_team(engine)


SYNC: UseCase[NoArgs, TeamSyncReport] = UseCase(
    name="sync",
    returns=(
        '`{"folder", "added", "updated", "unchanged", "retired", "skipped", "changed", '
        '"conflicts"}`'
    ),
    summary="read the team folder (after a pull) into the local store",
    args=NoArgs,
    run=_sync,
    to_json=_json,
    to_text=lambda r: (
        f"team memories from {r.folder}/: {r.added} added, {r.updated} updated, "
        f"{r.retired} retired, {r.unchanged} unchanged"
    ),
    notes=lambda r: (
        [f"skipped {reason}" for reason in r.skipped[:10]]
        + [f"contradicts a teammate's memory, yours goes to review: {c}" for c in r.conflicts[:10]]
    ),
    surfaces=EDITOR,
    lsp_name="engram.syncTeam",
    touched=lambda r: list(r.changed) if r.changed else None,
    folder_arg=None,
)


# --------------------------------------------------------------------------- upkeep


@attrs.frozen
class DryRunArgs:
    dry_run: bool = attrs.field(default=False, metadata=spec("only say what would change"))


def _consolidate(engine: Engine, a: DryRunArgs) -> ConsolidateReport:
    from engram.app.maintenance import consolidate

    return consolidate(engine, dry_run=a.dry_run)


def _consolidate_text(r: ConsolidateReport) -> str:
    would = "would merge" if r.dry_run else "merged"
    link = "would link" if r.dry_run else "linked"
    return (
        f"{r.scanned} memories: {would} {len(r.merged)} near-duplicates, "
        f"{link} {len(r.conflicts)} contradictions for review"
    )


def _consolidate_notes(r: ConsolidateReport) -> list[str]:
    notes = [*r.merged, *r.conflicts][:10]
    if r.conflicts and not r.dry_run:
        notes.append(
            "review them: engram list --review (confirm the one that holds, flag the other)"
        )
    return notes


CONSOLIDATE: UseCase[DryRunArgs, ConsolidateReport] = UseCase(
    name="consolidate",
    returns=(
        '`{"scanned", "merged": ["kept <- removed (reason)"], "conflicts": ["newer vs '
        'older: kind, reason"], "dry_run"}`'
    ),
    summary="merge near-duplicates and link contradictions among stored memories",
    args=DryRunArgs,
    run=_consolidate,
    to_json=_json,
    to_text=_consolidate_text,
    notes=_consolidate_notes,
    surfaces=EDITOR,
    touched=lambda r: [] if (r.merged or r.conflicts) and not r.dry_run else None,
    folder_arg=None,
)


@attrs.frozen
class PruneOutcome:
    report: PruneReport
    dry_run: bool


def _prune(engine: Engine, a: DryRunArgs) -> PruneOutcome:
    from engram.app.maintenance import prune

    return PruneOutcome(prune(engine, dry_run=a.dry_run), a.dry_run)


def _prune_text(outcome: PruneOutcome) -> str:
    report = outcome.report
    verb = "would" if outcome.dry_run else "did"
    lines = [
        f"prune {verb}: mark {len(report.stale_marked)} stale, deprecate "
        f"{len(report.deprecated)}, delete {len(report.deleted)}"
    ]
    lines += [f"  {mid}  {reason}" for mid, reason in list(report.reasons.items())[:20]]
    return "\n".join(lines)


PRUNE: UseCase[DryRunArgs, PruneOutcome] = UseCase(
    name="prune",
    returns='`{"dry_run", "stale_marked", "deprecated", "deleted", "reasons"}`',
    summary="apply the lifecycle rules: stale files, decay, expired sessions",
    args=DryRunArgs,
    run=_prune,
    to_json=lambda o: {"dry_run": o.dry_run, **_json(o.report)},
    to_text=_prune_text,
    surfaces=EDITOR,
    touched=lambda o: [] if (o.report.updated or o.report.deleted) and not o.dry_run else None,
    folder_arg=None,
)


# --------------------------------------------------------------------------- editor only


@attrs.frozen
class OpenArgs:
    id: str = attrs.field(
        metadata=spec(
            "memory id, e.g. m-3f2a9c1e7b",
            max_length=100,
            memory_id=True,
            aliases=("memory_id",),
        )
    )


def _open(engine: Engine, a: OpenArgs) -> Memory:
    from engram.app.memories import get

    return get(engine, a.id)


OPEN: UseCase[OpenArgs, Memory] = UseCase(
    name="open",
    returns='`{"id", "shown", "memory": Memory}`',
    summary="open a memory's place in the editor (window/showDocument)",
    args=OpenArgs,
    run=_open,
    to_json=lambda m: {"id": m.id, "shown": False, "memory": memory_json(m)},
    to_text=lambda m: m.id,
    surfaces=frozenset({LSP}),
    folder_arg=None,
)


@attrs.frozen
class ReindexArgs:
    files: list[str] | None = attrs.field(
        default=None,
        metadata=spec(
            "re-read only these files into the code graph", path=True, default_text="everything"
        ),
    )


@attrs.frozen
class ReindexResult:
    """The graph's report of a whole run, or the per-file results of ``files``."""

    report: IndexReport | None = None
    files: list[str] = attrs.field(factory=list)
    results: list[ReindexResult_] = attrs.field(factory=list)


def _reindex(engine: Engine, a: ReindexArgs) -> ReindexResult:
    """Re-index in the caller's thread (the language server runs it with progress)."""
    from engram.app.indexing import index

    if a.files:
        rels = [engine.workspace.relative(f) for f in a.files]
        graph = engine.codegraph
        return ReindexResult(files=rels, results=[graph.reindex_file(rel) for rel in rels])
    return ReindexResult(report=index(engine, embed_chunks=False))


def _reindex_json(result: ReindexResult) -> JsonObject:
    if result.report is not None:
        return _json(result.report)
    return {"files": list(result.files), "results": [_json(r) for r in result.results]}


REINDEX: UseCase[ReindexArgs, ReindexResult] = UseCase(
    name="reindex",
    returns=(
        "the IndexReport (`files_seen`, `files_indexed`, `files_unchanged`, "
        '`files_removed`, `seconds`, `interrupted`, …), or `{"files", "results"}`'
    ),
    summary="re-index the code graph (all of it, or some files) with progress",
    args=ReindexArgs,
    run=_reindex,
    to_json=_reindex_json,
    to_text=lambda r: render.one_line_summary(r.report) if r.report else ", ".join(r.files),
    surfaces=frozenset({LSP}),
    folder_arg=None,
)


USE_CASES: tuple[UseCase[object, object], ...] = (  # type: ignore[assignment]
    IMPACT,
    OBSERVE,
    SESSION_SUMMARY,
    STATS,
    DOCTOR,
    REPORT,
    SHARE,
    SYNC,
    CONSOLIDATE,
    PRUNE,
    OPEN,
    REINDEX,
)

__all__ = ["USE_CASES", "split_target"]
