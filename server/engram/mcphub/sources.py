"""Read the MCP server configurations people already have, into one list of specs.

Engram does not ask users to describe their MCP servers again: it reads the files their
other tools use. Files inside the workspace (``.engram/mcp.json``, ``.mcp.json``,
``.vscode/mcp.json``, ``.cursor/mcp.json``) come with a cloned repository and are therefore
*untrusted* (see :mod:`engram.mcphub.trust`); files in the user's home (Engram's own
``~/.config/engram/mcp.json``, Claude Code's ``~/.claude.json``, Cursor's ``~/.cursor/mcp.json``,
Claude Desktop's config) were written by the user and are trusted.

When two files define the same server name, the first in :func:`config_files` order wins
(project files before user files, as in Claude Code) and the other is reported as shadowed.

The identity of a server is :attr:`ServerSpec.config_hash`: a SHA-256 over its transport,
command, arguments, working directory, URL and the *names* of its environment variables
and headers. Values are left out so that the hash can be stored in the workspace cache
without leaking a secret; :func:`values_digest` covers values with a key only the user has.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import attrs

from engram.approvals import user_config_dir
from engram.jsontypes import JsonObject, parse_json
from engram.workspace import (
    MAX_SETTINGS_FILE_BYTES,
    WorkspaceError,
    confine,
    read_regular,
)

log = logging.getLogger(__name__)

Transport = Literal["stdio", "http", "sse"]
Scope = Literal["workspace", "user"]

_VALID_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


@attrs.frozen
class ServerSpec:
    """One configured MCP server, as written (``${VAR}`` references not yet expanded).

    ``env`` and ``headers`` values live only in memory: nothing that writes to disk may
    serialise them (the registry cache stores :attr:`config_hash` and names only).
    """

    name: str
    transport: Transport
    origin: str  # the config file it came from
    scope: Scope
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    description: str = ""
    #: never expired by the idle TTL (still counts against the connection limit)
    persistent: bool = False
    #: per-server idle TTL override in seconds
    idle_ttl_seconds: float | None = None
    disabled: bool = False

    @property
    def trusted_by_origin(self) -> bool:
        """Servers from the user's own files need no approval."""
        return self.scope == "user"

    @property
    def config_hash(self) -> str:
        return config_hash(self)

    def describe(self) -> str:
        """One line naming what will run, and which of the user's environment variables it
        is given, for approval prompts and status (names only: it is stored with the
        approval)."""
        launch = (
            " ".join([self.command or "?", *self.args])
            if self.transport == "stdio"
            else f"{self.transport} {self.url}"
        )
        reads = environment_reads(self)
        return f"{launch}; sends {', '.join(reads)} from your environment" if reads else launch


@attrs.frozen
class ConfigProblem:
    origin: str
    message: str


@attrs.frozen
class SourceScan:
    servers: list[ServerSpec]
    problems: list[ConfigProblem]
    #: (name, origin) of definitions hidden by an earlier file defining the same name
    shadowed: list[tuple[str, str]]
    files: list[str]


#: the ``${…}`` forms (:func:`expand`) that read no environment variable
_NOT_ENVIRONMENT = frozenset({"workspaceFolder", "workspaceRoot", "userHome"})


def environment_reads(spec: ServerSpec) -> list[str]:
    """``$NAME (where)`` for each environment variable the configuration fills in.

    A repository's ``.mcp.json`` chooses these: an HTTP server with ``"headers":
    {"Authorization": "Bearer ${env:GITHUB_TOKEN}"}`` was approved as ``http https://…``
    and then sent the user's GitHub token to that URL, which the approval never named."""
    fields = [
        ("command", spec.command or ""),
        *(("args", arg) for arg in spec.args),
        ("cwd", spec.cwd or ""),
        ("url", spec.url or ""),
        *((f"env {name}", value) for name, value in spec.env.items()),
        *((f"header {name}", value) for name, value in spec.headers.items()),
    ]
    reads: list[str] = []
    for where, text in fields:
        for ref in _VAR.findall(text):
            if ref in _NOT_ENVIRONMENT or ref.startswith("input:"):
                continue
            name = ref[4:] if ref.startswith("env:") else ref.partition(":-")[0]
            reads.append(f"${name} ({where})")
    return list(dict.fromkeys(reads))


def _canonical(spec: ServerSpec) -> JsonObject:
    return {
        "transport": spec.transport,
        "command": spec.command,
        "args": list(spec.args),
        "cwd": spec.cwd,
        "env_names": sorted(spec.env),
        "url": spec.url,
        "header_names": sorted(h.lower() for h in spec.headers),
    }


def config_hash(spec: ServerSpec) -> str:
    """SHA-256 of what identifies the server, with variable and header *names* only."""
    blob = json.dumps(_canonical(spec), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def values_digest(spec: ServerSpec, key: bytes) -> str:
    """HMAC over the raw env and header values, keyed by a secret kept in the user's dir.

    A repository could otherwise swap ``NODE_OPTIONS=--require ./evil.js`` into an approved
    server without changing :func:`config_hash`; the keyed digest notices, yet reveals
    nothing about the values to anyone without the user's key.
    """
    blob = json.dumps(
        {"env": dict(sorted(spec.env.items())), "headers": dict(sorted(spec.headers.items()))},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hmac.new(key, blob.encode("utf-8"), hashlib.sha256).hexdigest()


# --------------------------------------------------------------------------- locations


@attrs.frozen
class ConfigFile:
    path: Path
    scope: Scope
    #: which top-level key holds the servers; ``None`` = try ``mcpServers`` then ``servers``
    key: str | None = None
    #: ``~/.claude.json`` keeps project-local servers under ``projects[<root>].mcpServers``
    claude_code_user: bool = False


def config_files(
    workspace_root: Path,
    *,
    home: Path,
    environ: Mapping[str, str],
    platform: str = sys.platform,
) -> list[ConfigFile]:
    """Every place a server may be defined, highest precedence first."""
    root = workspace_root
    xdg = Path(environ["XDG_CONFIG_HOME"]) if environ.get("XDG_CONFIG_HOME") else home / ".config"
    if platform == "darwin":
        desktop = home / "Library" / "Application Support" / "Claude"
    elif platform.startswith("win"):
        desktop = Path(environ.get("APPDATA", str(home))) / "Claude"
    else:
        desktop = xdg / "Claude"
    return [
        ConfigFile(root / ".engram" / "mcp.json", "workspace"),
        ConfigFile(root / ".mcp.json", "workspace", "mcpServers"),
        ConfigFile(root / ".vscode" / "mcp.json", "workspace", "servers"),
        ConfigFile(root / ".cursor" / "mcp.json", "workspace", "mcpServers"),
        ConfigFile(user_config_dir(environ, home) / "mcp.json", "user"),
        ConfigFile(home / ".claude.json", "user", "mcpServers", claude_code_user=True),
        ConfigFile(home / ".cursor" / "mcp.json", "user", "mcpServers"),
        ConfigFile(desktop / "claude_desktop_config.json", "user", "mcpServers"),
    ]


# --------------------------------------------------------------------------- parsing


def _str_map(raw: object, what: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f"{what} must be an object")
    out: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(key, str):
            raise ValueError(f"{what} keys must be strings")
        if isinstance(value, bool | int | float):
            value = str(value).lower() if isinstance(value, bool) else str(value)
        if not isinstance(value, str):
            raise ValueError(f"{what}.{key} must be a string")
        out[key] = value
    return out


def parse_server(name: str, raw: object, *, origin: str, scope: Scope) -> ServerSpec:
    """One server entry in any of the supported dialects; ``ValueError`` says what is wrong."""
    if not _VALID_NAME.match(name):
        raise ValueError(f"server name {name!r} must be 1-64 letters, digits, '_', '-', '.'")
    if not isinstance(raw, dict):
        raise ValueError(f"server {name!r} must be an object")
    kind = str(raw.get("type") or raw.get("transport") or "").lower().replace("_", "-")
    url = raw.get("url") or raw.get("serverUrl")
    command = raw.get("command")
    transport: Transport
    if kind in ("http", "streamable-http", "streamablehttp") or (not kind and url and not command):
        transport = "http"
    elif kind == "sse":
        transport = "sse"
    elif kind in ("", "stdio", "local"):
        transport = "stdio"
    else:
        raise ValueError(f"server {name!r}: unsupported type {kind!r}")
    args = raw.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
        raise ValueError(f"server {name!r}: args must be a list of strings")
    if transport == "stdio":
        if isinstance(command, list):  # some tools accept ["node", "server.js"]
            if not command or not all(isinstance(c, str) for c in command):
                raise ValueError(f"server {name!r}: command must be a non-empty string")
            command, args = command[0], [*command[1:], *args]
        if not isinstance(command, str) or not command.strip():
            raise ValueError(f"server {name!r}: stdio server needs a 'command'")
    elif not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(f"server {name!r}: {transport} server needs an http(s) 'url'")
    ttl = raw.get("idleTtlSeconds", raw.get("idle_ttl_seconds"))
    if ttl is not None and (not isinstance(ttl, int | float) or isinstance(ttl, bool) or ttl <= 0):
        raise ValueError(f"server {name!r}: idleTtlSeconds must be a positive number")
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ValueError(f"server {name!r}: cwd must be a string")
    description = raw.get("description", "")
    return ServerSpec(
        name=name,
        transport=transport,
        origin=origin,
        scope=scope,
        command=command if transport == "stdio" else None,
        args=tuple(str(a) for a in args) if transport == "stdio" else (),
        env=_str_map(raw.get("env"), f"server {name!r}: env"),
        cwd=cwd,
        url=url if transport != "stdio" else None,
        headers=_str_map(raw.get("headers"), f"server {name!r}: headers"),
        description=description if isinstance(description, str) else "",
        persistent=bool(raw.get("persistent", False)),
        idle_ttl_seconds=float(ttl) if ttl is not None else None,
        disabled=bool(raw.get("disabled", False)) or raw.get("enabled") is False,
    )


def _servers_block(data: JsonObject, cfg: ConfigFile, workspace_root: Path) -> list[object]:
    blocks: list[object] = []
    if cfg.key is None:
        blocks.append(data.get("mcpServers", data.get("servers")))
    else:
        blocks.append(data.get(cfg.key))
    if cfg.claude_code_user:
        projects = data.get("projects")
        if isinstance(projects, dict):
            local = projects.get(str(workspace_root))
            if isinstance(local, dict):
                blocks.insert(0, local.get("mcpServers"))
    return blocks


def _read_config(cfg: ConfigFile, workspace_root: Path) -> str:
    """A config file's text. A workspace's own is the repository's: confined (a committed
    ``.mcp.json -> ~/.claude.json`` is not read) and at most :data:`MAX_SETTINGS_FILE_BYTES`
    of a regular file (a committed ``.mcp.json -> /dev/zero`` made ``engram mcp status``
    read until memory ran out; stop 31). The user's own files are read whole."""
    if cfg.scope != "workspace":
        return read_regular(cfg.path).decode("utf-8")
    if not os.path.lexists(cfg.path):
        raise FileNotFoundError(cfg.path)
    real = confine(workspace_root.resolve(), cfg.path)
    return read_regular(real, MAX_SETTINGS_FILE_BYTES).decode("utf-8")


def scan_sources(
    workspace_root: Path,
    *,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
    files: Sequence[ConfigFile] | None = None,
) -> SourceScan:
    """Read every config file that exists; bad files and entries become problems, not errors."""
    environ = os.environ if environ is None else environ
    home = home or Path(environ.get("HOME") or Path.home())
    if files is None:
        files = config_files(workspace_root, home=home, environ=environ)
    seen: dict[str, ServerSpec] = {}
    problems: list[ConfigProblem] = []
    shadowed: list[tuple[str, str]] = []
    found: list[str] = []
    for cfg in files:
        try:
            text = _read_config(cfg, workspace_root)
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError, WorkspaceError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            problems.append(ConfigProblem(str(cfg.path), f"cannot read: {reason}"))
            continue
        found.append(str(cfg.path))
        try:
            data = parse_json(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            problems.append(ConfigProblem(str(cfg.path), f"not valid JSON (line {exc.lineno})"))
            continue
        if not isinstance(data, dict):
            problems.append(ConfigProblem(str(cfg.path), "top level must be a JSON object"))
            continue
        for block in _servers_block(data, cfg, workspace_root):
            if block is None:
                continue
            if not isinstance(block, dict):
                problems.append(ConfigProblem(str(cfg.path), "the servers entry must be an object"))
                continue
            for name, raw in block.items():
                try:
                    spec = parse_server(str(name), raw, origin=str(cfg.path), scope=cfg.scope)
                except ValueError as exc:
                    problems.append(ConfigProblem(str(cfg.path), str(exc)))
                    continue
                if spec.name in seen:
                    shadowed.append((spec.name, spec.origin))
                    continue
                seen[spec.name] = spec
    return SourceScan(list(seen.values()), problems, shadowed, found)


# --------------------------------------------------------------------------- expansion

_VAR = re.compile(r"\$\{([^}]+)\}")


class UnresolvedVariable(ValueError):
    """A ``${...}`` reference that cannot be filled in without asking the user."""


def expand(text: str, *, environ: Mapping[str, str], workspace_root: Path, home: Path) -> str:
    """Fill the variable forms Claude Code and VS Code configs use.

    ``${VAR}``, ``${VAR:-default}``, ``${env:VAR}``, ``${workspaceFolder}``, ``${userHome}``.
    ``${input:...}`` (a VS Code prompt) cannot be answered here and raises
    :class:`UnresolvedVariable`.
    """

    def repl(match: re.Match[str]) -> str:
        ref = match.group(1)
        if ref in ("workspaceFolder", "workspaceRoot"):
            return str(workspace_root)
        if ref == "userHome":
            return str(home)
        if ref.startswith("env:"):
            return environ.get(ref[4:], "")
        if ref.startswith("input:"):
            raise UnresolvedVariable(
                f"needs the VS Code input {ref[6:]!r}; set the value in .engram/mcp.json instead"
            )
        name, sep, default = ref.partition(":-")
        if name in environ:
            return environ[name]
        if sep:
            return default
        raise UnresolvedVariable(f"environment variable {name} is not set")

    return _VAR.sub(repl, text)


@attrs.frozen
class ResolvedLaunch:
    """What a transport needs, with variables expanded (held in memory only)."""

    command: str | None
    args: list[str]
    env: dict[str, str] = attrs.field(repr=False)
    cwd: str | None
    url: str | None
    headers: dict[str, str] = attrs.field(repr=False)


def resolve_launch(
    spec: ServerSpec, *, environ: Mapping[str, str], workspace_root: Path, home: Path
) -> ResolvedLaunch:
    """Expand every variable of ``spec`` (``UnresolvedVariable`` names what is missing)."""

    def ex(text: str) -> str:
        return expand(text, environ=environ, workspace_root=workspace_root, home=home)

    # like Claude Code, servers run from the workspace root unless their config says otherwise
    cwd = ex(spec.cwd) if spec.cwd else str(workspace_root)
    if not Path(cwd).is_absolute():
        base = Path(spec.origin).parent
        # a relative cwd in a workspace file is relative to the workspace root
        cwd = str((workspace_root if spec.scope == "workspace" else base) / cwd)
    return ResolvedLaunch(
        command=ex(spec.command) if spec.command else None,
        args=[ex(a) for a in spec.args],
        env={k: ex(v) for k, v in spec.env.items()},
        cwd=cwd,
        url=ex(spec.url) if spec.url else None,
        headers={k: ex(v) for k, v in spec.headers.items()},
    )
