"""The ``engram.*`` executeCommand API: argument classes and thin handlers over the use cases.

Each command takes one JSON object (documented with examples in ``docs/commands.md``);
its argument class below is the contract. Handlers do no work of their own: they call the
:mod:`engram.app` use cases in a worker thread, turn results into JSON and, after a
write, ask the server to republish diagnostics of the documents the memory touches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from engram.lsp.registry import Args, CommandContext, CommandError, CommandRegistry
from engram.model import memory_json, to_jsonable

if TYPE_CHECKING:
    from engram.app import Engine


# --------------------------------------------------------------------------- results


# --------------------------------------------------------------------------- arguments


@attrs.define
class SearchArgs(Args):
    query: str
    k: int = 10
    phase: str | None = None
    file: str | None = None
    types: list[str] | None = None


@attrs.define
class RememberArgs(Args):
    ALIASES: ClassVar[Mapping[str, str]] = {"content": "text"}

    text: str
    type: str = "gotcha"
    source: str = "user_taught"
    file: str | None = None
    symbol: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    #: anchor to a file that does not exist yet (docs/trust.md "Anchors")
    allow_missing: bool = False
    tags: list[str] = attrs.field(factory=list)
    related_files: list[str] = attrs.field(factory=list)
    scope: str | None = None
    confidence: float | None = None
    session_id: str | None = None
    needs_review: bool = False
    extra: dict[str, Any] | None = None
    #: id of a memory this one corrects (recorded as a relation in ``extra``)
    supersedes: str | None = None


@attrs.define
class IdArgs(Args):
    ALIASES: ClassVar[Mapping[str, str]] = {"memory_id": "id"}

    id: str


@attrs.define
class FlagArgs(Args):
    ALIASES: ClassVar[Mapping[str, str]] = {"memory_id": "id"}

    id: str
    kind: str = "incorrect"
    note: str | None = None


@attrs.define
class PinArgs(Args):
    ALIASES: ClassVar[Mapping[str, str]] = {"memory_id": "id"}

    id: str
    pinned: bool = True


@attrs.define
class ContextArgs(Args):
    ALIASES: ClassVar[Mapping[str, str]] = {"task": "query", "budget": "budget_tokens"}

    file: str | None = None
    symbol: str | None = None
    query: str | None = None
    phase: str | None = None
    budget_tokens: int | None = None


@attrs.define
class ImpactArgs(Args):
    file: str
    symbol: str | None = None


@attrs.define
class RecipesArgs(Args):
    ALIASES: ClassVar[Mapping[str, str]] = {"query": "task"}

    task: str
    k: int = 3


@attrs.define
class ReviewArgs(Args):
    limit: int = 50


@attrs.define
class ListArgs(Args):
    type: list[str] | None = None
    source: list[str] | None = None
    file: str | None = None
    needs_review: bool | None = None
    include_deprecated: bool = False
    limit: int | None = None

    @staticmethod
    def prepare(raw: dict[str, Any]) -> dict[str, Any]:
        for key in ("type", "source"):
            if isinstance(raw.get(key), str):
                raw[key] = [raw[key]]
        return raw


@attrs.define
class SessionSummaryArgs(Args):
    session_id: str | None = None


@attrs.define
class ObserveArgs(Args):
    """An observer event; given bare (``{kind, tool, …}``) or wrapped (``{event: {…}}``)."""

    event: dict[str, Any]

    @staticmethod
    def prepare(raw: dict[str, Any]) -> dict[str, Any]:
        if set(raw) == {"event"}:
            return raw
        return {"event": raw}


@attrs.define
class ReindexArgs(Args):
    files: list[str] | None = None


@attrs.define
class StatsArgs(Args):
    pass


@attrs.define
class ReportArgs(Args):
    #: the file whose impact graph to draw (default: the one with the most memories)
    module: str | None = None


@attrs.define
class ShareArgs(Args):
    #: share exactly these (default: every memory someone stands behind)
    ids: list[str] = attrs.field(factory=list)
    #: also git add + commit the written files
    commit: bool = False


@attrs.define
class ConsolidateArgs(Args):
    dry_run: bool = False


# --------------------------------------------------------------------------- handlers


def _check_k(k: int, limit: int = 200) -> None:
    if not 1 <= k <= limit:
        raise CommandError(f"k must be between 1 and {limit}, got {k}")


async def search(ctx: CommandContext, args: SearchArgs) -> dict[str, Any]:
    from engram.app.recall import search as search_memories

    _check_k(args.k)
    hits = await ctx.call(
        lambda e: search_memories(
            e, args.query, k=args.k, phase=args.phase, file=args.file, types=args.types
        ),
        args.file,
    )
    ctx.session(args.file).applied([h.memory.id for h in hits])
    return {"hits": [to_jsonable(h) for h in hits]}


async def remember(ctx: CommandContext, args: RememberArgs) -> dict[str, Any]:
    extra = dict(args.extra or {})
    if args.supersedes:
        extra["supersedes"] = args.supersedes

    from engram.app.remember import RememberResult
    from engram.app.remember import remember as remember_memory

    who = ctx.actor()
    # an agent's client cannot say it is a person: what it teaches waits in review
    source = "agent_explicit" if who is not None and args.source == "user_taught" else args.source

    def run(engine: Engine) -> RememberResult:
        return remember_memory(
            engine,
            args.text,
            type=args.type,
            source=source,
            actor=who,
            file=args.file,
            symbol=args.symbol,
            start_line=args.start_line,
            end_line=args.end_line,
            allow_missing=args.allow_missing,
            tags=args.tags,
            related_files=args.related_files,
            scope=args.scope,
            confidence=args.confidence,
            session_id=args.session_id,
            needs_review=args.needs_review,
            extra=extra or None,
        )

    result = await ctx.call(run, args.file)
    ctx.session(args.file).learned(result.memory.id)
    await ctx.memories_changed([result.memory], args.file)
    out: dict[str, Any] = to_jsonable(result)
    out["memory"] = memory_json(result.memory)
    return out


async def forget(ctx: CommandContext, args: IdArgs) -> dict[str, Any]:
    from engram.app.memories import forget as forget_memory

    who = ctx.actor()
    memory = await ctx.call(lambda e: forget_memory(e, args.id, actor=who, cause=_CAUSE))
    await ctx.memories_changed([memory])
    return {"id": memory.id, "forgotten": True, "memory": memory_json(memory)}


async def confirm(ctx: CommandContext, args: IdArgs) -> dict[str, Any]:
    from engram.app.memories import confirm as confirm_memory

    who = ctx.actor()
    memory = await ctx.call(lambda e: confirm_memory(e, args.id, actor=who, cause=_CAUSE))
    ctx.session().corrected(memory.id, "confirmed" if who is None else "endorsed")
    await ctx.memories_changed([memory])
    return {"id": memory.id, "memory": memory_json(memory)}


async def flag(ctx: CommandContext, args: FlagArgs) -> dict[str, Any]:
    from engram.app.memories import flag as flag_memory

    who = ctx.actor()
    memory = await ctx.call(
        lambda e: flag_memory(e, args.id, args.kind, args.note, actor=who, cause=_CAUSE)
    )
    ctx.session().corrected(memory.id, f"flagged {args.kind}")
    await ctx.memories_changed([memory])
    return {"id": memory.id, "kind": args.kind, "memory": memory_json(memory)}


async def pin(ctx: CommandContext, args: PinArgs) -> dict[str, Any]:
    from engram.app.memories import pin as pin_memory

    who = ctx.actor()
    memory = await ctx.call(lambda e: pin_memory(e, args.id, args.pinned, actor=who, cause=_CAUSE))
    await ctx.memories_changed([memory])
    return {"id": memory.id, "pinned": memory.pinned, "memory": memory_json(memory)}


async def context(ctx: CommandContext, args: ContextArgs) -> dict[str, Any]:
    from engram.app.recall import context as context_pack

    pack = await ctx.call(
        lambda e: context_pack(
            e,
            file=args.file,
            symbol=args.symbol,
            query=args.query,
            phase=args.phase,
            budget_tokens=args.budget_tokens,
        ),
        args.file,
    )
    ids = [item.memory.id for item in pack.items]
    ctx.session(args.file).applied(ids)
    result: dict[str, Any] = to_jsonable(pack)
    return result


async def impact(ctx: CommandContext, args: ImpactArgs) -> dict[str, Any]:
    from engram.app.impact import impact as impact_report
    from engram.lsp.hover import impact_summary

    report = await ctx.call(lambda e: impact_report(e, args.file, args.symbol), args.file)
    result: dict[str, Any] = to_jsonable(report)
    result["summary"] = impact_summary(report)
    return result


async def recipes(ctx: CommandContext, args: RecipesArgs) -> dict[str, Any]:
    from engram.app.recall import search as search_memories

    _check_k(args.k, 20)
    hits = await ctx.call(
        lambda e: search_memories(e, args.task, k=args.k, types=["workflow_recipe"])
    )
    ctx.session().applied([h.memory.id for h in hits])
    return {
        "recipes": [
            {**to_jsonable(h), "steps": to_jsonable(h.memory.extra.get("steps", []))} for h in hits
        ]
    }


async def review(ctx: CommandContext, args: ReviewArgs) -> dict[str, Any]:
    if not 1 <= args.limit <= 1000:
        raise CommandError(f"limit must be between 1 and 1000, got {args.limit}")
    from engram.app.memories import list_memories as list_of

    memories = await ctx.call(lambda e: list_of(e, needs_review=True, limit=args.limit))
    return {"memories": [memory_json(m) for m in memories]}


async def list_memories(ctx: CommandContext, args: ListArgs) -> dict[str, Any]:
    if args.limit is not None and not 1 <= args.limit <= 10_000:
        raise CommandError(f"limit must be between 1 and 10000, got {args.limit}")
    from engram.app.memories import list_memories as list_of

    memories = await ctx.call(
        lambda e: list_of(
            e,
            type=args.type,
            source=args.source,
            file=args.file,
            needs_review=args.needs_review,
            include_deprecated=args.include_deprecated,
            limit=args.limit,
        ),
        args.file,
    )
    return {"memories": [memory_json(m) for m in memories]}


async def session_summary(ctx: CommandContext, args: SessionSummaryArgs) -> dict[str, Any]:
    from engram.app.memories import list_memories as list_of
    from engram.app.observe import session_summary as observer_card

    ledger = ctx.session()

    def run(engine: Engine) -> dict[str, Any]:
        observer_summary: Any = None
        try:
            observer_summary = observer_card(engine, args.session_id)
        except Exception as exc:  # the observer is optional here
            observer_summary = {"unavailable": str(exc).splitlines()[0] if str(exc) else ""}
        ids = ledger.all_ids()
        found = {m.id: m for m in engine.store.get_many(ids)} if ids else {}
        review_queue = list_of(engine, needs_review=True, limit=50)
        summary: dict[str, Any] = ledger.summary(found, review_queue, observer_summary)
        return summary

    result: dict[str, Any] = await ctx.call(run)
    return to_jsonable(result)  # type: ignore[no-any-return]


async def observe(ctx: CommandContext, args: ObserveArgs) -> dict[str, Any]:
    from engram.app.observe import observe as observe_event

    result = await ctx.call(lambda e: observe_event(e, args.event))
    out = to_jsonable(result) if result is not None else {"accepted": True}
    return out if isinstance(out, dict) else {"result": out}


async def reindex(ctx: CommandContext, args: ReindexArgs) -> dict[str, Any]:
    report = await ctx.reindex(args.files)
    result: dict[str, Any] = to_jsonable(report)
    return result


async def stats(ctx: CommandContext, args: StatsArgs | None) -> dict[str, Any]:
    from engram.app.doctor import stats as store_stats

    result: dict[str, Any] = to_jsonable(await ctx.call(store_stats))
    status = ctx.status()
    result["indexing"] = status.get("indexing")
    result["ready"] = status.get("ready")
    result["session"] = ctx.session().counts()
    return result


async def share(ctx: CommandContext, args: ShareArgs | None) -> dict[str, Any]:
    """Write memories to the team folder (docs/team.md); the result names what and why not."""
    from engram.app.team import share as share_memories

    wanted = args or ShareArgs()
    report = await ctx.call(lambda e: share_memories(e, wanted.ids, commit=wanted.commit))
    result: dict[str, Any] = to_jsonable(report)
    shared = [path.rsplit("/", 1)[-1].removesuffix(".json") for path in report.written]
    if shared:
        await ctx.memories_changed(await ctx.call(lambda e: e.store.get_many(shared)))
    return result


async def sync_team(ctx: CommandContext, args: StatsArgs | None) -> dict[str, Any]:
    """Read the team folder into the store (after a pull) and refresh what shows them."""
    from engram.app.team import sync_team as read_team

    report = await ctx.call(read_team)
    if report.changed:
        changed = await ctx.call(lambda e: e.store.get_many(report.changed))
        await ctx.memories_changed(changed)
    result: dict[str, Any] = to_jsonable(report)
    return result


async def consolidate(ctx: CommandContext, args: ConsolidateArgs | None) -> dict[str, Any]:
    """Merge near-duplicates and link contradictions among stored memories (lifecycle)."""
    from engram.app.maintenance import consolidate as consolidate_store

    dry_run = bool(args and args.dry_run)
    report = await ctx.call(lambda e: consolidate_store(e, dry_run=dry_run))
    if not dry_run and (report.merged or report.conflicts):
        await ctx.memories_changed([])
    result: dict[str, Any] = to_jsonable(report)
    return result


async def report(ctx: CommandContext, args: ReportArgs | None) -> dict[str, Any]:
    """Write ``.engram/report.html`` (docs/report.md) for the editor to show in a webview."""
    from engram.app.report import write_report

    module = args.module if args else None
    path, data = await ctx.call(lambda e: write_report(e, None, module))
    return {"path": str(path), "uri": path.as_uri(), "module": data.impact.module,
            "totals": data.totals}  # fmt: skip


async def open_memory(ctx: CommandContext, args: IdArgs) -> dict[str, Any]:
    """Show a memory's anchored place in the editor and return the memory."""
    from engram.app.memories import get

    memory = await ctx.call(lambda e: get(e, args.id))
    shown = False
    if memory.anchors:
        anchor = memory.anchors[0]
        shown = await ctx.show_document(anchor.file, anchor.start_line or 0)
    elif memory.related_files:
        shown = await ctx.show_document(memory.related_files[0], 0)
    return {"id": memory.id, "shown": shown, "memory": memory_json(memory)}


@attrs.define
class LogArgs(Args):
    ALIASES: ClassVar[Mapping[str, str]] = {"memory_id": "id"}

    id: str | None = None
    limit: int = 50


async def audit_log(ctx: CommandContext, args: LogArgs) -> dict[str, Any]:
    """The audit trail of one memory (oldest first) or the newest entries of the store."""
    from engram.app.trust import audit_log as read_log

    entries = await ctx.call(lambda e: read_log(e, args.id, args.limit))
    return {"id": args.id, "entries": [to_jsonable(entry) for entry in entries]}


#: The audit trail's "cause" of every move made through an executeCommand.
_CAUSE = "lsp executeCommand"


def register_commands(registry: CommandRegistry) -> None:
    """The core ``engram.*`` commands (the MCP hub adds ``engram.mcp.*`` the same way)."""
    add = registry.register
    add("engram.search", SearchArgs, search, summary="hybrid search over memories")
    add("engram.remember", RememberArgs, remember, summary="store a memory")
    add("engram.forget", IdArgs, forget, summary="delete a memory")
    add("engram.confirm", IdArgs, confirm, summary="confirm a memory is right")
    add("engram.flag", FlagArgs, flag, summary="flag a memory wrong (4 kinds)")
    add("engram.pin", PinArgs, pin, summary="pin or unpin a memory")
    add("engram.log", LogArgs, audit_log, summary="a memory's audit trail")
    add("engram.context", ContextArgs, context, summary="token-budgeted context")
    add("engram.impact", ImpactArgs, impact, summary="what a change may break")
    add("engram.recipes", RecipesArgs, recipes, summary="workflow recipes for a task")
    add("engram.review", ReviewArgs, review, summary="the needs-review queue")
    add("engram.list", ListArgs, list_memories, summary="list memories by filter")
    add("engram.sessionSummary", SessionSummaryArgs, session_summary, summary="this session")
    add("engram.observe", ObserveArgs, observe, summary="feed an observer event")
    add("engram.reindex", ReindexArgs, reindex, summary="re-index the code graph")
    add("engram.stats", StatsArgs, stats, summary="store and server status")
    add("engram.open", IdArgs, open_memory, summary="open a memory's place in the editor")
    add("engram.share", ShareArgs, share, summary="share memories through the team folder")
    add("engram.syncTeam", StatsArgs, sync_team, summary="read the team folder into the store")
    add("engram.consolidate", ConsolidateArgs, consolidate, summary="merge and link memories")
    add("engram.report", ReportArgs, report, summary="write the HTML report, return its path")
