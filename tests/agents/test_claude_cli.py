"""The plugin through Claude Code's own CLI, as a user installs it from docs/agents.md.

``claude plugin validate`` checks the marketplace and the plugin against Claude Code's schema;
``claude plugin marketplace add`` + ``claude plugin install engram@engram`` install it from this
repository; ``claude mcp list`` starts the plugin's MCP server the way a session does. None of
it needs a login or the network. The CLI comes from the npm registry through
``scripts/setup-e2e`` (which ``scripts/test`` runs).

Before (issue 16): the repository had no marketplace (docs said ``claude plugin install
/path``, which Claude Code does not take) and the MCP server was a bare ``engram``, not found
on the agent's PATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engram.agents.setup import apply_setup, plan_setup

ROOT = Path(__file__).resolve().parents[2]
CLAUDE_VERSION = "2.1.197"  # scripts/setup-e2e installs this one


def claude_binary() -> Path:
    cache = os.environ.get("ENGRAM_E2E_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "engram-e2e"
    )
    binary = Path(cache) / f"claude-code-{CLAUDE_VERSION}" / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        raise AssertionError(f"{binary} is missing: run scripts/setup-e2e (scripts/test does)")
    return binary


@pytest.fixture
def claude(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",  # as a desktop session starts it: no venv, no ~/.local/bin
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    return claude_binary(), env


def _claude(claude: tuple[Path, dict[str, str]], *args: str, cwd: Path) -> str:
    binary, env = claude
    done = subprocess.run(
        [str(binary), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"claude {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout + done.stderr


def test_marketplace_install_and_mcp_server_through_claude_code(
    claude: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    assert "Validation passed" in _claude(claude, "plugin", "validate", str(ROOT), cwd=ROOT)
    plugin = ROOT / "clients" / "claude-code"
    assert "Validation passed" in _claude(claude, "plugin", "validate", str(plugin), cwd=ROOT)

    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    _claude(claude, "plugin", "marketplace", "add", str(ROOT), cwd=project)
    _claude(claude, "plugin", "install", "engram@engram", cwd=project)
    listed = _claude(claude, "plugin", "list", cwd=project)
    assert "engram@engram" in listed and "enabled" in listed, listed

    # engram is not on this PATH: the server cannot start, and says so
    before = _claude(claude, "mcp", "list", cwd=project)
    line = next(x for x in before.splitlines() if x.startswith("plugin:engram:engram"))
    assert "engram-launch mcp-serve" in line and "Connected" not in line, before
    # `engram setup claude-code --plugin` records this installation's engram for the plugin
    home = Path(claude[1]["HOME"])
    apply_setup(
        plan_setup(
            "claude-code",
            project,
            home=home,
            command=[str(Path(sys.executable).absolute().parent / "engram")],
            plugin=True,
        )
    )
    after = _claude(claude, "mcp", "list", cwd=project)
    line = next(x for x in after.splitlines() if x.startswith("plugin:engram:engram"))
    assert "Connected" in line, after
