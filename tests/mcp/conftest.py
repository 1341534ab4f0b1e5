"""Fixtures for the MCP hub tests: an isolated HOME, config writers, the in-test server."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import WriteConfig


@pytest.fixture
def user_home(tmp_path: Path) -> Path:
    """A HOME with nothing in it, so the developer's own MCP configs never leak in."""
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def environ(user_home: Path) -> dict[str, str]:
    """The environment the hub sees (also what ``${VAR}`` expands from)."""
    return {"HOME": str(user_home), "PATH": os.environ.get("PATH", "")}


@pytest.fixture
def write_config() -> WriteConfig:
    def write(path: Path, servers: dict[str, Any], key: str = "mcpServers") -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({key: servers}, indent=2), encoding="utf-8")
        return path

    return write  # type: ignore[return-value]
