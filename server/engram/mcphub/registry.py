"""The sparse registry: every configured server and its tools, without connecting to any.

Tool schemas come from a one-time introspection (connect, ``tools/list``, disconnect) and are
cached in ``.engram/mcp/registry.json`` next to the server's config hash. Loading the registry
is pure file reading (the config files, the cache, the user's approvals), which is why it is
fast enough to do at every start (docs/mcp-hub.md: < 100 ms for 200 servers / 1,000 tools).

The cache never holds an env or header value: per server only the hash, transport, scope,
what the server said about itself, and its tools.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

import attrs

from engram.jsontypes import JsonObject
from engram.mcphub.sources import ConfigProblem, ServerSpec, SourceScan, scan_sources
from engram.mcphub.trust import ApprovalStore, TrustDecision, atomic_write_text

log = logging.getLogger(__name__)

CACHE_VERSION = 1
TOOL_SEPARATOR = "__"

ServerState = Literal[
    "ready", "not_introspected", "config_changed", "needs_approval", "disabled", "error"
]


@attrs.frozen(eq=False)
class ToolInfo:
    """One tool as the registry knows it: metadata only, no connection."""

    server: str
    name: str
    description: str = ""
    input_schema: Mapping[str, object] = attrs.field(factory=dict)
    title: str | None = None
    annotations: Mapping[str, object] | None = None

    @property
    def qualified_name(self) -> str:
        """``server__tool``: unique across servers, the form agents and the CLI use."""
        return f"{self.server}{TOOL_SEPARATOR}{self.name}"

    def to_dict(self) -> JsonObject:
        data: JsonObject = {
            "name": self.qualified_name,
            "server": self.server,
            "tool": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
        }
        if self.title:
            data["title"] = self.title
        if self.annotations:
            data["annotations"] = dict(self.annotations)
        return data

    def to_agent_definition(self) -> JsonObject:
        """The definition an agent receives (Anthropic tool format), for token accounting."""
        return {
            "name": self.qualified_name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
        }

    @classmethod
    def from_cache(cls, server: str, raw: Mapping[str, object]) -> ToolInfo:
        """From the registry cache, or from a server's ``tools/list`` (``inputSchema``)."""
        schema = raw.get("input_schema", raw.get("inputSchema"))
        annotations = raw.get("annotations")
        title = raw.get("title")
        return cls(
            server=server,
            name=str(raw["name"]),
            description=str(raw.get("description") or ""),
            input_schema=schema if isinstance(schema, dict) else {},
            title=title if isinstance(title, str) else None,
            annotations=annotations if isinstance(annotations, dict) else None,
        )

    def to_cache(self) -> JsonObject:
        data: JsonObject = {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
        }
        if self.title:
            data["title"] = self.title
        if self.annotations:
            data["annotations"] = dict(self.annotations)
        return data


@attrs.frozen
class CachedServer:
    """What one introspection learned; stored without any secret."""

    config_hash: str
    transport: str
    scope: str
    introspected_at: float
    tools: list[ToolInfo]
    server_info: Mapping[str, object] | None = None
    error: str | None = None

    def to_cache(self) -> JsonObject:
        return {
            "config_hash": self.config_hash,
            "transport": self.transport,
            "scope": self.scope,
            "introspected_at": self.introspected_at,
            "server_info": dict(self.server_info) if self.server_info else None,
            "error": self.error,
            "tools": [t.to_cache() for t in self.tools],
        }

    @classmethod
    def from_cache(cls, name: str, raw: Mapping[str, object]) -> CachedServer:
        tools_raw = raw.get("tools")
        tools_raw = tools_raw if isinstance(tools_raw, list) else []
        tools = [
            ToolInfo.from_cache(name, t) for t in tools_raw if isinstance(t, dict) and "name" in t
        ]
        info = raw.get("server_info")
        error = raw.get("error")
        introspected = raw.get("introspected_at")
        return cls(
            config_hash=str(raw.get("config_hash", "")),
            transport=str(raw.get("transport", "")),
            scope=str(raw.get("scope", "")),
            introspected_at=float(introspected) if isinstance(introspected, int | float) else 0.0,
            tools=tools,
            server_info=info if isinstance(info, dict) else None,
            error=error if isinstance(error, str) else None,
        )


class RegistryCache:
    """``.engram/mcp/registry.json``: read whole, written atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, CachedServer]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, json.JSONDecodeError) as exc:
            log.warning("MCP registry cache %s unreadable (%s); it will be rebuilt", self.path, exc)
            return {}
        if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
            return {}
        servers = data.get("servers")
        if not isinstance(servers, dict):
            return {}
        out: dict[str, CachedServer] = {}
        for name, raw in servers.items():
            if isinstance(raw, dict):
                try:
                    out[str(name)] = CachedServer.from_cache(str(name), raw)
                except (TypeError, ValueError, KeyError) as exc:
                    log.warning("MCP registry cache entry %s ignored: %s", name, exc)
        return out

    def save(self, servers: Mapping[str, CachedServer]) -> None:
        data = {
            "version": CACHE_VERSION,
            "servers": {name: entry.to_cache() for name, entry in sorted(servers.items())},
        }
        atomic_write_text(self.path, json.dumps(data, separators=(",", ":"), sort_keys=True))


@attrs.frozen
class ServerEntry:
    spec: ServerSpec
    state: ServerState
    trust: TrustDecision
    cached: CachedServer | None

    @property
    def tools(self) -> list[ToolInfo]:
        return self.cached.tools if self.state == "ready" and self.cached else []

    @property
    def startable(self) -> bool:
        """May be connected now (trusted, enabled)."""
        return self.trust.trusted and not self.spec.disabled

    def to_status(self) -> JsonObject:
        return {
            "name": self.spec.name,
            "state": self.state,
            "transport": self.spec.transport,
            "scope": self.spec.scope,
            "origin": self.spec.origin,
            "trusted": self.trust.trusted,
            "trust": self.trust.reason,
            "launch": self.spec.describe(),
            "config_hash": self.spec.config_hash,
            "tools": len(self.cached.tools) if self.cached else 0,
            "persistent": self.spec.persistent,
            "error": self.cached.error if self.cached else None,
        }


def _state(spec: ServerSpec, trust: TrustDecision, cached: CachedServer | None) -> ServerState:
    if spec.disabled:
        return "disabled"
    if not trust.trusted:
        return "needs_approval"
    if cached is None:
        return "not_introspected"
    if cached.config_hash != spec.config_hash:
        return "config_changed"
    if cached.error:
        return "error"
    return "ready"


@attrs.frozen
class RegistrySnapshot:
    """An immutable view of the registry at one moment (cheap to rebuild)."""

    servers: dict[str, ServerEntry]
    problems: list[ConfigProblem]
    shadowed: list[tuple[str, str]]
    config_files: list[str]
    tools: list[ToolInfo]
    by_qualified: dict[str, ToolInfo]

    def resolve_tool(self, name: str) -> ToolInfo | None:
        """``server__tool``, ``server/tool`` or ``server.tool``, or a bare name unique overall."""
        hit = self.by_qualified.get(name)
        if hit is not None:
            return hit
        for sep in ("/", ":", "."):
            server, found, tool = name.partition(sep)
            entry = self.servers.get(server) if found else None
            for candidate in entry.tools if entry else ():
                if candidate.name == tool:
                    return candidate
        matches = [t for t in self.tools if t.name == name]
        return matches[0] if len(matches) == 1 else None


class Registry:
    """Builds :class:`RegistrySnapshot` from config files, the cache and approvals."""

    def __init__(
        self,
        workspace_root: Path,
        cache: RegistryCache,
        approvals: ApprovalStore,
        *,
        home: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.workspace_root = workspace_root
        self.cache = cache
        self.approvals = approvals
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.home = home or Path(self.environ.get("HOME") or Path.home())

    def scan(self) -> SourceScan:
        return scan_sources(self.workspace_root, home=self.home, environ=self.environ)

    def load(self, scan: SourceScan | None = None) -> RegistrySnapshot:
        scan = scan or self.scan()
        cached = self.cache.load()
        return build_snapshot(self.workspace_root, scan, cached, self.approvals)

    def store(self, updates: Mapping[str, CachedServer], drop: Iterable[str] = ()) -> None:
        """Merge introspection results into the cache (other entries kept as they are)."""
        current = self.cache.load()
        current.update(updates)
        for name in drop:
            current.pop(name, None)
        self.cache.save(current)


def build_snapshot(
    workspace_root: Path,
    scan: SourceScan,
    cached: Mapping[str, CachedServer],
    approvals: ApprovalStore,
) -> RegistrySnapshot:
    servers: dict[str, ServerEntry] = {}
    tools: list[ToolInfo] = []
    by_qualified: dict[str, ToolInfo] = {}
    for spec in scan.servers:
        trust = approvals.decide(workspace_root, spec)
        entry = ServerEntry(
            spec, _state(spec, trust, cached.get(spec.name)), trust, cached.get(spec.name)
        )
        servers[spec.name] = entry
        for tool in entry.tools:
            tools.append(tool)
            by_qualified[tool.qualified_name] = tool
    return RegistrySnapshot(
        servers=servers,
        problems=scan.problems,
        shadowed=scan.shadowed,
        config_files=scan.files,
        tools=tools,
        by_qualified=by_qualified,
    )
