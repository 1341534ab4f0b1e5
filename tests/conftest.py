"""Shared fixtures. Each capability keeps its own tests in ``tests/<capability>/``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engram.workspace import Workspace


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` with a fixed identity (tests never depend on the user's config)."""
    env_args = ["-c", "user.name=Engram Test", "-c", "user.email=test@engram.invalid"]
    out = subprocess.run(
        ["git", *env_args, *args], cwd=cwd, check=True, capture_output=True, text=True
    )
    return out.stdout


@pytest.fixture
def tmp_workspace(tmp_path: Path) -> Workspace:
    """An empty git repository to act as a workspace."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    return Workspace.open(root)
