"""Declarations of the memory use cases: remember, recall, read and a person's corrections.

Each :class:`~engram.api.declare.UseCase` below is the only place its arguments, limits,
defaults and renderings are written (docs/commands.md and docs/cli.md are generated from
them). The functions they run live in ``engram.app``.

Long on purpose: one declaration per memory use case (remember, search, context, list,
review, recipes), each with its arguments, limits and renderings in a single block; they share
the helpers above and are read as the contract (docs/commands.md is generated from them).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from engram.api import render
from engram.api.declare import (
    ALL_SURFACES,
    HIDDEN,
    JsonObject,
    Kind,
    Spelling,
    Surface,
    UseCase,
    spec,
)
from engram.errors import InvalidInput
from engram.model import (
    Memory,
    MemoryScope,
    MemorySource,
    MemoryType,
    UniversalPhase,
    memory_json,
    to_json_object,
    to_jsonable,
)

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.app.remember import RememberResult
    from engram.codegraph import CodeHit
    from engram.lifecycle.trust import Actor
    from engram.retrieval import ContextPack, SearchHit

CLI, LSP, MCP = Surface.CLI, Surface.LSP, Surface.MCP
EDITOR = frozenset({CLI, LSP})

#: The most results one search returns (every surface).
MAX_K = 200
#: The largest token budget a context pack may be given.
MAX_BUDGET = 1_000_000


# --------------------------------------------------------------------------- spellings

_LINE_RANGE = re.compile(r"^\s*(\d+)\s*(?:[-:]\s*(\d+)\s*)?$")


def line_range(value: object) -> Mapping[str, object]:
    """``12`` or ``"12-20"`` (1-based, inclusive) -> 0-based ``start_line`` / ``end_line``."""
    if isinstance(value, bool):
        raise InvalidInput(f"line must be A or A-B with line numbers from 1, got {value!r}")
    if isinstance(value, int):
        start = end = value
    elif isinstance(value, str) and (match := _LINE_RANGE.match(value)):
        start = int(match.group(1))
        end = int(match.group(2)) if match.group(2) else start
    else:
        raise InvalidInput(f"line must be A or A-B with line numbers from 1, got {value!r}")
    if start < 1 or end < 1:
        raise InvalidInput("line numbers start at 1")
    if end < start:
        raise InvalidInput(f"line range {start}-{end} is backwards")
    return {"start_line": start - 1, "end_line": end - 1}


LINE = Spelling(
    name="line",
    help="1-based line, or A-B for a range (as an editor shows it)",
    surfaces=frozenset({CLI, MCP}),
    kinds=(Kind.INT, Kind.TEXT),
    apply=line_range,
    cli_flags=("--line", "-l"),
    metavar="A[-B]",
)


# --------------------------------------------------------------------------- remember


#: Why a person's move happened, for the audit trail (docs/trust.md); set by the surface.
CAUSE = spec("why, for the audit trail", surfaces=HIDDEN)


#: Who acts (docs/trust.md "Agents are not people"), as an ``Actor`` label: empty for the
#: person at the CLI or an editor (named from git by the trust door), ``agent:mcp`` for an MCP
#: client (fixed below), ``agent:lsp:<client>`` for an agent's LSP client (set by the LSP
#: adapter per session, :func:`engram.api.declare.with_actor`).
ACTOR = spec("who acts, an Actor label", surfaces=HIDDEN)
#: What an MCP client is: a coding agent, never a person.
MCP_ACTOR = "agent:mcp"


def caused_by(command: str) -> dict[Surface, dict[str, object]]:
    """The audit ``cause`` (and, over MCP, the actor) each surface records for a move."""
    return {
        CLI: {"cause": f"engram {command}"},
        LSP: {"cause": "lsp executeCommand"},
        MCP: {"cause": "mcp tool", "actor": MCP_ACTOR},
    }


def actor_of(label: str) -> Actor | None:
    """The actor an argument names (``None``: the person at this checkout)."""
    from engram.lifecycle.trust import Actor

    return Actor.parse(label)


def is_agent(actor: Actor | None) -> bool:
    from engram.lifecycle.trust import ActorKind

    return actor is not None and actor.kind is ActorKind.AGENT


class ObservedBy(enum.StrEnum):
    """A front end that records, for an agent, what something *else* taught (docs/trust.md
    "What may move a memory"): the memory is that tool's, never the agent's own word."""

    #: the MCP hub (``engram_call_tool``, ``engram.mcp.call``): a downstream tool's result
    MCP_HUB = "mcp_hub"


#: The front ends that speak for an agent and run the MCP hub.
HUB_SURFACES = frozenset({LSP, MCP})
#: Most argument names of a tool call kept with an observation.
MAX_TOOL_ARGUMENTS = 100


@attrs.frozen
class RememberArgs:
    text: str = attrs.field(
        metadata=spec(
            "what to remember",
            aliases=("content",),
            positional=True,
            metavar="TEXT",
            stdin=True,
        )
    )
    type: MemoryType = attrs.field(
        default=MemoryType.GOTCHA, metadata=spec("kind of memory", cli=("--type", "-t"))
    )
    source: MemorySource = attrs.field(
        default=MemorySource.USER_TAUGHT, metadata=spec("who says so", metavar="S")
    )
    file: str | None = attrs.field(
        default=None,
        metadata=spec("the file it is about (anchors it)", path=True, cli=("--file", "-f")),
    )
    symbol: str | None = attrs.field(
        default=None,
        metadata=spec(
            "the function or class it is about (its lines come from the code graph)",
            max_length=500,
            cli=("--symbol", "-s"),
            metavar="NAME",
        ),
    )
    start_line: int | None = attrs.field(
        default=None,
        metadata=spec("0-based first line", ge=0, surfaces=frozenset({LSP})),
    )
    end_line: int | None = attrs.field(
        default=None,
        metadata=spec("0-based last line (inclusive)", ge=0, surfaces=frozenset({LSP})),
    )
    #: anchor to a file that does not exist yet (docs/trust.md "Anchors")
    allow_missing: bool = attrs.field(
        default=False,
        metadata=spec("the file does not exist yet: you are about to create it"),
    )
    tags: list[str] = attrs.field(
        factory=list,
        metadata=spec("free tags", max_length=50, cli=("--tag",), metavar="X"),
    )
    related_files: list[str] = attrs.field(
        factory=list,
        metadata=spec(
            "other files it applies to (not anchored)",
            max_length=100,
            path=True,
            surfaces=HUB_SURFACES,
        ),
    )
    scope: MemoryScope | None = attrs.field(
        default=None,
        metadata=spec("where it applies", default_text="module with a file, else global"),
    )
    confidence: float | None = attrs.field(
        default=None,
        metadata=spec(
            "initial confidence", ge=0, le=1, surfaces=frozenset({LSP}), default_text="by source"
        ),
    )
    session_id: str | None = attrs.field(
        default=None,
        metadata=spec(
            "the session it was learned in", max_length=200, cli=("--session",), metavar="ID"
        ),
    )
    needs_review: bool = attrs.field(
        default=False, metadata=spec("ask a person to review it", surfaces=frozenset({LSP}))
    )
    extra: dict[str, object] | None = attrs.field(
        default=None,
        metadata=spec("per-type fields (e.g. steps of a recipe)", surfaces=frozenset({LSP})),
    )
    supersedes: str | None = attrs.field(
        default=None,
        metadata=spec(
            "id of a memory this one corrects (kept in extra.supersedes; never merged into it)",
            max_length=100,
            memory_id=True,
            surfaces=frozenset({LSP}),
        ),
    )
    observed_by: ObservedBy | None = attrs.field(
        default=None,
        metadata=spec(
            "set by a front end recording a tool's result for an agent: the memory is the "
            "tool's (source mcp_auto, confidence at most 0.6, in review); it only ever "
            "lowers trust",
            surfaces=HUB_SURFACES,
        ),
    )
    tool: str | None = attrs.field(
        default=None,
        metadata=spec(
            "with observed_by: the tool whose result taught it (server/tool)",
            max_length=300,
            surfaces=HUB_SURFACES,
        ),
    )
    tool_arguments: list[str] = attrs.field(
        factory=list,
        metadata=spec(
            "with observed_by: the names of the arguments the tool was called with",
            max_length=MAX_TOOL_ARGUMENTS,
            surfaces=HUB_SURFACES,
        ),
    )
    cause: str = attrs.field(default="", metadata=CAUSE)
    actor: str = attrs.field(default="", metadata=ACTOR)


def observed(a: RememberArgs) -> RememberArgs:
    """The one rule for a memory a front end records from a tool's result (the MCP hub of
    the MCP server and of the language server alike; docs/trust.md, docs/mcp-hub.md "Tool
    results as memories"): its source is ``mcp_auto`` whatever was asked, its confidence
    at most that source's creation cap, it waits in review, and the audit cause names the
    hub (and the surface that carried it). ``observed_by`` can only lower trust: no
    combination with it starts a memory higher than an agent's own would."""
    from engram.lifecycle.trust import CREATION_CAP

    if a.observed_by is None:
        if a.tool is not None or a.tool_arguments:
            raise InvalidInput("tool and tool_arguments describe a tool's result: set observed_by")
        return a
    source = MemorySource.MCP_AUTO
    cap = CREATION_CAP[source]
    confidence = min(a.confidence, cap) if a.confidence is not None else None
    extra: dict[str, object] = dict(a.extra or {})
    extra["observed_by"] = a.observed_by.value
    if a.tool is not None:
        extra["mcp_tool"] = a.tool
    if a.tool_arguments:
        extra["argument_names"] = sorted(set(a.tool_arguments))
    what = f"result of {a.tool}" if a.tool else "a tool result"
    via = f" via {a.cause}" if a.cause else ""
    return attrs.evolve(
        a,
        source=source,
        confidence=confidence,
        needs_review=True,
        extra=extra,
        cause=f"mcp hub: {what}{via}",
    )


def _remember(engine: Engine, a: RememberArgs) -> RememberResult:
    from engram.app.remember import remember

    a = observed(a)
    extra = dict(a.extra or {})
    if a.supersedes:
        extra["supersedes"] = a.supersedes
    who = actor_of(a.actor)
    source = a.source
    if is_agent(who) and source is MemorySource.USER_TAUGHT:
        source = MemorySource.AGENT_EXPLICIT  # an agent cannot say it is a person
    return remember(
        engine,
        a.text,
        type=a.type,
        source=source,
        file=a.file,
        symbol=a.symbol,
        start_line=a.start_line,
        end_line=a.end_line,
        allow_missing=a.allow_missing,
        tags=a.tags,
        related_files=a.related_files,
        scope=a.scope,
        confidence=a.confidence,
        session_id=a.session_id,
        needs_review=a.needs_review,
        extra=extra or None,
        actor=who,
        cause=a.cause,
    )


def _remember_json(result: RememberResult) -> JsonObject:
    """The result with the memory's record once (its citation is the record's)."""
    out: JsonObject = {k: v for k, v in result.to_dict().items() if k != "citation"}
    out["memory"] = memory_json(result.memory)
    return out


def _remember_notes(result: RememberResult) -> list[str]:
    notes: list[str] = []
    if result.redactions:
        from engram.redaction import describe_redactions

        notes.append(f"redacted {describe_redactions(result.redactions)} (rotate any real secret)")
    if result.merged:
        notes.append(
            f"merged into existing memory {result.memory.id} ({result.duplicate_reason}); "
            f"confidence now {result.memory.confidence:.2f}"
        )
    for conflict in result.conflicts:
        notes.append(
            f"contradicts {conflict}; both kept and linked, this one is marked for review "
            "(confirm the one that holds, flag the other)"
        )
    return notes


REMEMBER: UseCase[RememberArgs, RememberResult] = UseCase(
    name="remember",
    returns=(
        '`{"id", "merged", "redactions", "conflicts", "memory": Memory}` '
        "(`conflicts`: existing memories this one contradicts; both are kept, linked, and "
        "this one goes to review)"
    ),
    summary="store a memory (prints its id, or the id it merged into)",
    args=RememberArgs,
    run=_remember,
    to_json=_remember_json,
    to_text=lambda r: r.memory.id,
    notes=_remember_notes,
    guidance=(
        "Record something a future session should know: a gotcha (a trap in the code), a "
        "decision and its reason, a dead_end (an approach that failed and why), an "
        "error_pattern (an error and its fix), a pattern, a preference or a workflow_recipe. "
        "Anchor it to the file (and symbol or line) where it matters. Secrets are redacted; "
        "a near-duplicate is merged into the existing memory. What you record waits in "
        "review (shown marked unverified, confidence at most 0.7) until a person confirms it."
    ),
    fixed={
        CLI: {"cause": "engram remember"},
        LSP: {"cause": "lsp executeCommand"},
        MCP: {"source": MemorySource.AGENT_EXPLICIT, "cause": "mcp tool", "actor": MCP_ACTOR},
    },
    spellings=(LINE,),
    touched=lambda r: [r.memory],
    learned=lambda r: [r.memory.id],
)


# --------------------------------------------------------------------------- search


@attrs.frozen
class SearchArgs:
    query: str = attrs.field(
        metadata=spec(
            "what you want to know, in words or identifiers", positional=True, metavar="QUERY"
        )
    )
    k: int = attrs.field(
        default=10,
        metadata=spec("how many results", ge=1, le=MAX_K, cli=("--k", "-k"), metavar="N"),
    )
    phase: UniversalPhase | None = attrs.field(
        default=None, metadata=spec("your current work phase", metavar="P")
    )
    file: str | None = attrs.field(
        default=None,
        metadata=spec("prefer memories near this file", path=True, cli=("--file", "-f")),
    )
    types: list[MemoryType] | None = attrs.field(
        default=None,
        metadata=spec(
            "only these memory types",
            aliases=("type",),
            one_or_many=True,
            cli=("--type", "-t"),
            metavar="T",
            default_text="all",
        ),
    )
    code: bool = attrs.field(default=False, metadata=spec("search code chunks instead of memories"))


@attrs.frozen
class SearchResult:
    query: str
    hits: list[SearchHit] = attrs.field(factory=list)
    code_hits: list[CodeHit] | None = None


def _search(engine: Engine, a: SearchArgs) -> SearchResult:
    from engram.app import recall

    if a.code:
        return SearchResult(a.query, code_hits=recall.search_code(engine, a.query, k=a.k))
    hits = recall.search(engine, a.query, k=a.k, phase=a.phase, file=a.file, types=a.types)
    return SearchResult(a.query, hits)


#: the longest query a search answer repeats whole; an agent may paste a whole file as its
#: query (up to ``MAX_TEXT_CHARS``), and over MCP the echo made a 100k-character query's
#: answer 103k characters, past what an agent's tool output may hold (stop 28's walk)
ECHOED_QUERY_CHARS = 500


def echoed_query(query: str) -> str:
    """The query as an answer repeats it: whole up to :data:`ECHOED_QUERY_CHARS`, then cut
    with its length said, so the caller still sees which query this answers."""
    if len(query) <= ECHOED_QUERY_CHARS:
        return query
    return f"{query[:ECHOED_QUERY_CHARS]}… ({len(query):,} characters)"


def _search_json(result: SearchResult) -> JsonObject:
    query = echoed_query(result.query)
    if result.code_hits is not None:
        return {"query": query, "hits": [to_jsonable(h) for h in result.code_hits]}
    return {"query": query, "hits": [render.hit_json(h) for h in result.hits]}


def _search_text(result: SearchResult) -> str:
    if result.code_hits is not None:
        return render.code_hits_text(result.code_hits)
    return render.hits_text(result.hits)


def _search_notes(result: SearchResult) -> list[str]:
    if result.code_hits is not None:
        return [] if result.code_hits else ["no code matches"]
    return [] if result.hits else ["no memories match"]


SEARCH: UseCase[SearchArgs, SearchResult] = UseCase(
    name="search",
    returns=(
        '`{"query", "hits": [{"id", "score", "reasons", …Memory, "stale", "conflict"}]}`: '
        "each hit is the memory's record with its score (`conflict`, the mark, when it "
        "contradicts another hit); with `code`: code chunks"
    ),
    summary="hybrid search over memories (keywords + embeddings + code graph), or code",
    args=SearchArgs,
    run=_search,
    to_json=_search_json,
    to_text=_search_text,
    notes=_search_notes,
    guidance=(
        "Use it when you wonder whether something was learned before: why code is the way "
        "it is, an error you hit, an approach to avoid. Returns memories best first with a "
        "citation id; stale ones are marked."
    ),
    shown=lambda r: [h.memory.id for h in r.hits],
)


# --------------------------------------------------------------------------- context


@attrs.frozen
class ContextArgs:
    file: str | None = attrs.field(
        default=None,
        metadata=spec(
            "the file you are about to read or edit", path=True, positional=True, metavar="FILE"
        ),
    )
    query: str | None = attrs.field(
        default=None,
        metadata=spec(
            "a task or question instead of (or with) a file",
            aliases=("task",),
            cli=("--query", "-q"),
            metavar="TEXT",
        ),
    )
    symbol: str | None = attrs.field(
        default=None,
        metadata=spec(
            "focus on this function or class in the file",
            max_length=500,
            cli=("--symbol", "-s"),
            metavar="NAME",
        ),
    )
    phase: UniversalPhase | None = attrs.field(
        default=None, metadata=spec("your current work phase", metavar="P")
    )
    budget_tokens: int | None = attrs.field(
        default=None,
        metadata=spec(
            "token budget of the pack",
            ge=1,
            le=MAX_BUDGET,
            aliases=("budget",),
            cli=("--budget",),
            metavar="TOKENS",
            default_text="retrieval.default_budget_tokens (2000)",
        ),
    )
    #: who delivers the pack: its renderer makes the text the budget is counted on
    #: (``engram.retrieval.Surface``, docs/retrieval.md "Context packs")
    deliver_to: str = attrs.field(
        default="text", metadata=spec("the renderer of the pack", surfaces=HIDDEN)
    )


def _context_check(engine: Engine, a: ContextArgs, surface: Surface) -> ContextArgs:
    if not a.file and not (a.query and a.query.strip()):
        raise InvalidInput(
            "give a FILE or --query TEXT" if surface is CLI else "give a file or a query"
        )
    # an editor may ask about a buffer not saved yet; a person or an agent naming a file
    # that is not there gets the same one line (issue 16)
    if surface in (CLI, MCP) and a.file and not engine.workspace.resolve(a.file).exists():
        raise InvalidInput(f"{a.file} does not exist in {engine.workspace.root}")
    if surface in (CLI, MCP) and a.symbol:
        # named like an anchor or impact's symbol (docs/trust.md "Anchors"): a misspelt one
        # was taken silently and the pack was the file's, as if the focus had worked
        from engram.app.anchors import resolve_symbol

        if not a.file:
            raise InvalidInput("--symbol needs a FILE" if surface is CLI else "symbol needs a file")
        found = resolve_symbol(engine, engine.relative(a.file), a.symbol)
        if found is not None:
            a = attrs.evolve(a, symbol=found.qualname)
    return a


def _context(engine: Engine, a: ContextArgs) -> ContextPack:
    from engram.app.recall import context
    from engram.retrieval import Surface as Delivery

    pack = context(
        engine,
        file=a.file,
        symbol=a.symbol,
        query=a.query,
        phase=a.phase,
        budget_tokens=a.budget_tokens,
        surface=Delivery(a.deliver_to),
    )
    if not pack.text.strip():
        unread = _unread_team_folder(engine)
        if unread:
            pack.notes.append(unread)
    return pack


def _unread_team_folder(engine: Engine) -> str | None:
    """The team folder's memories when this store never read it (a teammate's fresh clone:
    `engram context` said "no memories yet" beside them; the editors and the MCP server read
    it at start, the CLI on `engram sync` or `engram index`)."""
    from engram.app.state import EngineState
    from engram.app.team import team_folder

    try:
        folder, label = team_folder(engine)
        if EngineState.of(engine.workspace).get("team_files") is not None or not folder.is_dir():
            return None
        count = sum(1 for p in folder.glob("*.json") if p.is_file())
    except (InvalidInput, OSError):
        return None
    if not count:
        return None
    return f"{label}/ holds {count} shared memor{'y' if count == 1 else 'ies'}{UNREAD_TEAM}"


#: The end of the note an empty context gives in a store that never read its team folder.
UNREAD_TEAM = " not read in yet: `engram sync` reads them"


def _empty_context_notes(pack: ContextPack) -> list[str]:
    unread = [n for n in pack.notes if n.endswith(UNREAD_TEAM)]
    return unread or [
        "no memories yet for this; teach one with 'engram remember --file PATH \"...\"'"
    ]


def _context_json(pack: ContextPack) -> JsonObject:
    return to_json_object(pack)


CONTEXT: UseCase[ContextArgs, ContextPack] = UseCase(
    name="context",
    returns=(
        '`{"tokens", "budget_tokens", "text", "items": [{"id", "type", "tier", "level", '
        '"text", "tokens", "score", "citation", …}], "notes"}`'
    ),
    summary="the token-budgeted memory context for a file, a symbol or a task",
    args=ContextArgs,
    run=_context,
    to_json=_context_json,
    to_text=lambda pack: pack.text.rstrip("\n") if pack.text.strip() else "",
    notes=lambda pack: [] if pack.text.strip() else _empty_context_notes(pack),
    prepare=_context_check,
    guidance=(
        "Get the memories that matter for a file you are about to read or edit (gotchas, "
        "dead ends, decisions, error patterns anchored there, plus related knowledge), or "
        "for a task description, packed into a token budget. Call this before editing a file. "
        "Returns Markdown (Critical first, each memory with its [Memory ID] citation) and a "
        "last line 'ids: …' of the memories shown; the whole text fits budget_tokens."
    ),
    fixed={MCP: {"deliver_to": "mcp"}},
    mcp_text=True,
    shown=lambda pack: [item.memory.id for item in pack.items],
)


# --------------------------------------------------------------------------- lists


@attrs.frozen
class ListArgs:
    type: list[MemoryType] | None = attrs.field(
        default=None,
        metadata=spec(
            "only these types",
            one_or_many=True,
            cli=("--type", "-t"),
            metavar="T",
            default_text="all",
        ),
    )
    source: list[MemorySource] | None = attrs.field(
        default=None,
        metadata=spec("only these sources", one_or_many=True, metavar="S", default_text="all"),
    )
    file: str | None = attrs.field(
        default=None,
        metadata=spec("only memories about this file", path=True, cli=("--file", "-f")),
    )
    needs_review: bool | None = attrs.field(
        default=None,
        metadata=spec("only those that need review (true) or not (false)", cli=("--review",)),
    )
    include_deprecated: bool = attrs.field(
        default=False, metadata=spec("include deprecated memories", cli=("--all",))
    )
    limit: int | None = attrs.field(
        default=None,
        metadata=spec("at most this many", ge=1, le=10_000, metavar="N", default_text="all"),
    )


@attrs.frozen
class MemoryList:
    memories: list[Memory]
    #: the last observer session's card, for a review list
    session: JsonObject | None = None
    reviewing: bool = False


def _list(engine: Engine, a: ListArgs) -> MemoryList:
    from engram.app.memories import list_memories

    memories = list_memories(
        engine,
        type=a.type,
        source=a.source,
        file=a.file,
        needs_review=a.needs_review,
        include_deprecated=a.include_deprecated,
        limit=a.limit,
    )
    if not a.needs_review:
        return MemoryList(memories)
    return MemoryList(memories, _last_session(engine), reviewing=True)


def _last_session(engine: Engine) -> JsonObject | None:
    """The last finished observer session's card (docs/observer.md), if any."""
    from engram.app.observe import session_summary
    from engram.errors import EngramError

    try:
        summary = session_summary(engine)
    except EngramError:
        return None
    if not summary.get("found"):
        return None
    data = to_jsonable(summary)
    return dict(data) if isinstance(data, dict) else None


def _list_json(result: MemoryList) -> JsonObject:
    out: JsonObject = {
        "count": len(result.memories),
        "memories": [memory_json(m) for m in result.memories],
    }
    if result.reviewing:
        out["session"] = result.session
    return out


def _list_text(result: MemoryList) -> str:
    lines = []
    session = result.session
    if session is not None and session.get("text"):
        lines.append(f"Last session ({session.get('session_id')}): {session['text']}")
    table = render.memory_table(result.memories)
    if table:
        lines.append(table)
    return "\n".join(lines)


LIST: UseCase[ListArgs, MemoryList] = UseCase(
    name="list",
    returns=(
        '`{"count", "memories": [Memory]}` (with `needs_review`: also `"session"`, the '
        "last observer session's card)"
    ),
    summary="list memories by type, source, file or review state",
    args=ListArgs,
    run=_list,
    to_json=_list_json,
    to_text=_list_text,
    notes=lambda r: [] if r.memories else ["no memories match"],
    surfaces=EDITOR,
)


@attrs.frozen
class ReviewArgs:
    limit: int = attrs.field(
        default=20, metadata=spec("at most this many", ge=1, le=1000, metavar="N")
    )


def _review(engine: Engine, a: ReviewArgs) -> MemoryList:
    from engram.app.memories import list_memories

    return MemoryList(list_memories(engine, needs_review=True, limit=a.limit))


REVIEW: UseCase[ReviewArgs, MemoryList] = UseCase(
    name="review",
    returns='`{"count", "memories": [Memory]}`',
    summary="the memories waiting for a person's review",
    args=ReviewArgs,
    run=_review,
    to_json=_list_json,
    to_text=_list_text,
    notes=lambda r: [] if r.memories else ["nothing waits for review"],
    guidance=(
        "Memories inferred by the observer or taught by an agent and not yet confirmed. "
        "Confirm the ones that are right, flag the wrong ones."
    ),
    folder_arg=None,
)


@attrs.frozen
class RecipesArgs:
    task: str = attrs.field(
        metadata=spec(
            "the task you are about to do", aliases=("query",), positional=True, metavar="TASK"
        )
    )
    k: int = attrs.field(
        default=3, metadata=spec("how many recipes", ge=1, le=20, cli=("--k", "-k"), metavar="N")
    )


def _recipes(engine: Engine, a: RecipesArgs) -> list[SearchHit]:
    from engram.app.recall import search

    return search(engine, a.task, k=a.k, types=[MemoryType.WORKFLOW_RECIPE])


def _recipes_json(hits: list[SearchHit]) -> JsonObject:
    return {"recipes": [_recipe_json(h) for h in hits]}


def _recipe_json(hit: SearchHit) -> JsonObject:
    """A recipe's hit with its steps at the top, once: they were also under ``extra``."""
    out = render.hit_json(hit)
    extra = out.get("extra")
    if isinstance(extra, dict):
        out["extra"] = {k: v for k, v in extra.items() if k != "steps"}
    out["steps"] = to_jsonable(hit.memory.extra.get("steps", []))
    return out


RECIPES: UseCase[RecipesArgs, list[SearchHit]] = UseCase(
    name="recipes",
    returns=(
        '`{"recipes": [hit + {"steps": [{"order", "description", "canonical_file"}]}]}` '
        "(the steps once, not also under `extra`)"
    ),
    summary="step-by-step recipes that worked here before for a kind of task",
    args=RecipesArgs,
    run=_recipes,
    to_json=_recipes_json,
    to_text=render.hits_text,
    notes=lambda hits: [] if hits else ["no recipe matches"],
    guidance="For example 'add a CLI command'; each step names its canonical file.",
    shown=lambda hits: [h.memory.id for h in hits],
    folder_arg=None,
)


USE_CASES: tuple[UseCase[object, object], ...] = (  # type: ignore[assignment]
    REMEMBER,
    SEARCH,
    CONTEXT,
    LIST,
    REVIEW,
    RECIPES,
)

__all__ = ["ALL_SURFACES", "USE_CASES", "line_range"]
