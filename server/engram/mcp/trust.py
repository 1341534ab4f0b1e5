"""Approvals of workspace-defined MCP servers, kept in the USER's config directory.

A cloned repository can ship a ``.mcp.json`` that starts any program. Engram therefore never
starts a server defined inside the workspace (not even to list its tools) until the user has
approved that exact configuration once with ``engram mcp trust NAME``. The approval lives in
``~/.config/engram/approvals.json``, keyed by workspace root, server name and config hash,
plus a keyed digest of the env/header values (:func:`engram.mcp.sources.values_digest`), so
a repository can neither pre-approve itself nor change an approved server behind the user's
back. The digest key is a random secret created next to the approvals (mode 0600).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs

from engram.mcp.sources import ServerSpec, values_digest

log = logging.getLogger(__name__)


def atomic_write_text(path: Path, text: str, mode: int | None = None) -> None:
    """Write via a temporary file and rename, so a crash never leaves half a file."""
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


@attrs.frozen
class TrustDecision:
    trusted: bool
    #: "user config", "approved", "never approved", "config changed since approval", ...
    reason: str


class ApprovalStore:
    """Reads and writes ``approvals.json`` in the user's Engram config directory."""

    def __init__(self, config_dir: Path) -> None:
        self.config_dir = config_dir
        self.path = config_dir / "approvals.json"
        self._key_path = config_dir / "approvals.key"

    def _key(self, create: bool) -> bytes | None:
        try:
            return bytes.fromhex(self._key_path.read_text(encoding="ascii").strip())
        except (FileNotFoundError, ValueError):
            if not create:
                return None
        key = secrets.token_bytes(32)
        atomic_write_text(self._key_path, key.hex(), mode=0o600)
        return key

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, json.JSONDecodeError) as exc:
            log.warning("ignoring unreadable %s: %s", self.path, exc)
            return {}
        return data if isinstance(data, dict) else {}

    def decide(self, workspace_root: Path, spec: ServerSpec) -> TrustDecision:
        """Whether ``spec`` may be started, and why (never touches the workspace)."""
        if spec.trusted_by_origin:
            return TrustDecision(True, "user config")
        entry = self._load().get("workspaces", {}).get(str(workspace_root), {}).get(spec.name)
        if not isinstance(entry, dict):
            return TrustDecision(False, "workspace server never approved")
        if entry.get("config_hash") != spec.config_hash:
            return TrustDecision(False, "config changed since approval")
        key = self._key(create=False)
        if key is None or entry.get("values_digest") != values_digest(spec, key):
            return TrustDecision(False, "env or header values changed since approval")
        return TrustDecision(True, "approved")

    def approve(self, workspace_root: Path, spec: ServerSpec, now: float | None = None) -> None:
        """Record the user's approval of ``spec``'s current configuration."""
        key = self._key(create=True)
        assert key is not None
        data = self._load()
        workspaces = data.setdefault("workspaces", {})
        servers = workspaces.setdefault(str(workspace_root), {})
        servers[spec.name] = {
            "config_hash": spec.config_hash,
            "values_digest": values_digest(spec, key),
            "origin": spec.origin,
            "launch": spec.describe(),
            "approved_at": time.time() if now is None else now,
        }
        data["version"] = 1
        atomic_write_text(self.path, json.dumps(data, indent=2, sort_keys=True) + "\n", 0o600)

    def revoke(self, workspace_root: Path, name: str) -> bool:
        data = self._load()
        servers = data.get("workspaces", {}).get(str(workspace_root), {})
        if name not in servers:
            return False
        del servers[name]
        atomic_write_text(self.path, json.dumps(data, indent=2, sort_keys=True) + "\n", 0o600)
        return True
