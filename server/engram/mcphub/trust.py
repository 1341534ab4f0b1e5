"""Approvals of workspace-defined MCP servers, kept in the USER's config directory.

A cloned repository can ship a ``.mcp.json`` that starts any program. Engram therefore never
starts a server defined inside the workspace (not even to list its tools) until the user has
approved that exact configuration once with ``engram mcp trust NAME``. The approval lives in
``~/.config/engram/approvals.json``, keyed by workspace root, server name and config hash,
plus a keyed digest of the env/header values (:func:`engram.mcphub.sources.values_digest`) and
a digest of the workspace files it runs (:func:`~.pinned.files_digest`),
so a repository can neither pre-approve itself nor change an approved server behind the user's
back. The digest key is a random secret created next to the approvals (mode 0600).
"""

from __future__ import annotations

from pathlib import Path

import attrs

from engram.approvals import MCP_SERVERS, atomic_write_text
from engram.approvals import ApprovalStore as _Approvals
from engram.mcphub.pinned import files_digest
from engram.mcphub.sources import ServerSpec, values_digest


@attrs.frozen
class TrustDecision:
    trusted: bool
    #: "user config", "approved", "never approved", "config changed since approval", ...
    reason: str


class ApprovalStore(_Approvals):
    """MCP server approvals in the user's ``approvals.json`` (:mod:`engram.approvals`)."""

    def decide(self, workspace_root: Path, spec: ServerSpec) -> TrustDecision:
        """Whether ``spec`` may be started, and why (never touches the workspace)."""
        if spec.trusted_by_origin:
            return TrustDecision(True, "user config")
        entry = self.entry(MCP_SERVERS, workspace_root, spec.name)
        if entry is None:
            return TrustDecision(False, "workspace server never approved")
        if entry.get("config_hash") != spec.config_hash:
            return TrustDecision(False, "config changed since approval")
        if entry.get("files_digest", "") != files_digest(spec, workspace_root):
            return TrustDecision(False, "a workspace file it runs changed since approval")
        key = self.key(create=False)
        if key is None or entry.get("values_digest") != values_digest(spec, key):
            return TrustDecision(False, "env or header values changed since approval")
        return TrustDecision(True, "approved")

    def approve(self, workspace_root: Path, spec: ServerSpec, now: float | None = None) -> None:
        """Record the user's approval of ``spec``'s current configuration."""
        key = self.key(create=True)
        assert key is not None
        entry = {
            "config_hash": spec.config_hash,
            "values_digest": values_digest(spec, key),
            "files_digest": files_digest(spec, workspace_root),
            "origin": spec.origin,
            "launch": spec.describe(),
        }
        self.record(MCP_SERVERS, workspace_root, spec.name, entry, now)

    def revoke(self, workspace_root: Path, name: str) -> bool:
        return self.remove(MCP_SERVERS, workspace_root, name)


__all__ = ["ApprovalStore", "TrustDecision", "atomic_write_text"]
