"""``engram setup AGENT`` and the Claude Code plugin, as a user following the README gets them.

Before (issue 16): the plugin's hook script, ``.mcp.json`` and ``.lsp.json`` called a bare
``engram``; agents start hooks with their own minimal PATH, where an ``engram`` installed in a
venv or by pipx is missing, so every hook printed nothing and exited 0. These tests run the
hooks the way Claude Code does: a fresh process, ``env -i HOME=... PATH=/usr/bin:/bin``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from engram.agents import Digest
from engram.agents.setup import AGENTS, apply_setup, command_record, plan_setup
from engram.errors import InvalidInput
from engram.lifecycle.trust import mirror_rules
from engram.model import CodeAnchor, Memory, MemoryType
from engram.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "clients" / "claude-code"
#: The README's install: an ``engram`` script beside this interpreter (a venv or pipx).
ENGRAM = [str(Path(sys.executable).absolute().parent / "engram")]
MINIMAL_PATH = "/usr/bin:/bin"


def _minimal_env(home: Path, **extra: str) -> dict[str, str]:
    """What a hook sees when Claude Code runs it from a desktop session: no venv on PATH."""
    return {"HOME": str(home), "PATH": MINIMAL_PATH, **extra}


def _plan(agent: str, root: Path, home: Path, **kw: Any) -> dict[str, str]:
    changes = plan_setup(agent, root, home=home, command=ENGRAM, **kw)
    apply_setup(changes)
    return {str(c.path): c.action for c in changes}


@pytest.fixture
def billing(tmp_workspace: Workspace) -> tuple[Workspace, Memory]:
    tmp_workspace.ensure_engram_dir()
    (tmp_workspace.root / "billing.py").write_text("def charge(x):\n    return x\n")
    memory = Memory(
        "charge() takes euros but the payment API wants cents",
        type=MemoryType.GOTCHA,
        anchors=[CodeAnchor("billing.py", None, 0, 0)],
    )
    Digest(tmp_workspace, rules=mirror_rules()).apply([memory])
    return tmp_workspace, memory


def _payloads(ws: Workspace) -> dict[str, dict[str, Any]]:
    base = {"session_id": "s-min", "cwd": str(ws.root), "transcript_path": "/dev/null"}
    edit = {"file_path": str(ws.root / "billing.py"), "old_string": "x", "new_string": "y"}
    return {
        "UserPromptSubmit": {
            **base,
            "session_id": "s-prompt",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "make charge() send cents to the payment API",
        },
        "PreToolUse": {
            **base,
            "session_id": "s-edit",
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_input": edit,
        },
        "PostToolUse": {
            **base,
            "session_id": "s-read",
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": str(ws.root / "billing.py")},
        },
    }


def _run_hook(command: str, payload: dict[str, Any], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_plugin_hooks_find_the_readme_install_with_a_minimal_path(
    billing: tuple[Workspace, Memory], tmp_path: Path
) -> None:
    """The plugin's own hook commands, from hooks.json, as Claude Code runs them."""
    ws, memory = billing
    home = tmp_path / "home"
    hooks = json.loads((PLUGIN / "hooks/hooks.json").read_text())["hooks"]
    env = _minimal_env(home, CLAUDE_PLUGIN_ROOT=str(PLUGIN), CLAUDE_PROJECT_DIR=str(ws.root))
    for event, payload in _payloads(ws).items():
        command = hooks[event][0]["hooks"][0]["command"].replace(
            "${CLAUDE_PLUGIN_ROOT}", str(PLUGIN)
        )
        # nothing recorded and engram not on PATH: silent, never an error
        assert _run_hook(command, payload, env, ws.root) == "", event
    # what `engram setup claude-code --plugin` records
    _plan("claude-code", ws.root, home, plugin=True)
    assert command_record(home).read_text().strip() == ENGRAM[0]
    for event, payload in _payloads(ws).items():
        command = hooks[event][0]["hooks"][0]["command"].replace(
            "${CLAUDE_PLUGIN_ROOT}", str(PLUGIN)
        )
        out = json.loads(_run_hook(command, payload, env, ws.root))["hookSpecificOutput"]
        assert out["hookEventName"] == event
        assert memory.id in out["additionalContext"], (event, out)


def test_plugin_launcher_starts_the_servers_off_path(tmp_path: Path) -> None:
    """.mcp.json and .lsp.json run bin/engram-launch: it finds the recorded engram."""
    home = tmp_path / "home"
    mcp = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["engram"]
    lsp = json.loads((PLUGIN / ".lsp.json").read_text())["engram"]
    launcher = mcp["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN))
    assert lsp["command"] == mcp["command"] and Path(launcher).is_file()
    assert (mcp["args"], lsp["args"]) == (["mcp-serve"], ["serve"])
    missing = subprocess.run(
        [launcher, "--version"], env=_minimal_env(home), capture_output=True, text=True
    )
    assert missing.returncode == 127 and "engram setup claude-code" in missing.stderr
    _plan("claude-code", tmp_path, home, plugin=True)
    found = subprocess.run(
        [launcher, "--version"], env=_minimal_env(home), capture_output=True, text=True
    )
    assert found.returncode == 0 and found.stdout.startswith("engram "), found.stderr


def test_setup_claude_code_writes_hooks_that_answer_off_path(
    billing: tuple[Workspace, Memory], tmp_path: Path
) -> None:
    ws, memory = billing
    home = tmp_path / "home"
    settings = ws.root / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    theirs = {"type": "command", "command": "./lint.sh"}
    settings.write_text(
        json.dumps(
            {"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"Stop": [{"hooks": [theirs]}]}}
        )
    )
    (ws.root / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "dbmcp"}}}))
    actions = _plan("claude-code", ws.root, home)
    assert set(actions.values()) == {"updated", "created"}
    data = json.loads(settings.read_text())
    assert data["permissions"] == {"allow": ["Bash(ls)"]}, "other settings untouched"
    assert data["hooks"]["Stop"][0]["hooks"] == [theirs], "other hooks kept"
    servers = json.loads((ws.root / ".mcp.json").read_text())["mcpServers"]
    assert servers["db"] == {"command": "dbmcp"}
    assert servers["engram"] == {"command": ENGRAM[0], "args": ["mcp-serve"]}
    # idempotent: a second run changes nothing
    assert set(_plan("claude-code", ws.root, home).values()) == {"unchanged"}
    for event, payload in _payloads(ws).items():
        [ours] = [g for g in data["hooks"][event] if "engram" in g["hooks"][0]["command"]]
        out = _run_hook(ours["hooks"][0]["command"], payload, _minimal_env(home), ws.root)
        assert memory.id in json.loads(out)["hookSpecificOutput"]["additionalContext"], event


def test_setup_every_agent_merges_and_is_idempotent(tmp_path: Path) -> None:
    root, home = tmp_path / "repo", tmp_path / "home"
    root.mkdir()
    (root / ".codex").mkdir()
    (root / ".codex/config.toml").write_text(
        '# my settings\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
    )
    (root / "opencode.json").write_text(json.dumps({"theme": "dark", "lsp": {"go": {}}}))
    for agent in AGENTS:
        first = plan_setup(agent, root, home=home, command=ENGRAM)
        assert any(c.changed for c in first), agent
        apply_setup(first)
        again = plan_setup(agent, root, home=home, command=ENGRAM)
        assert not any(c.changed for c in again), agent
    codex_text = (root / ".codex/config.toml").read_text()
    codex = tomllib.loads(codex_text)
    assert "# my settings" in codex_text and codex["model"] == "o3"
    assert codex["mcp_servers"]["docs"] == {"command": "docs-mcp"}
    assert codex["mcp_servers"]["engram"]["command"] == ENGRAM[0]
    assert codex["features"]["codex_hooks"] is True, "older Codex reads hooks only with it"
    codex_hooks = json.loads((root / ".codex/hooks.json").read_text())["hooks"]
    assert {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"} <= set(
        codex_hooks
    )
    opencode = json.loads((root / "opencode.json").read_text())
    assert opencode["theme"] == "dark" and "go" in opencode["lsp"]
    assert opencode["lsp"]["engram"]["command"] == [*ENGRAM, "serve"]
    assert opencode["mcp"]["engram"]["command"] == [*ENGRAM, "mcp-serve"]
    crush = json.loads((root / ".crush.json").read_text())
    assert crush["lsp"]["engram"]["command"] == ENGRAM[0]
    copilot = json.loads((home / ".copilot/lsp-config.json").read_text())
    assert copilot["lspServers"]["engram"]["args"] == ["serve"]
    assert json.loads((home / ".copilot/mcp-config.json").read_text())["mcpServers"]["engram"]


def test_setup_refuses_a_file_it_cannot_merge(tmp_path: Path) -> None:
    (tmp_path / "opencode.json").write_text("{ not json")
    with pytest.raises(InvalidInput, match=r"cannot merge into .*opencode\.json: not valid JSON"):
        plan_setup("opencode", tmp_path, home=tmp_path, command=ENGRAM)
    assert (tmp_path / "opencode.json").read_text() == "{ not json", "left as it was"
    with pytest.raises(InvalidInput, match="--plugin is for claude-code only"):
        plan_setup("codex", tmp_path, home=tmp_path, command=ENGRAM, plugin=True)


def test_setup_cli_says_what_it_changed(tmp_workspace: Workspace, tmp_path: Path) -> None:
    """A real process: the absolute command of this installation, one line per file."""
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    run = [sys.executable, "-m", "engram", "setup", "crush", "--workspace", str(tmp_workspace.root)]
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    assert re.match(r"created\s+\.crush\.json: lsp\.engram → /\S+ serve", first.stdout)
    again = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    assert again.stdout.startswith("unchanged")
    # the repository is set up: the agent's language server serves only such a folder
    assert (tmp_workspace.root / ".engram" / ".gitignore").is_file()
    printed = subprocess.run(
        [*run[:-2], "--plugin"], env=env, capture_output=True, text=True, check=False
    )
    assert printed.returncode != 0
    assert printed.stderr.strip().count("\n") == 0 and "--plugin" in printed.stderr


def test_plugin_layout_follows_claude_codes_documented_schema() -> None:
    """The layout Claude Code's plugin and marketplace reference documents (and what
    `claude plugin validate` accepted: docs/agents.md). Components sit at their default
    paths, so plugin.json must not name them again (Claude Code rejects a duplicate hooks
    file); the repository root is a marketplace listing the plugin."""
    market = json.loads((ROOT / ".claude-plugin/marketplace.json").read_text())
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", market["name"])
    assert isinstance(market["owner"]["name"], str)
    [entry] = market["plugins"]
    assert entry["source"].startswith("./")
    plugin_dir = (ROOT / entry["source"]).resolve()
    assert plugin_dir == PLUGIN
    manifest = json.loads((plugin_dir / ".claude-plugin/plugin.json").read_text())
    assert manifest["name"] == entry["name"] == "engram"
    assert re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    assert not {"hooks", "mcpServers", "lspServers"} & set(manifest), "default paths only"
    known_events = {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "SessionEnd",
    }
    hooks = json.loads((plugin_dir / "hooks/hooks.json").read_text())["hooks"]
    assert {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"} <= set(hooks)
    assert set(hooks) <= known_events
    assert "Edit" in hooks["PreToolUse"][0]["matcher"].split("|")
    for groups in hooks.values():
        for group in groups:
            for hook in group["hooks"]:
                assert hook["type"] == "command" and hook["timeout"] <= 60
                assert hook["command"] == '"${CLAUDE_PLUGIN_ROOT}"/hooks/engram-hook'
    for script in ("hooks/engram-hook", "bin/engram-launch"):
        assert os.access(plugin_dir / script, os.X_OK), script
    mcp = json.loads((plugin_dir / ".mcp.json").read_text())
    assert set(mcp) == {"mcpServers"}
    lsp = json.loads((plugin_dir / ".lsp.json").read_text())["engram"]
    assert lsp["command"] and all(ext.startswith(".") for ext in lsp["extensionToLanguage"])


def test_setup_codex_says_codex_runs_nothing_until_the_person_trusts_it(
    tmp_workspace: Workspace, tmp_path: Path
) -> None:
    """Codex 0.171 loads a project's .codex/ only once the project is trusted and runs a
    hook only once it is trusted in /hooks (its app-server's hooks/list said "untrusted" for
    all five): without a word, a new user's Codex session had no Engram at all."""
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    run = [sys.executable, "-m", "engram", "setup", "codex", "--workspace", str(tmp_workspace.root)]
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    assert "trust the folder" in first.stderr and "/hooks" in first.stderr
    again = subprocess.run(run, env=env, capture_output=True, text=True, check=True)
    assert "/hooks" not in again.stderr  # nothing changed: nothing new to trust


def test_hook_answers_carry_each_fact_once_as_claude_code_runs_them(
    tmp_workspace: Workspace, tmp_path: Path
) -> None:
    """What reaches ``additionalContext``, run as Claude Code runs the plugin's hook (``/bin/sh
    -c``, ``PATH=/usr/bin:/bin``, the payload on stdin; the code under test found through
    ``ENGRAM_PYTHON``): a file's lines repeated its name after the header that names it
    (``(billing.py:1)``), and every answer of a session ended with the same footer. Each
    fact once now, within budget; an answer with nothing new prints nothing at all."""
    import engram
    from engram.agents import HookBudget
    from engram.tokens import estimate_tokens

    ws = tmp_workspace
    ws.ensure_engram_dir()
    (ws.root / "billing.py").write_text("def charge(x):\n    return x\n")
    (ws.root / "refund.py").write_text("def refund(x):\n    return -x\n")
    memories = [
        Memory(text, type=MemoryType.GOTCHA, anchors=[CodeAnchor(file, None, line, line)])
        for text, file, line in (
            ("charge() takes euros but the payment API wants cents", "billing.py", 0),
            ("charge() retries twice; the second retry is not idempotent", "billing.py", 1),
            ("refunds settle a day later than the charge", "refund.py", 0),
        )
    ]
    Digest(ws, rules=mirror_rules()).apply(memories)
    hooks = json.loads((PLUGIN / "hooks/hooks.json").read_text())["hooks"]
    env = _minimal_env(
        tmp_path / "home",
        CLAUDE_PLUGIN_ROOT=str(PLUGIN),
        ENGRAM_PYTHON=sys.executable,
        PYTHONPATH=str(Path(engram.__file__).parents[1]),
    )

    def hook(event: str, **body: Any) -> str:
        command = hooks[event][0]["hooks"][0]["command"].replace(
            "${CLAUDE_PLUGIN_ROOT}", str(PLUGIN)
        )
        payload = {"session_id": "s-lean", "cwd": str(ws.root), "hook_event_name": event, **body}
        return _run_hook(command, payload, env, ws.root)

    def read(file: str) -> dict[str, Any]:
        return {"tool_name": "Read", "tool_input": {"file_path": str(ws.root / file)}}

    edit = hook(
        "PreToolUse", tool_name="Edit", tool_input={"file_path": str(ws.root / "billing.py")}
    )
    first = json.loads(edit)["hookSpecificOutput"]["additionalContext"]
    assert first.splitlines()[0] == "Engram memory for billing.py (read before changing it):"
    assert first.count("billing.py") == 1, first
    assert "(line 1)" in first and "(line 2)" in first
    assert first.count("Confirm or flag") == 1 and first.endswith("--kind incorrect`.")
    assert estimate_tokens(first) <= HookBudget().file_tokens
    second = json.loads(hook("PostToolUse", **read("refund.py")))["hookSpecificOutput"]
    later = second["additionalContext"]
    assert later.count("refund.py") == 1 and "Confirm or flag" not in later, later
    # each memory handed once in the session, by its id once
    both = first + later
    assert all(both.count(m.id) == 1 for m in memories), both
    # nothing new, and a prompt about nothing: no output at all, not an empty context
    assert hook("PostToolUse", **read("billing.py")) == ""
    assert hook("UserPromptSubmit", prompt="xylophone quartz") == ""
