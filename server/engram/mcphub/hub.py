"""``McpHub``: the one object the LSP, the CLI and the MCP server use for MCP tools.

It ties the parts together: the sparse :class:`~engram.mcphub.registry.Registry` (config files
+ cached schemas + approvals), :class:`~engram.mcp.search.ToolSearch`, the lazy
:class:`~engram.mcphub.pool.ConnectionPool` and the usage counts. Nothing connects until a
tool is called (or the user asks for ``refresh``); a server defined inside the workspace is
never started before the user approved its exact configuration; a server whose config
changed since its tools were cached is not connected until it is refreshed.

All public methods return plain JSON-able dicts, so every front end renders the same data.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from engram.approvals import user_config_dir
from engram.config import EngramConfig, McpConfig
from engram.jsontypes import JsonObject
from engram.mcphub.errors import (
    ConfigChanged,
    InvalidToolArguments,
    McpError,
    ServerNotTrusted,
    ServerUnavailable,
    ToolNotFound,
)
from engram.mcphub.pool import Clock, ConnectionPool, PoolSettings, describe_exception
from engram.mcphub.registry import (
    CachedServer,
    Registry,
    RegistryCache,
    RegistrySnapshot,
    ServerEntry,
    ToolInfo,
)
from engram.mcphub.results import ObservationSink, classify_result
from engram.mcphub.search import Embedder, SearchContext, ToolMemoryHook, ToolSearch, tool_text
from engram.mcphub.sources import UnresolvedVariable
from engram.mcphub.transport import SessionOpener, sdk_opener
from engram.mcphub.trust import ApprovalStore
from engram.mcphub.usage import UsageStore, module_of
from engram.workspace import Workspace, WorkspaceError

if TYPE_CHECKING:
    import numpy as np


log = logging.getLogger(__name__)


def _file_signature(paths: Sequence[Path]) -> tuple[tuple[str, int, int], ...]:
    sig: list[tuple[str, int, int]] = []
    for path in paths:
        try:
            st = path.stat()
            sig.append((str(path), st.st_mtime_ns, st.st_size))
        except OSError:
            sig.append((str(path), 0, -1))
    return tuple(sig)


#: What to do when no configuration names an MCP server (docs/mcp-hub.md): the hub reads the
#: files people's other tools already use (``engram.mcphub.sources``).
NO_SERVERS = (
    "no MCP servers configured. Engram reads the configs your tools already use: "
    ".mcp.json, .vscode/mcp.json or .cursor/mcp.json in the workspace (approve them with "
    "'engram mcp trust NAME'), ~/.config/engram/mcp.json, ~/.claude.json or "
    "~/.cursor/mcp.json in your home. Add one, e.g. "
    '{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}} '
    "in ~/.config/engram/mcp.json, then run 'engram mcp refresh'."
)


class McpHub:
    """Lazy MCP tool hub for one workspace (see module docstring)."""

    def __init__(
        self,
        workspace: Workspace,
        config: EngramConfig | McpConfig | None = None,
        *,
        home: Path | None = None,
        environ: Mapping[str, str] | None = None,
        approvals: ApprovalStore | None = None,
        opener: SessionOpener | None = None,
        clock: Clock = time.monotonic,
        embedder: Embedder | None = None,
        memory_hook: ToolMemoryHook | None = None,
        memory_sink: ObservationSink | None = None,
        grace_seconds: float = 5.0,
        sweep_interval_seconds: float = 30.0,
    ) -> None:
        mcp_config = config.mcp if isinstance(config, EngramConfig) else config or McpConfig()
        self.workspace = workspace
        self.config = mcp_config
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.home = home or Path(self.environ.get("HOME") or Path.home())
        self.mcp_dir = workspace.engram_dir / "mcp"
        self.approvals = approvals or ApprovalStore(user_config_dir(self.environ, self.home))
        self.registry = Registry(
            workspace.root,
            RegistryCache(self.mcp_dir / "registry.json"),
            self.approvals,
            home=self.home,
            environ=self.environ,
        )
        self._opener = opener or sdk_opener(
            workspace_root=workspace.root,
            home=self.home,
            environ=self.environ,
            log_dir=self.mcp_dir / "logs",
        )
        self.pool = ConnectionPool(
            self._opener,
            PoolSettings(
                max_connections=mcp_config.max_connections,
                idle_ttl_seconds=mcp_config.idle_ttl_seconds,
                connect_timeout_seconds=mcp_config.connect_timeout_seconds,
                call_timeout_seconds=mcp_config.call_timeout_seconds,
                grace_seconds=grace_seconds,
                sweep_interval_seconds=sweep_interval_seconds,
            ),
            clock=clock,
        )
        self._embedder = embedder
        self._memory_hook = memory_hook
        self._memory_sink = memory_sink
        self._usage: UsageStore | None = None
        self._snapshot: RegistrySnapshot | None = None
        self._signature: tuple[tuple[str, int, int], ...] | None = None
        self._search: ToolSearch | None = None

    # ------------------------------------------------------------------ registry

    def _watched_files(self) -> list[Path]:
        from engram.mcphub.sources import config_files

        files = [
            c.path for c in config_files(self.workspace.root, home=self.home, environ=self.environ)
        ]
        return [*files, self.registry.cache.path, self.approvals.path]

    def snapshot(self) -> RegistrySnapshot:
        """The registry, re-read only when a config, cache or approval file changed."""
        signature = _file_signature(self._watched_files())
        if self._snapshot is None or signature != self._signature:
            self._snapshot = self.registry.load()
            self._signature = signature
            self._search = None
        return self._snapshot

    def usage(self) -> UsageStore:
        if self._usage is None:
            self.workspace.ensure_engram_dir()
            self.mcp_dir.mkdir(parents=True, exist_ok=True)
            self._usage = UsageStore(str(self.mcp_dir / "usage.sqlite"))
        return self._usage

    def tool_search(self) -> ToolSearch:
        snapshot = self.snapshot()
        if self._search is None:
            usage = self.usage()
            self._search = ToolSearch(
                snapshot.tools,
                popularity=usage.popularity(),
                module_usage=usage.for_module,
                memory_hook=self._memory_hook,
                embedder=self._embedder,
                vectors=self._tool_vectors(snapshot.tools),
            )
        return self._search

    def _tool_vectors(self, tools: Sequence[ToolInfo]) -> np.ndarray | None:
        """Tool embeddings, cached by text hash in ``.engram/mcp/tool_vectors.npz``."""
        if self._embedder is None or not tools:
            return None
        import numpy as np

        path = self.mcp_dir / "tool_vectors.npz"
        model = self._embedder.model_id
        keys = [hashlib.sha256(f"{model}\0{tool_text(t)}".encode()).hexdigest()[:32] for t in tools]
        cached: dict[str, np.ndarray] = {}
        try:
            with np.load(path) as data:
                cached = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
        except (OSError, KeyError, ValueError):
            pass
        missing = [i for i, key in enumerate(keys) if key not in cached]
        if missing:
            try:
                fresh = self._embedder.embed([tool_text(tools[i]) for i in missing])
            except Exception as exc:
                log.warning("tool embeddings unavailable (%s); searching without them", exc)
                return None
            for i, vector in zip(missing, fresh, strict=True):
                cached[keys[i]] = np.asarray(vector, dtype=np.float32)
            try:
                self.mcp_dir.mkdir(parents=True, exist_ok=True)
                np.savez(path, keys=np.array(keys), vectors=np.stack([cached[k] for k in keys]))
            except OSError as exc:
                log.warning("could not cache tool embeddings: %s", exc)
        return np.stack([cached[k] for k in keys]).astype(np.float32)

    # ------------------------------------------------------------------ use cases

    async def list(self, server: str | None = None, *, with_schema: bool = False) -> JsonObject:
        """Every known tool (optionally of one server) and every server's state."""
        snapshot = self.snapshot()
        if server is not None and server not in snapshot.servers:
            raise ToolNotFound(self._unknown_server(server, snapshot))
        tools = [t for t in snapshot.tools if server is None or t.server == server]
        data = [t.to_dict() for t in tools]
        if not with_schema:
            for item in data:
                item.pop("input_schema", None)
        return {
            "tools": data,
            "servers": [e.to_status() for e in snapshot.servers.values()],
            "notes": self._notes(snapshot),
        }

    def search_sync(
        self,
        query: str,
        *,
        file: str | None = None,
        module: str | None = None,
        phase: str | None = None,
        k: int | None = None,
        with_schema: bool = True,
    ) -> JsonObject:
        """Synchronous :meth:`search` (it never does I/O beyond the small registry files)."""
        rel = self._relative(file)
        limit = self.config.search_limit if k is None else k
        if limit < 0:
            raise InvalidToolArguments("k must be a positive number")
        context = SearchContext(file=rel, module=module, phase=phase)
        searcher = self.tool_search()
        hits = searcher.search(query, context=context, k=limit)
        snapshot = self.snapshot()
        return {
            "query": query,
            "total_tools": len(searcher),
            "tools": [h.to_dict(with_schema=with_schema) for h in hits],
            "notes": self._notes(snapshot),
        }

    async def search(
        self,
        query: str,
        *,
        file: str | None = None,
        module: str | None = None,
        phase: str | None = None,
        k: int | None = None,
        with_schema: bool = True,
    ) -> JsonObject:
        """The focused list: best ``k`` (default ``mcp.search_limit``) tools with schemas."""
        return self.search_sync(
            query, file=file, module=module, phase=phase, k=k, with_schema=with_schema
        )

    def suggest_tools(
        self, file: str | None, selection_text: str | None, k: int = 3
    ) -> builtins.list[JsonObject]:
        """Best tools for a selection in a file, for the LSP's code actions (no schemas)."""
        rel = self._relative(file)
        context = SearchContext(file=rel, selection=None)
        query = " ".join((selection_text or "").split())[:300]
        hits = self.tool_search().search(query, context=context, k=k)
        return [h.to_dict(with_schema=False) for h in hits if h.score > 0.05]

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, object] | None = None,
        *,
        file: str | None = None,
        timeout: float | None = None,
        memory_sink: ObservationSink | None = None,
    ) -> JsonObject:
        """Call one tool (connecting its server lazily); returns the ``CallToolResult`` dict.

        A notable result (an error, a precondition, a timing issue) is handed as an
        :class:`~engram.mcphub.results.ObservationDraft` to ``memory_sink`` (default: the
        hub's), and ``result["observation"]`` names its kind.
        """
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise InvalidToolArguments("tool arguments must be a JSON object")
        snapshot = self.snapshot()
        info = snapshot.resolve_tool(tool)
        entry = self._entry_for(tool, info, snapshot)
        self._check_callable(entry)
        if info is None:
            raise ToolNotFound(
                f"MCP server {entry.spec.name} has no tool {tool!r}; "
                f"see `engram mcp list` for its {len(entry.tools)} tools"
            )
        rel = self._relative(file)
        try:
            result = await self.pool.call_tool(entry.spec, info.name, dict(arguments), timeout)
        except UnresolvedVariable as exc:
            raise ServerUnavailable(f"MCP server {entry.spec.name} {exc}") from exc
        except McpError:
            self.usage().record(info.qualified_name, ok=False, module=module_of(rel))
            self._search = None
            raise
        ok = not result.get("isError", False)
        self.usage().record(info.qualified_name, ok=ok, module=module_of(rel))
        self._search = None  # popularity changed
        observation = None
        sink = memory_sink if memory_sink is not None else self._memory_sink
        if sink is not None:
            draft = classify_result(info, arguments, result, file=rel)
            if draft is not None:
                try:
                    sink(draft)
                    observation = draft.observation_type
                except Exception as exc:  # a memory failure must not fail the tool call
                    log.warning("could not save the MCP observation: %s", exc)
        return {
            "tool": info.qualified_name,
            "server": info.server,
            **result,
            "observation": observation,
        }

    async def status(self) -> JsonObject:
        snapshot = self.snapshot()
        return {
            "workspace": str(self.workspace.root),
            "cache": str(self.registry.cache.path),
            "approvals": str(self.approvals.path),
            "config_files": snapshot.config_files,
            "servers": [e.to_status() for e in snapshot.servers.values()],
            "tools": len(snapshot.tools),
            "problems": [{"file": p.origin, "message": p.message} for p in snapshot.problems],
            "shadowed": [{"name": n, "file": f} for n, f in snapshot.shadowed],
            "pool": self.pool.status(),
            "notes": self._notes(snapshot),
        }

    async def refresh(
        self, names: Sequence[str] | None = None, *, force: bool = False
    ) -> JsonObject:
        """Introspect servers whose tools are unknown or whose config changed.

        ``names`` limits it to those servers (and re-introspects them even if current);
        ``force`` re-introspects every startable server. Workspace servers without approval
        are skipped, never started.
        """
        snapshot = self.registry.load()
        selected: builtins.list[ServerEntry] = []
        skipped: dict[str, str] = {}
        if names:
            for name in names:
                if name not in snapshot.servers:
                    raise ToolNotFound(self._unknown_server(name, snapshot))
        for name, entry in snapshot.servers.items():
            if names and name not in names:
                continue
            if entry.spec.disabled:
                skipped[name] = "disabled"
            elif not entry.trust.trusted:
                skipped[name] = f"needs approval ({entry.trust.reason}): engram mcp trust {name}"
            elif names or force or entry.state in ("not_introspected", "config_changed", "error"):
                selected.append(entry)
        semaphore = asyncio.Semaphore(self.pool.max_connections)
        updates: dict[str, CachedServer] = {}
        failed: dict[str, str] = {}

        async def one(entry: ServerEntry) -> None:
            async with semaphore:
                spec = entry.spec
                await self.pool.close_server(spec.name)  # an old-config connection must go
                try:
                    raw_tools, info = await self.pool.introspect(spec)
                except (McpError, UnresolvedVariable) as exc:
                    failed[spec.name] = str(exc)
                    updates[spec.name] = CachedServer(
                        spec.config_hash,
                        spec.transport,
                        spec.scope,
                        time.time(),
                        [],
                        None,
                        str(exc),
                    )
                    return
                except Exception as exc:
                    failed[spec.name] = describe_exception(exc)
                    updates[spec.name] = CachedServer(
                        spec.config_hash,
                        spec.transport,
                        spec.scope,
                        time.time(),
                        [],
                        None,
                        describe_exception(exc),
                    )
                    return
                tools = [
                    ToolInfo.from_cache(spec.name, raw) for raw in raw_tools if raw.get("name")
                ]
                updates[spec.name] = CachedServer(
                    spec.config_hash, spec.transport, spec.scope, time.time(), tools, info, None
                )

        await asyncio.gather(*(one(e) for e in selected))
        stale = (
            [] if names else [n for n in self.registry.cache.load() if n not in snapshot.servers]
        )
        if updates or stale:
            self.workspace.ensure_engram_dir()
            self.registry.store(updates, drop=stale)
        self._snapshot = None
        fresh = self.snapshot()
        return {
            "refreshed": sorted(n for n in updates if n not in failed),
            "failed": failed,
            "skipped": skipped,
            "dropped": stale,
            "tools": len(fresh.tools),
            "servers": [e.to_status() for e in fresh.servers.values()],
        }

    async def trust(self, names: Sequence[str]) -> JsonObject:
        """Approve workspace servers' current configurations (the user's explicit consent)."""
        if not names:
            raise InvalidToolArguments("name at least one MCP server to trust")
        snapshot = self.registry.load()
        approved: builtins.list[JsonObject] = []
        already: builtins.list[str] = []
        for name in names:
            entry = snapshot.servers.get(name)
            if entry is None:
                raise ToolNotFound(self._unknown_server(name, snapshot))
            if entry.spec.trusted_by_origin or entry.trust.trusted:
                already.append(name)
                continue
            self.approvals.approve(self.workspace.root, entry.spec)
            approved.append(
                {
                    "name": name,
                    "origin": entry.spec.origin,
                    "launch": entry.spec.describe(),
                    "config_hash": entry.spec.config_hash,
                }
            )
        self._snapshot = None
        return {"approved": approved, "already_trusted": already}

    async def close(self) -> None:
        """Close every connection (and child process) and the usage database."""
        await self.pool.close()
        if self._usage is not None:
            self._usage.close()
            self._usage = None

    async def __aenter__(self) -> McpHub:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ helpers

    def _relative(self, file: str | None) -> str | None:
        """Workspace-relative POSIX path of a path or ``file://`` URI; outside -> ``None``."""
        if not file:
            return None
        try:
            path: str | Path = (
                self.workspace.uri_to_path(file) if file.startswith("file:") else file
            )
            return self.workspace.relative(path)
        except WorkspaceError:
            return None

    def _entry_for(
        self, tool: str, info: ToolInfo | None, snapshot: RegistrySnapshot
    ) -> ServerEntry:
        if info is not None:
            return snapshot.servers[info.server]
        for sep in ("__", "/", ":", "."):
            server, found, _ = tool.partition(sep)
            if found and server in snapshot.servers:
                return snapshot.servers[server]
        raise ToolNotFound(
            f"no MCP tool named {tool!r} among {len(snapshot.tools)} known tools; "
            "try `engram mcp search WORDS`"
            + (
                " (some servers are not introspected: `engram mcp status`)"
                if self._notes(snapshot)
                else ""
            )
        )

    def _check_callable(self, entry: ServerEntry) -> None:
        spec = entry.spec
        if entry.state == "disabled":
            raise ServerUnavailable(f"MCP server {spec.name} is disabled in {spec.origin}")
        if entry.state == "needs_approval":
            raise ServerNotTrusted(
                f"MCP server {spec.name} is defined in {spec.origin} inside this workspace and "
                f"is not approved ({entry.trust.reason}); it would run `{spec.describe()}`. "
                f"If you trust it: engram mcp trust {spec.name}"
            )
        if entry.state == "config_changed":
            raise ConfigChanged(
                f"the config of MCP server {spec.name} changed since its tools were cached; "
                f"it is not connected until you run: engram mcp refresh {spec.name}"
            )
        if entry.state == "not_introspected":
            raise ConfigChanged(
                f"the tools of MCP server {spec.name} are not known yet; run: engram mcp refresh"
            )
        if entry.state == "error":
            error = entry.cached.error if entry.cached else "unknown error"
            raise ServerUnavailable(
                f"MCP server {spec.name} failed its last introspection ({error}); "
                f"fix it and run: engram mcp refresh {spec.name}"
            )

    @staticmethod
    def _unknown_server(name: str, snapshot: RegistrySnapshot) -> str:
        known = ", ".join(sorted(snapshot.servers)) or "none"
        return f"no MCP server named {name!r} (configured: {known})"

    @staticmethod
    def _notes(snapshot: RegistrySnapshot) -> builtins.list[str]:
        notes: builtins.list[str] = []
        by_state: dict[str, list[str]] = {}
        for name, entry in snapshot.servers.items():
            by_state.setdefault(entry.state, []).append(name)
        if by_state.get("needs_approval"):
            names = " ".join(sorted(by_state["needs_approval"]))
            notes.append(
                f"workspace servers not started until approved: {names} "
                f"(check them, then: engram mcp trust {names})"
            )
        pending = sorted(by_state.get("not_introspected", []) + by_state.get("config_changed", []))
        if pending:
            notes.append(
                f"tools not cached yet or config changed: {' '.join(pending)} "
                "(run: engram mcp refresh)"
            )
        if by_state.get("error"):
            notes.append(
                f"servers that failed introspection: {' '.join(sorted(by_state['error']))}"
            )
        for problem in snapshot.problems:
            notes.append(f"{problem.origin}: {problem.message}")
        if not snapshot.servers:
            notes.append(NO_SERVERS)
        return notes
