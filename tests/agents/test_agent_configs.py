"""The ready-made agent configurations point at commands Engram really has, and work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from engram.agents import Digest
from engram.agents.deferred import wait_for_queued
from engram.lifecycle.trust import mirror_rules
from engram.model import CodeAnchor, Memory, MemoryType
from engram.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "clients"
KNOWN_SEVERITIES = {"error", "warning", "information", "hint"}


def _engram_subcommands() -> set[str]:
    out = subprocess.run(
        [sys.executable, "-m", "engram", "--help"], capture_output=True, text=True, check=True
    ).stdout
    return {
        word.strip(",{}") for word in out.split() if word.strip(",{}").isidentifier() or "-" in word
    }


@pytest.fixture(scope="module")
def subcommands() -> set[str]:
    return _engram_subcommands()


def _severities(init: dict[str, object]) -> dict[str, str]:
    diagnostics = init["diagnostics"]
    assert isinstance(diagnostics, dict)
    mapping = diagnostics["agentSeverity"]
    assert isinstance(mapping, dict)
    return {str(k): str(v) for k, v in mapping.items()}


def test_opencode_config(subcommands: set[str]) -> None:
    config = json.loads((CLIENTS / "agents/opencode/opencode.json").read_text())
    lsp = config["lsp"]["engram"]
    assert lsp["command"][0] == "engram" and lsp["command"][1] in subcommands
    # OpenCode forwards only Error diagnostics: blocking memories must be errors there.
    severities = _severities(lsp["initialization"])
    assert severities["gotcha"] == "error" and severities["dead_end"] == "error"
    assert set(severities.values()) <= KNOWN_SEVERITIES
    assert config["mcp"]["engram"]["command"] == ["engram", "mcp-serve"]


def test_crush_copilot_codex_configs(subcommands: set[str]) -> None:
    crush = json.loads((CLIENTS / "agents/crush/crush.json").read_text())
    assert crush["lsp"]["engram"]["args"] == ["serve"]
    assert set(_severities(crush["lsp"]["engram"]["init_options"]).values()) <= KNOWN_SEVERITIES
    assert crush["mcp"]["engram"]["args"] == ["mcp-serve"]
    copilot = json.loads((CLIENTS / "agents/copilot-cli/lsp.json").read_text())
    assert copilot["lspServers"]["engram"]["args"] == ["serve"]
    assert all(ext.startswith(".") for ext in copilot["lspServers"]["engram"]["fileExtensions"])
    codex = tomllib.loads((CLIENTS / "agents/codex/.codex/config.toml").read_text())
    assert codex["mcp_servers"]["engram"]["args"] == ["mcp-serve"]
    hooks = json.loads((CLIENTS / "agents/codex/.codex/hooks.json").read_text())["hooks"]
    assert {"SessionStart", "PostToolUse", "Stop"} <= set(hooks)
    for groups in hooks.values():
        for group in groups:
            for hook in group["hooks"]:
                assert hook["command"] == "engram hook codex"
    assert {"serve", "mcp-serve", "hook"} <= subcommands


def test_claude_code_hook_script_answers_and_never_fails(tmp_workspace: Workspace) -> None:
    tmp_workspace.ensure_engram_dir()
    (tmp_workspace.root / "billing.py").write_text("def charge(x):\n    return x\n")
    Digest(tmp_workspace, rules=mirror_rules()).apply(
        [
            Memory(
                "charge() wants cents",
                type=MemoryType.GOTCHA,
                anchors=[CodeAnchor("billing.py", None, 0, 0)],
            )
        ]
    )
    script = CLIENTS / "claude-code/hooks/engram-hook"
    env = {**os.environ, "ENGRAM_PYTHON": sys.executable}
    payload = {
        "session_id": "abc",
        "hook_event_name": "PostToolUse",
        "cwd": str(tmp_workspace.root),
        "tool_name": "Read",
        "tool_input": {"file_path": str(tmp_workspace.root / "billing.py")},
    }
    done = subprocess.run(
        [str(script)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_workspace.root,
        check=False,
    )
    assert done.returncode == 0
    assert (
        "charge() wants cents" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    )
    broken = subprocess.run(
        [str(script)],
        input="garbage",
        capture_output=True,
        text=True,
        env={**env, "ENGRAM_PYTHON": "/nonexistent/python"},
        check=False,
    )
    assert broken.returncode == 0 and broken.stdout == ""


@pytest.mark.parametrize("how", ["ENGRAM_PYTHON", "python3 on PATH"])
def test_a_cloned_repository_cannot_choose_what_the_hook_runs(
    tmp_workspace: Workspace, tmp_path: Path, how: str
) -> None:
    """The agent runs hooks inside the repository: an ``engram/`` package in it must not be
    what ``python -m engram`` imports (bin/find-engram passes -P), nor a relative PATH entry."""
    tmp_workspace.ensure_engram_dir()
    planted = tmp_workspace.root / "engram"
    planted.mkdir()
    marker = tmp_path / "pwned"
    code = f"open({str(marker)!r}, 'w').write('x')\n"
    (planted / "__init__.py").write_text(code)
    (planted / "__main__.py").write_text(code)
    fake = tmp_workspace.root / "python3"  # found first through a relative PATH entry
    fake.write_text(f"#!/bin/sh\ntouch {marker}\n")
    fake.chmod(0o755)
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    bin_dir.mkdir()
    python = bin_dir / "python3"  # an interpreter with Engram, and no engram script
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    env = {"HOME": str(home), "PATH": f".:{bin_dir}:/usr/bin:/bin"}
    if how == "ENGRAM_PYTHON":
        env["ENGRAM_PYTHON"] = sys.executable
    payload = {"session_id": "s", "hook_event_name": "SessionStart", "cwd": str(tmp_workspace.root)}
    done = subprocess.run(
        [str(CLIENTS / "claude-code/hooks/engram-hook")],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_workspace.root,
        check=False,
    )
    assert done.returncode == 0
    assert not marker.exists()
    wait_for_queued(tmp_workspace)
    assert (tmp_workspace.engram_dir / "agents" / "inbox" / "s.jsonl").is_file()  # Engram ran
