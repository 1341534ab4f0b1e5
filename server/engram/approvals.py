"""The user's approvals of things a workspace asks to run, kept OUTSIDE every workspace.

A cloned repository may carry settings that run code (observer plugins), send data (an LLM
endpoint) or start programs (``.mcp.json`` servers). None of them takes effect until the user
approved that exact content once (``engram trust``, ``engram mcp trust NAME``; see
docs/security.md). The approvals live in ``approvals.json`` in the user's Engram config
directory (``$XDG_CONFIG_HOME/engram``, default ``~/.config/engram``), keyed by workspace root,
so a repository can neither pre-approve itself nor change an approved setting behind the
user's back: what is approved is a hash of the content, and any change asks again.

This module is the one store both kinds of approval use (:mod:`engram.mcphub.trust` for MCP
servers, :mod:`engram.workspace_trust` for workspace settings). Standard library only.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TypeAlias

from engram.jsontypes import JsonObject

log = logging.getLogger(__name__)

#: the section of ``approvals.json`` that holds MCP server approvals (historical name)
MCP_SERVERS = "workspaces"
#: the section that holds approvals of a workspace's settings (``engram trust``)
WORKSPACE_SETTINGS = "settings"


def user_config_dir(environ: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    """``$XDG_CONFIG_HOME/engram`` (default ``~/.config/engram``): the user's, never a repo's."""
    environ = os.environ if environ is None else environ
    home = home or Path(environ.get("HOME") or Path.home())
    base = environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else home / ".config") / "engram"


def atomic_write_text(path: Path, text: str, mode: int | None = None) -> None:
    """Write via a temporary file and rename, so a crash never leaves half a file."""
    import tempfile  # with shutil and random: not on the language server's way to initialize

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: ``approvals.json`` read back: ``data[section][workspace_root][name] -> entry`` (entries
#: that are not objects are dropped; ``version`` is written by ``_save``)
Approvals: TypeAlias = dict[str, dict[str, dict[str, JsonObject]]]


class ApprovalStore:
    """``approvals.json`` (mode 0600) and its HMAC key in the user's config directory.

    Entries are ``data[section][workspace_root][name] -> dict``; each kind of approval
    decides what its entry holds (a content hash at least).
    """

    def __init__(self, config_dir: Path) -> None:
        self.config_dir = config_dir
        self.path = config_dir / "approvals.json"
        self._key_path = config_dir / "approvals.key"

    def key(self, create: bool) -> bytes | None:
        """A random secret only the user has (for keyed digests of values), or ``None``."""
        try:
            return bytes.fromhex(self._key_path.read_text(encoding="ascii").strip())
        except (FileNotFoundError, ValueError):
            if not create:
                return None
        import secrets  # hashlib, hmac, random: only when a key is created

        key = secrets.token_bytes(32)
        atomic_write_text(self._key_path, key.hex(), mode=0o600)
        return key

    def _load(self) -> Approvals:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, json.JSONDecodeError) as exc:
            log.warning("ignoring unreadable %s: %s", self.path, exc)
            return {}
        if not isinstance(raw, dict):
            return {}
        data: Approvals = {}
        for section, roots in raw.items():
            if not isinstance(roots, dict):
                continue  # "version", or a section someone broke by hand
            data[str(section)] = {
                str(root): {str(n): e for n, e in names.items() if isinstance(e, dict)}
                for root, names in roots.items()
                if isinstance(names, dict)
            }
        return data

    def _save(self, data: Approvals) -> None:
        payload: JsonObject = {**data, "version": 1}
        atomic_write_text(self.path, json.dumps(payload, indent=2, sort_keys=True) + "\n", 0o600)

    def entry(self, section: str, workspace_root: Path, name: str) -> JsonObject | None:
        """The recorded approval, or ``None`` when there is none."""
        return self._load().get(section, {}).get(str(workspace_root), {}).get(name)

    def record(
        self,
        section: str,
        workspace_root: Path,
        name: str,
        entry: Mapping[str, object],
        now: float | None = None,
    ) -> None:
        """Store ``entry`` (stamped with ``approved_at``) as the user's approval."""
        data = self._load()
        names = data.setdefault(section, {}).setdefault(str(workspace_root), {})
        names[name] = {**entry, "approved_at": time.time() if now is None else now}
        self._save(data)

    def remove(self, section: str, workspace_root: Path, name: str) -> bool:
        """Forget an approval; ``False`` when there was none."""
        data = self._load()
        names = data.get(section, {}).get(str(workspace_root), {})
        if name not in names:
            return False
        del names[name]
        self._save(data)
        return True


__all__ = [
    "MCP_SERVERS",
    "WORKSPACE_SETTINGS",
    "ApprovalStore",
    "atomic_write_text",
    "user_config_dir",
]
