"""Helpers shared by the MCP hub tests (imported as ``mcp_helpers``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

FAKE_SERVER = Path(__file__).parent / "servers" / "fake_server.py"
VENV_BIN = Path(sys.executable).parent

#: ``write(path, servers, key="mcpServers") -> path``
WriteConfig = Callable[..., Path]


def fake_server(*extra: str, env: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    """A server entry that runs the in-test MCP server."""
    entry: dict[str, Any] = {"command": sys.executable, "args": [str(FAKE_SERVER), *extra]}
    if env:
        entry["env"] = env
    entry.update(fields)
    return entry


def pids_in(pidfile: Path) -> list[int]:
    if not pidfile.exists():
        return []
    return [int(line) for line in pidfile.read_text().split() if line.strip()]


def alive(pid: int) -> bool:
    """True if ``pid`` is a live (non-zombie) process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"
