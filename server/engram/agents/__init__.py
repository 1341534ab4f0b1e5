"""How coding agents meet Engram: hook answers from a fast SQLite digest, the Claude Code
adapter, and (in :mod:`engram.mcp_server`) the MCP tools.

Names are imported when first used (PEP 562), so ``engram hook`` pays only for the
modules it runs (tests/agents/test_hook_imports.py).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from engram.agents.hooks import (
        HookBudget,
        SessionLedger,
        hook_main,
        pack,
        render_memory,
        run_claude_code_hook,
    )
    from engram.store.digest import Brief, Digest, lance_manifest_marker, lance_table_version

_WHERE = {
    "HookBudget": "engram.agents.hooks",
    "SessionLedger": "engram.agents.hooks",
    "hook_main": "engram.agents.hooks",
    "pack": "engram.agents.hooks",
    "render_memory": "engram.agents.hooks",
    "run_claude_code_hook": "engram.agents.hooks",
    "Brief": "engram.store.digest",
    "Digest": "engram.store.digest",
    "lance_manifest_marker": "engram.store.digest",
    "lance_table_version": "engram.store.digest",
}


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


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
