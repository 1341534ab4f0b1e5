"""SessionStart in a repository Engram never indexed says so, once (docs/agents.md).

The plugin installed (or ``engram setup claude-code`` run) in a repository with no store and
no digest: every hook printed nothing, so a new user took the silence for Engram at work.
Now the session's start says one line to the person (``systemMessage``); the other hooks, a
resumed session and a folder that is no repository stay silent, and nothing is written.
Run as Claude Code runs the plugin's hook: ``/bin/sh -c``, ``PATH=/usr/bin:/bin``, a fresh
HOME, from ``/``.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

from tests.agents.test_setup import ENGRAM, PLUGIN, ROOT, _minimal_env

from engram.agents import Digest
from engram.lifecycle.trust import mirror_rules
from engram.model import Memory, MemoryScope, MemoryType
from engram.workspace import Workspace

HOOK = f'"{PLUGIN}/hooks/engram-hook"'


def _home(tmp_path: Path) -> Path:
    """A fresh HOME whose recorded command (``engram setup claude-code --plugin``) runs this
    tree's Engram."""
    home = tmp_path / "home"
    record = home / ".config" / "engram" / "command"
    record.parent.mkdir(parents=True)
    record.write_text(shlex.join(["env", f"PYTHONPATH={ROOT / 'server'}", ENGRAM[0]]) + "\n")
    return home


def _hook(home: Path, root: Path, event: str, **fields: str) -> dict[str, Any] | None:
    payload = {"session_id": "s1", "cwd": str(root), "hook_event_name": event,
               "transcript_path": "/dev/null", **fields}  # fmt: skip
    done = subprocess.run(
        ["/bin/sh", "-c", HOOK],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=_minimal_env(home, CLAUDE_PLUGIN_ROOT=str(PLUGIN)),
        cwd="/",
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def _repository(root: Path) -> Path:
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("def main():\n    return 1\n")
    return root


def test_a_session_in_a_repository_never_indexed_is_told_once(tmp_path: Path) -> None:
    home, root = _home(tmp_path), _repository(tmp_path / "repo")
    said = _hook(home, root, "SessionStart", source="startup")
    assert said is not None and set(said) == {"systemMessage"}, said  # the person, not the model
    line = said["systemMessage"]
    assert "no memories for this repository yet" in line and "`engram index`" in line
    assert str(root) in line and "\n" not in line
    assert not (root / ".engram").exists(), "a hook in a repository never indexed wrote to it"
    # only the session's start, and only a new session
    assert _hook(home, root, "SessionStart", source="resume") is None
    assert _hook(home, root, "UserPromptSubmit", prompt="fix main in app.py") is None
    post = {"tool_name": "Read", "tool_input": {"file_path": str(root / "app.py")}}
    assert _hook(home, root, "PostToolUse", **post) is None  # type: ignore[arg-type]

    # .engram/ made by an editor or `engram setup`, nothing indexed or remembered: the same
    (root / ".engram").mkdir()
    said = _hook(home, root, "SessionStart", source="startup")
    assert said is not None and "`engram index`" in said["systemMessage"], said


def test_no_line_where_engram_has_memories_or_there_is_no_repository(tmp_path: Path) -> None:
    home, root = _home(tmp_path), _repository(tmp_path / "repo")
    ws = Workspace.open(root)
    ws.ensure_engram_dir()
    memory = Memory(
        "main() returns 1 on purpose", type=MemoryType.DECISION, scope=MemoryScope.GLOBAL
    )
    Digest(ws, rules=mirror_rules()).apply([memory])
    said = _hook(home, root, "SessionStart", source="startup")
    assert said is not None and "systemMessage" not in said, said
    assert memory.id in said["hookSpecificOutput"]["additionalContext"]

    plain = tmp_path / "notes"  # no .git, no .engram: Claude Code started in any folder
    plain.mkdir()
    assert _hook(home, plain, "SessionStart", source="startup") is None


def test_an_agent_session_in_a_repository_nobody_set_up_writes_nothing_there(
    tmp_path: Path,
) -> None:
    """The plugin runs in every repository an agent works in: its hooks wrote nothing there,
    but the first MCP tool call (a search) made ``.engram/`` and an agent's remember stored
    a memory. One rule for every front end (docs/agents.md): nothing is read or written in
    a repository nobody set up; every tool says so in one line, until the person runs
    ``engram index`` there. Hooks as Claude Code runs them, the MCP server as the plugin
    starts it (``bin/engram-launch mcp-serve``), both with ``PATH=/usr/bin:/bin`` and a
    fresh HOME."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    home, root = _home(tmp_path), _repository(tmp_path / "repo")
    read = {"tool_name": "Read", "tool_input": {"file_path": str(root / "app.py")}}
    for event, fields in (
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": "fix main in app.py"}),
        ("PreToolUse", {"tool_name": "Edit", "tool_input": {"file_path": str(root / "app.py")}}),
        ("PostToolUse", read),
        ("Stop", {}),
        ("SessionEnd", {"reason": "exit"}),
    ):
        _hook(home, root, event, **fields)  # type: ignore[arg-type]
        assert not (root / ".engram").exists(), f"{event} wrote to a repository nobody set up"

    async def tools(calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
        env = _minimal_env(home, CLAUDE_PLUGIN_ROOT=str(PLUGIN), ENGRAM_EMBED__MODEL="none")
        params = StdioServerParameters(
            command=str(PLUGIN / "bin" / "engram-launch"), args=["mcp-serve"], env=env,
            cwd=str(root),
        )  # fmt: skip
        async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            out = []
            for name, args in calls:
                result = await session.call_tool(name, args)
                out.append((bool(result.is_error), result.content[0].text))  # type: ignore[union-attr]
            return out

    note = {"text": "main() returns 1 on purpose", "file": "app.py"}
    calls = [("engram_search", {"query": "main"}), ("engram_remember", note)]
    for error, text in anyio.run(tools, calls):
        assert error and text.startswith(f"Engram is not set up in {root}: "), text
        assert "`engram index`" in text and "\n" not in text
    assert not (root / ".engram").exists(), "an MCP tool wrote to a repository nobody set up"

    # the person sets it up: the same tools work
    engram = shlex.split((home / ".config" / "engram" / "command").read_text())
    env = _minimal_env(home, ENGRAM_EMBED__MODEL="none")
    subprocess.run([*engram, "index"], cwd=root, env=env, check=True, capture_output=True,
                   timeout=300)  # fmt: skip
    try:
        searched, remembered = anyio.run(tools, calls)
    finally:
        subprocess.run([*engram, "stop"], cwd=root, env=env, capture_output=True, timeout=60)
    assert not searched[0] and not remembered[0], (searched, remembered)
    assert json.loads(remembered[1])["memory"]["content"] == "main() returns 1 on purpose"
