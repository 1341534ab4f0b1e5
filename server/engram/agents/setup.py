"""``engram setup AGENT``: write Engram into a coding agent's own configuration.

Each agent reads its own files (docs/agents.md). This module plans the change for one agent as
a list of :class:`FileChange` — the merged content of each file, other entries untouched — and
writes them only when asked. The command in every entry is the ABSOLUTE command of this
installation (the ``engram`` script next to the running interpreter, else ``python -m
engram``), because agents start hooks and servers with their own, often minimal, PATH: a bare
``engram`` there found nothing and the hooks printed nothing (issue 16).

Everything is planned before anything is written, so a file that cannot be merged (not valid
JSON or TOML) stops the command with one clear line and no half-done setup. Running it again
changes nothing.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from engram.errors import InvalidInput
from engram.interpreter import SAFE_PATH_FLAG
from engram.jsontypes import JsonObject, parse_json
from engram.workspace import MAX_SETTINGS_FILE_BYTES, read_regular

AGENTS: tuple[str, ...] = ("claude-code", "codex", "opencode", "crush", "copilot")

#: Claude Code events Engram answers (engram.agents.hooks), and the tools each one watches.
CLAUDE_HOOKS: tuple[tuple[str, str | None], ...] = (
    ("SessionStart", None),
    ("UserPromptSubmit", None),
    ("PreToolUse", "Edit|Write|MultiEdit|NotebookEdit"),
    ("PostToolUse", "Read|Edit|Write|MultiEdit|NotebookEdit|Bash|Grep|Glob|WebFetch|WebSearch"),
    ("PostToolUseFailure", None),
    ("Stop", None),
    ("SessionEnd", None),
)
CODEX_HOOKS: tuple[tuple[str, str | None], ...] = (
    ("SessionStart", "startup|resume|clear"),
    ("UserPromptSubmit", None),
    ("PreToolUse", None),
    ("PostToolUse", None),
    ("Stop", None),
)
#: What the person still has to do in the agent itself after ``engram setup`` wrote its files.
#: Codex 0.171 reads a project's ``.codex/`` only once the project is trusted (``codex mcp
#: list`` said "No MCP servers configured yet" until then), and runs a hook only once its
#: exact definition is trusted in ``/hooks`` (``hooks/list`` showed all five "untrusted"):
#: every hook skipped without a word.
AFTER_SETUP: dict[str, str] = {
    "codex": (
        "Codex reads .codex/ only in a project you trust and runs its hooks only once you "
        "trust them: start codex here, trust the folder, then trust Engram's hooks in /hooks "
        "(again after each 'engram setup codex' that changed .codex/hooks.json)"
    ),
}
#: LSP diagnostics severities per agent: OpenCode forwards only errors, Crush and Copilot all.
BLOCKING = ("gotcha", "dead_end", "error_pattern", "requirement")
LANGUAGES = {
    ".py": "python",
    ".js": "javascript",
    ".jsx": "javascriptreact",
    ".ts": "typescript",
    ".tsx": "typescriptreact",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}


def _severity(blocking: str, rest: str) -> dict[str, dict[str, dict[str, str]]]:
    mapping = {t: blocking for t in BLOCKING}
    mapping.update({"decision": rest, "e2e_observation": rest})
    return {"diagnostics": {"agentSeverity": mapping}}


@attrs.frozen
class FileChange:
    """One configuration file: its merged content and what Engram put in it."""

    path: Path
    content: str
    what: str
    #: None when the file did not exist; else its text before the change
    before: str | None

    @property
    def changed(self) -> bool:
        return self.content != self.before

    @property
    def action(self) -> str:
        if not self.changed:
            return "unchanged"
        return "created" if self.before is None else "updated"


def engram_command() -> list[str]:
    """The absolute command that runs this installation of Engram.

    The interpreter path is kept as given (a venv's ``python`` is a symlink to the base
    interpreter: resolving it would leave the venv and lose Engram). ``-P``: agents run
    these commands inside the repository, and ``-m`` would otherwise put it first on
    ``sys.path``, so an ``engram/`` folder in a cloned repository would run instead.
    """
    python = Path(sys.executable).absolute()
    script = python.parent / "engram"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(python), SAFE_PATH_FLAG, "-m", "engram"]


def _shell(command: Sequence[str]) -> str:
    return shlex.join(command)


def _lsp_and_mcp(command: Sequence[str]) -> str:
    serve, mcp = _shell([*command, "serve"]), _shell([*command, "mcp-serve"])
    return f"lsp.engram → {serve}; mcp.engram → {mcp}"


def _read(path: Path) -> str | None:
    try:
        return read_regular(path, MAX_SETTINGS_FILE_BYTES).decode("utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from exc


def _load_json(path: Path, text: str | None) -> JsonObject:
    if text is None or not text.strip():
        return {}
    try:
        data = parse_json(text)
    except ValueError as exc:
        raise InvalidInput(
            f"cannot merge into {path}: not valid JSON ({exc}); fix or move it, then run again"
        ) from exc
    if not isinstance(data, dict):
        raise InvalidInput(f"cannot merge into {path}: it is not a JSON object")
    return data


def _json_text(data: JsonObject) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _section(data: JsonObject, key: str, path: Path) -> JsonObject:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise InvalidInput(f"cannot merge into {path}: '{key}' is not an object")
    return value


def _merge_json(path: Path, edit: Callable[[JsonObject], str]) -> FileChange:
    before = _read(path)
    data = _load_json(path, before)
    what = edit(data)
    return FileChange(path, _json_text(data), what, before)


def _is_engram_hook(handler: object, marker: str) -> bool:
    command = handler.get("command") if isinstance(handler, dict) else None
    return isinstance(command, str) and marker in command and "engram" in command


def _merge_hooks(
    data: JsonObject,
    path: Path,
    events: Sequence[tuple[str, str | None]],
    command: str,
    marker: str,
) -> str:
    """Put one Engram handler per event; replace Engram's earlier ones, keep everyone else's."""
    hooks = _section(data, "hooks", path)
    for event, matcher in events:
        groups = hooks.get(event, [])
        if not isinstance(groups, list):
            raise InvalidInput(f"cannot merge into {path}: hooks.{event} is not a list")
        kept: list[object] = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                handlers = [h for h in group["hooks"] if not _is_engram_hook(h, marker)]
                if handlers:
                    kept.append({**group, "hooks": handlers})
            else:
                kept.append(group)
        ours: JsonObject = {"hooks": [{"type": "command", "command": command, "timeout": 10}]}
        if matcher:
            ours = {"matcher": matcher, **ours}
        hooks[event] = [*kept, ours]
    return f"hooks {', '.join(e for e, _ in events)} → {command}"


# ---------------------------------------------------------------------------- per agent


def command_record(home: Path) -> Path:
    """Where the Claude Code plugin's launcher (clients/claude-code/bin/find-engram) looks
    for the engram command when engram is not on the agent's PATH."""
    config = os.environ.get("XDG_CONFIG_HOME") if home == Path.home() else None
    return (Path(config) if config else home / ".config") / "engram" / "command"


def _record(home: Path, command: list[str]) -> FileChange:
    record = command_record(home)
    return FileChange(
        record,
        _shell(command) + "\n",
        "the engram command the Claude Code plugin runs",
        _read(record),
    )


def _claude_plugin(root: Path, home: Path, command: list[str]) -> list[FileChange]:
    """With the plugin installed from the marketplace, only the command needs recording."""
    return [_record(home, command)]


def _claude_code(root: Path, home: Path, command: list[str]) -> list[FileChange]:
    hook = _shell([*command, "hook", "claude-code"])

    def settings(data: JsonObject) -> str:
        return _merge_hooks(
            data, root / ".claude/settings.local.json", CLAUDE_HOOKS, hook, "hook claude-code"
        )

    def mcp(data: JsonObject) -> str:
        servers = _section(data, "mcpServers", root / ".mcp.json")
        servers["engram"] = {"command": command[0], "args": [*command[1:], "mcp-serve"]}
        return f"mcpServers.engram → {_shell([*command, 'mcp-serve'])}"

    return [
        _merge_json(root / ".claude" / "settings.local.json", settings),
        _merge_json(root / ".mcp.json", mcp),
        _record(home, command),
    ]


def _codex(root: Path, home: Path, command: list[str]) -> list[FileChange]:
    import tomlkit

    path = root / ".codex" / "config.toml"
    before = _read(path)
    try:
        doc = tomlkit.parse(before or "")
    except Exception as exc:  # tomlkit raises its own ParseError subclasses
        raise InvalidInput(f"cannot merge into {path}: not valid TOML ({exc})") from exc
    servers = doc.setdefault("mcp_servers", tomlkit.table(is_super_table=True))
    entry = tomlkit.table()
    entry["command"] = command[0]
    entry["args"] = [*command[1:], "mcp-serve"]
    entry["startup_timeout_sec"] = 20
    entry["tool_timeout_sec"] = 60
    servers["engram"] = entry
    # Codex versions before hooks were on by default read hooks.json only with this flag
    features = doc.setdefault("features", tomlkit.table())
    features["codex_hooks"] = True
    config = FileChange(
        path,
        tomlkit.dumps(doc),
        f"[mcp_servers.engram] → {_shell([*command, 'mcp-serve'])}; [features] codex_hooks = true",
        before,
    )
    hook = _shell([*command, "hook", "codex"])
    hooks = _merge_json(
        root / ".codex" / "hooks.json",
        lambda data: _merge_hooks(
            data, root / ".codex/hooks.json", CODEX_HOOKS, hook, "hook codex"
        ),
    )
    return [config, hooks]


def _opencode(root: Path, home: Path, command: list[str]) -> list[FileChange]:
    path = root / "opencode.json"

    def edit(data: JsonObject) -> str:
        data.setdefault("$schema", "https://opencode.ai/config.json")
        _section(data, "lsp", path)["engram"] = {
            "command": [*command, "serve"],
            "extensions": [*LANGUAGES, ".pyi", ".mjs", ".cjs", ".md", ".toml", ".yaml", ".yml"],
            "initialization": _severity("error", "hint"),
        }
        _section(data, "mcp", path)["engram"] = {
            "type": "local",
            "command": [*command, "mcp-serve"],
            "enabled": True,
        }
        return _lsp_and_mcp(command)

    return [_merge_json(path, edit)]


def _crush(root: Path, home: Path, command: list[str]) -> list[FileChange]:
    path = next(
        (p for p in (root / ".crush.json", root / "crush.json") if p.exists()), root / ".crush.json"
    )

    def edit(data: JsonObject) -> str:
        data.setdefault("$schema", "https://charm.land/crush.json")
        _section(data, "lsp", path)["engram"] = {
            "command": command[0],
            "args": [*command[1:], "serve"],
            "filetypes": [e.lstrip(".") for e in LANGUAGES]
            + ["pyi", "mjs", "cjs", "md", "toml", "yaml", "yml"],
            "init_options": _severity("warning", "information"),
        }
        _section(data, "mcp", path)["engram"] = {
            "type": "stdio",
            "command": command[0],
            "args": [*command[1:], "mcp-serve"],
        }
        return _lsp_and_mcp(command)

    return [_merge_json(path, edit)]


def _copilot(root: Path, home: Path, command: list[str]) -> list[FileChange]:
    folder = home / ".copilot"

    def lsp(data: JsonObject) -> str:
        _section(data, "lspServers", folder / "lsp-config.json")["engram"] = {
            "command": command[0],
            "args": [*command[1:], "serve"],
            "fileExtensions": LANGUAGES,
            "initializationOptions": _severity("warning", "information"),
        }
        return f"lspServers.engram → {_shell([*command, 'serve'])}"

    def mcp(data: JsonObject) -> str:
        _section(data, "mcpServers", folder / "mcp-config.json")["engram"] = {
            "type": "local",
            "command": command[0],
            "args": [*command[1:], "mcp-serve"],
            "tools": ["*"],
        }
        return f"mcpServers.engram → {_shell([*command, 'mcp-serve'])}"

    return [
        _merge_json(folder / "lsp-config.json", lsp),
        _merge_json(folder / "mcp-config.json", mcp),
    ]


_PLANNERS: dict[str, Callable[[Path, Path, list[str]], list[FileChange]]] = {
    "claude-code": _claude_code,
    "codex": _codex,
    "opencode": _opencode,
    "crush": _crush,
    "copilot": _copilot,
}


def plan_setup(
    agent: str,
    root: Path,
    *,
    home: Path | None = None,
    command: list[str] | None = None,
    plugin: bool = False,
) -> list[FileChange]:
    """What ``engram setup AGENT`` would write, without writing anything.

    ``plugin`` (Claude Code only): the Engram plugin brings the hooks, MCP and LSP servers,
    so only the command it runs is recorded; hooks in both places would answer twice.
    """
    planner = _PLANNERS.get(agent)
    if planner is None:
        raise InvalidInput(f"unknown agent {agent!r}; expected one of {', '.join(AGENTS)}")
    if plugin:
        if agent != "claude-code":
            raise InvalidInput("--plugin is for claude-code only (the other agents have none)")
        planner = _claude_plugin
    changes = planner(root, home or Path.home(), command or engram_command())
    for change in changes:
        _check_not_linked(root, change.path)
    return changes


def _check_not_linked(root: Path, path: Path) -> None:
    """Refuse a file of the workspace that is a link, or whose folder leads outside it.

    The repository writes these paths: a clone committing ``.mcp.json`` as a link to
    ``~/.claude.json`` had ``engram setup`` read that file and write it back into the
    workspace, and ``.claude/.settings.local.json.engram-tmp`` (the temporary name it used)
    linked to ``~/.bashrc`` had the merged settings, the clone's own keys included, written
    there (stop 29)."""
    from engram.workspace import WorkspaceError, confine

    real_root = root.resolve()
    absolute = path if path.is_absolute() else root / path
    if real_root not in absolute.resolve().parents and root not in absolute.parents:
        return  # the user's own files (~/.config/engram/command)
    shown = _shown(root, absolute)
    if absolute.is_symlink():
        raise InvalidInput(f"{shown} is a link: Engram never writes through it; delete it")
    try:
        confine(real_root, absolute.parent)
    except WorkspaceError as exc:
        raise InvalidInput(
            f"{shown} is in a folder outside the workspace ({exc}): Engram never writes "
            "there; delete the link"
        ) from exc


def _shown(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def apply_setup(changes: Sequence[FileChange]) -> None:
    """Write the changed files (atomically, each through a temporary file beside it whose
    name nobody can know beforehand, created anew: never an existing file or link)."""
    import tempfile

    for change in changes:
        if not change.changed:
            continue
        change.path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(
            dir=change.path.parent, prefix=f".{change.path.name}.", suffix=".engram-tmp"
        )
        tmp = Path(name)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(change.content)
            os.chmod(tmp, change.path.stat().st_mode & 0o7777 if change.path.exists() else 0o644)
            os.replace(tmp, change.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
