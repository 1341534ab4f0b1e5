"""``engram mcp-serve``: Engram's memory as MCP tools, for agents that do not speak LSP commands.

Agents (Claude Code, Codex, OpenCode, Crush, Copilot CLI) call MCP tools; none of them
calls ``workspace/executeCommand``. Every tool here goes through the same
:mod:`engram.app` use cases as the LSP commands, so validation (unknown types,
empty text, secrets redacted) and workspace confinement (no path outside the workspace is
read or written) are the same. Descriptions are written for a model: when to call the
tool, what comes back, and how to cite a memory.

The engine is opened on the first tool call, not at start, so the MCP handshake is fast;
engine calls run in a worker thread so a slow search never stalls the stdio loop.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from mcp_types import CallToolResult, TextContent
from pydantic import Field

from engram.errors import EngramError
from engram.lifecycle.trust import Actor
from engram.marks import conflict_markers
from engram.model import Memory, shared_by_text, team_origin, to_jsonable
from engram.quoting import quote_shared
from engram.workspace import Workspace

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

log = logging.getLogger(__name__)

T = TypeVar("T")

MemoryTypeName = Literal[
    "gotcha",
    "decision",
    "preference",
    "pattern",
    "requirement",
    "error_pattern",
    "module_insight",
    "dead_end",
    "workflow_recipe",
    "e2e_observation",
    "work_state",
    "causal_dependency",
    "prefetch_pattern",
    "task_calibration",
    "work_unit_outcome",
    "context_cost",
]
PhaseName = Literal["define", "implement", "validate", "refine", "explore", "reflect"]
CorrectionName = Literal["incorrect", "outdated", "wrong_scope", "not_useful"]

INSTRUCTIONS = (
    "Engram remembers what was learned in this repository: gotchas, decisions, dead ends, "
    "error patterns and recipes, anchored to files and symbols. Before editing a file, call "
    "engram_context with the file to get what bites there. When you learn something a future "
    "session should know (a trap, a decision and its reason, an approach that failed), call "
    "engram_remember. Cite memories you relied on by their id, e.g. [Memory m-3f2a9c1e7b], and "
    "flag any that turned out wrong with engram_flag. To find a tool from the user's other MCP "
    "servers without loading them all, call engram_find_tools, then engram_call_tool."
)


def _memory_brief(memory: Memory) -> dict[str, Any]:
    """What a model needs of a memory: no embedding internals, no bookkeeping."""
    anchor = memory.anchors[0] if memory.anchors else None
    origin = team_origin(memory)
    content = memory.content
    if origin is not None:  # a teammate's words reach the model as quoted data (security.md)
        content = quote_shared(
            memory.content, origin.get("by") or "the team", origin.get("file"),
            reviewed=memory.user_verified,
        )  # fmt: skip
    return {
        "id": memory.id,
        "type": memory.type.value,
        "content": content,
        "shared_by": shared_by_text(memory),
        "confidence": round(memory.current_confidence(), 3),
        "source": memory.source.value,
        "file": anchor.file
        if anchor
        else (memory.related_files[0] if memory.related_files else None),
        "line": (anchor.start_line + 1) if anchor and anchor.start_line is not None else None,
        "symbol": anchor.symbol if anchor else None,
        "needs_review": memory.needs_review,
        "stale": memory.stale_at is not None,
        "citation": memory.citation(),
    }


#: Who an MCP client is: a coding agent, never a person (docs/trust.md "Agents are not
#: people"): its remember waits in review, its confirm is only recorded.
_AGENT = Actor.agent("mcp")
_CAUSE = "mcp tool"


def _conflicts(conflicts: list[tuple[str, str]]) -> dict[str, Any]:
    """A result's conflict partners (shown next to it by the retriever), marked."""
    if not conflicts:
        return {}
    return {
        "conflict": conflict_markers(conflicts),
        "conflicts_with": [{"id": cid, "content": text} for cid, text in conflicts],
    }


class EngineHolder:
    """Opens the engine once, on first use, from whichever thread asks first."""

    def __init__(self, workspace: str | None, overrides: dict[str, Any] | None = None) -> None:
        self._workspace = workspace
        self._overrides = overrides
        self._engine: Any | None = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    from engram.app import Engine

                    self._engine = Engine.open(self._workspace, self._overrides)
        return self._engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()


def build_server(workspace: str | None = None, overrides: dict[str, Any] | None = None) -> Any:
    """The MCP server with Engram's tools; ``workspace`` defaults to the enclosing git root."""
    import anyio
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from engram import __version__

    holder = EngineHolder(workspace, overrides)
    hubs = HubHolder()

    @contextlib.asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await hubs.close()
            holder.close()

    server = MCPServer("engram", instructions=INSTRUCTIONS, version=__version__, lifespan=lifespan)
    from engram.app import impact as impact_uc
    from engram.app import memories, observe, recall
    from engram.app.remember import remember

    async def call(fn: Callable[[Any], T]) -> T:
        def run() -> T:
            return fn(holder.get())

        try:
            return await anyio.to_thread.run_sync(run)
        except EngramError as exc:
            raise ToolError(str(exc)) from exc
        except (ValueError, OSError) as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    @server.tool(
        name="engram_search",
        description=(
            "Search what Engram remembers about this repository (hybrid keyword + semantic + "
            "code-graph search). Use it when you wonder whether something was learned before: "
            "why code is the way it is, an error you hit, an approach to avoid. Returns memories "
            "best first with a citation id; stale ones are marked."
        ),
    )
    async def engram_search(
        query: Annotated[str, Field(description="What you want to know, in words or identifiers")],
        k: Annotated[int, Field(ge=1, le=50, description="How many results")] = 10,
        file: Annotated[str | None, Field(description="Prefer memories near this file")] = None,
        phase: Annotated[PhaseName | None, Field(description="Your current work phase")] = None,
    ) -> dict[str, Any]:
        hits = await call(lambda e: recall.search(e, query, k=k, file=file, phase=phase))
        return {
            "results": [
                {
                    **_memory_brief(h.memory),
                    "score": round(float(h.score), 4),
                    "stale": h.stale,
                    **_conflicts(h.conflicts),
                }
                for h in hits
            ]
        }

    @server.tool(
        name="engram_context",
        description=(
            "Get the memories that matter for a file you are about to read or edit (gotchas, "
            "dead ends, decisions, error patterns anchored there, plus related knowledge), or for "
            "a task description, packed into a token budget. Call this before editing a file. "
            "Returns Markdown (Critical first, each memory with its [Memory ID] citation) and a "
            "last line 'ids: …' of the memories shown; the whole text fits budget_tokens."
        ),
    )
    async def engram_context(
        file: Annotated[
            str | None, Field(description="Workspace-relative or absolute path")
        ] = None,
        query: Annotated[
            str | None, Field(description="A task description instead of a file")
        ] = None,
        symbol: Annotated[str | None, Field(description="A function or class in the file")] = None,
        phase: Annotated[PhaseName | None, Field(description="Your current work phase")] = None,
        budget_tokens: Annotated[int, Field(ge=50, le=20000, description="Token budget")] = 1500,
    ) -> CallToolResult:
        if not file and not query:
            raise ToolError("give a file or a query")
        from engram.retrieval import Surface

        pack = await call(
            lambda e: recall.context(
                e,
                file=file,
                symbol=symbol,
                query=query,
                phase=phase,
                budget_tokens=budget_tokens,
                surface=Surface.MCP,
            )
        )
        # the pack's text is the whole result: no JSON around it, no structured copy
        # (docs/retrieval.md "Context packs": the budget is counted on what is delivered)
        text = pack.text or f"No memory matched {file or query!r}.\n"
        return CallToolResult(content=[TextContent(type="text", text=text)])

    @server.tool(
        name="engram_remember",
        description=(
            "Record something a future session should know: a gotcha (a trap in the code), a "
            "decision and its reason, a dead_end (an approach that failed and why), an "
            "error_pattern (an error and its fix), a pattern, a preference or a workflow_recipe. "
            "Anchor it to the file (and symbol or line) where it matters. Secrets are redacted; "
            "a near-duplicate is merged into the existing memory. What you record waits in "
            "review (shown marked unverified, confidence at most 0.7) until a person confirms "
            "it. Returns the memory id."
        ),
    )
    async def engram_remember(
        text: Annotated[
            str, Field(min_length=1, max_length=8000, description="One or two sentences")
        ],
        type: Annotated[MemoryTypeName, Field(description="Kind of memory")] = "gotcha",
        file: Annotated[str | None, Field(description="File it is about")] = None,
        symbol: Annotated[str | None, Field(description="Function/class it is about")] = None,
        line: Annotated[int | None, Field(ge=1, description="1-based line it is about")] = None,
        tags: Annotated[list[str] | None, Field(description="Free tags")] = None,
        session_id: Annotated[str | None, Field(description="Your session id, if known")] = None,
        allow_missing: Annotated[
            bool, Field(description="The file does not exist yet: you are about to create it")
        ] = False,
    ) -> dict[str, Any]:
        result = await call(
            lambda e: remember(
                e,
                text,
                type=type,
                source="agent_explicit",
                file=file,
                symbol=symbol,
                start_line=(line - 1) if line else None,
                allow_missing=allow_missing,
                tags=tags or (),
                session_id=session_id,
            )
        )
        out: dict[str, Any] = to_jsonable(result)
        notes: list[str] = []
        if result.redactions:
            notes.append("secrets were redacted before storing: " + ", ".join(result.redactions))
        if result.conflicts:
            notes.append(
                "this contradicts "
                + "; ".join(result.conflicts)
                + ". Both are kept and this one awaits review: check which holds"
            )
        if notes:
            out["note"] = " ".join(notes)
        return out

    @server.tool(
        name="engram_impact",
        description=(
            "What a change to a file (or a symbol in it) will touch: direct and transitive "
            "dependents, files that usually change with it (from git history), tests that "
            "exercise it, and memories attached to those places. Call before a refactor."
        ),
    )
    async def engram_impact(
        file: Annotated[str, Field(description="Workspace-relative or absolute path")],
        symbol: Annotated[str | None, Field(description="A function or class in the file")] = None,
    ) -> dict[str, Any]:
        report = await call(lambda e: impact_uc.impact(e, file, symbol))
        result: dict[str, Any] = to_jsonable(report)
        return result

    @server.tool(
        name="engram_recipes",
        description=(
            "Step-by-step recipes that worked here before for a class of task (e.g. 'add a CLI "
            "command', 'add an API endpoint'), with the canonical file for each step."
        ),
    )
    async def engram_recipes(
        task: Annotated[str, Field(description="The task you are about to do")],
        k: Annotated[int, Field(ge=1, le=20)] = 3,
    ) -> dict[str, Any]:
        hits = await call(lambda e: recall.search(e, task, k=k, types=["workflow_recipe"]))
        return {
            "recipes": [
                {
                    **_memory_brief(h.memory),
                    "steps": h.memory.extra.get("steps", []),
                    **_conflicts(h.conflicts),
                }
                for h in hits
            ]
        }

    @server.tool(
        name="engram_review",
        description=(
            "Memories waiting for review (inferred by the observer or taught by an agent and "
            "not yet confirmed). Confirm the ones that are right, flag the wrong ones."
        ),
    )
    async def engram_review(
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
    ) -> dict[str, Any]:
        found = await call(lambda e: memories.list_memories(e, needs_review=True, limit=limit))
        return {"memories": [_memory_brief(m) for m in found]}

    @server.tool(
        name="engram_confirm",
        description=(
            "Say that a memory (by its id) proved right in your work. Your confirmation is "
            "recorded in the memory's audit trail as an agent's endorsement; it does not "
            "verify the memory or raise its confidence: only a person's confirm does."
        ),
    )
    async def engram_confirm(
        id: Annotated[str, Field(description="Memory id, e.g. m-3f2a9c1e7b")],
    ) -> dict[str, Any]:
        memory = await call(lambda e: memories.confirm(e, id, actor=_AGENT, cause=_CAUSE))
        return {**_memory_brief(memory), "note": "recorded as your endorsement; not verified"}

    @server.tool(
        name="engram_flag",
        description=(
            "Flag a memory (by its id) that is wrong: 'incorrect' (never show it again), "
            "'outdated' (was true once), 'wrong_scope' (true elsewhere, not here), 'not_useful'. "
            "It is hidden from every search, context and hook at once; a person can lift it."
        ),
    )
    async def engram_flag(
        id: Annotated[str, Field(description="Memory id, e.g. m-3f2a9c1e7b")],
        kind: Annotated[CorrectionName, Field(description="What is wrong with it")],
        note: Annotated[str | None, Field(max_length=2000)] = None,
    ) -> dict[str, Any]:
        memory = await call(lambda e: memories.flag(e, id, kind, note, actor=_AGENT, cause=_CAUSE))
        # a flagged memory is never handed to an agent again: not even its text here
        return {"id": memory.id, "flagged": kind, "hidden": True}

    @server.tool(
        name="engram_log",
        description=(
            "The audit trail: who or what changed a memory's state, confidence, text or "
            "anchors, when, and the command or file behind it (oldest first). Without an id, "
            "the newest entries of the whole store. Use it to answer 'who added this?'."
        ),
    )
    async def engram_log(
        id: Annotated[str | None, Field(description="Memory id, e.g. m-3f2a9c1e7b")] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="Most entries")] = 50,
    ) -> dict[str, Any]:
        from engram.app.trust import audit_log

        entries = await call(lambda e: audit_log(e, id, limit))
        return {"id": id, "entries": [to_jsonable(entry) for entry in entries]}

    @server.tool(
        name="engram_observe",
        description=(
            "Report what you just did so Engram can learn from it: a tool call or result (Read, "
            "Edit, Bash with exit code, test run), a commit, or reasoning such as 'that approach "
            "failed because…'. Learned memories are promoted only after tests pass or a commit."
        ),
    )
    async def engram_observe(
        event: Annotated[
            dict[str, Any],
            Field(description="An observer event: {session_id, kind, tool, files, exit_code, …}"),
        ],
    ) -> dict[str, Any]:
        result = await call(lambda e: observe.observe(e, event))
        out: dict[str, Any] = to_jsonable(result) if result is not None else {"ok": True}
        return out if isinstance(out, dict) else {"result": out}

    @server.tool(
        name="engram_session_summary",
        description="What this session used from memory, what it learned, and what needs review.",
    )
    async def engram_session_summary(
        session_id: Annotated[str | None, Field(description="Session id; default: latest")] = None,
    ) -> dict[str, Any]:
        out: dict[str, Any] = to_jsonable(
            await call(lambda e: observe.session_summary(e, session_id))
        )
        return out

    _add_hub_tools(server, hubs, call, ToolError)
    return server


class HubHolder:
    """The lazy MCP hub of this server process, created on first use and closed at exit."""

    def __init__(self) -> None:
        self.hub: Any | None = None

    async def close(self) -> None:
        if self.hub is not None:
            await self.hub.close()
            self.hub = None


def _add_hub_tools(server: MCPServer, hubs: HubHolder, call: Any, tool_error: Any) -> None:
    """The lazy MCP hub: find one of the user's other MCP tools, then call it through Engram."""

    async def hub() -> Any:
        if hubs.hub is None:
            from engram.app.remember import remember
            from engram.mcp.hub import McpHub

            engine = await call(lambda e: e)

            def save_observation(draft: Any) -> object:
                # a notable tool result becomes an e2e_observation waiting for review
                return remember(engine, draft.content, **draft.remember_kwargs())

            hubs.hub = McpHub(engine.workspace, engine.config, memory_sink=save_observation)
        return hubs.hub

    @server.tool(
        name="engram_find_tools",
        description=(
            "Find the few tools, among all MCP servers the user configured, that fit what you "
            "need now (by words and by the file you work on). Returns names and input schemas; "
            "then call one with engram_call_tool. Servers are only started when called."
        ),
    )
    async def engram_find_tools(
        query: Annotated[str, Field(description="What you want to do")],
        file: Annotated[str | None, Field(description="The file you are working on")] = None,
        k: Annotated[int, Field(ge=1, le=50)] = 8,
    ) -> dict[str, Any]:
        h = await hub()
        try:
            found = await h.search(query, file=file, k=k)
            if found.get("notes") and any("not cached" in n for n in found["notes"]):
                # first use: the one-time introspection of trusted servers, then search again
                await h.refresh()
                found = await h.search(query, file=file, k=k)
        except EngramError as exc:
            raise tool_error(str(exc)) from exc
        out: dict[str, Any] = to_jsonable(found)
        return out

    @server.tool(
        name="engram_call_tool",
        description=(
            "Call a tool found with engram_find_tools, by its qualified name 'server/tool', with "
            "arguments matching its input schema. Engram starts the server on demand."
        ),
    )
    async def engram_call_tool(
        tool: Annotated[str, Field(description="Qualified tool name: server/tool")],
        arguments: Annotated[dict[str, Any] | None, Field(description="Tool arguments")] = None,
        file: Annotated[str | None, Field(description="The file you are working on")] = None,
    ) -> dict[str, Any]:
        h = await hub()
        try:
            result = await h.call(tool, arguments or {}, file=file)
        except EngramError as exc:
            raise tool_error(str(exc)) from exc
        out = to_jsonable(result)
        return out if isinstance(out, dict) else {"result": out}


def run_stdio(workspace: str | None = None) -> None:
    """Serve MCP over stdio until the client closes the connection."""
    if workspace is not None:
        Workspace.open(workspace)  # fail fast, with one clear line, on a bad --workspace
    server = build_server(workspace)
    server.run("stdio")
