"""How coding agents meet Engram: hook answers from a fast SQLite digest, the Claude Code
adapter, and (in :mod:`engram.mcp_server`) the MCP tools."""

from engram.agents.hooks import (
    HookBudget,
    SessionLedger,
    hook_main,
    pack,
    render_memory,
    run_claude_code_hook,
)
from engram.store.digest import Brief, Digest, lance_manifest_marker, lance_table_version

__all__ = [
    "Brief",
    "Digest",
    "HookBudget",
    "SessionLedger",
    "hook_main",
    "lance_manifest_marker",
    "lance_table_version",
    "pack",
    "render_memory",
    "run_claude_code_hook",
]
