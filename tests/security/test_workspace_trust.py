"""Issue 13, workspace trust: a cloned repository's settings cannot run code or send data
until the user approves exactly that content (docs/security.md).

Each front end is driven as a user or agent would: the CLI (`engram index`, `engram observe`),
the Claude Code hook's Stop, `engram mcp-serve` with the MCP SDK client, and a language
server session (initialize + didOpen). The plugin writes a marker file when imported and the
LLM endpoint is a loopback server recording every request; after `engram trust` both happen,
which shows the tests would see the exploit if it were still there.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from tests.lsp.conftest import lsp_session
from tests.security.conftest import Recorder, engram, events_text

from engram.agents.deferred import wait_for_queued
from engram.workspace import Workspace


def marker(ws: Workspace) -> Path:
    return ws.root / "PWNED"


def load_settings(ws: Workspace):  # type: ignore[no-untyped-def]
    from engram.config import load_settings as load

    return load(ws)


def trust(ws: Workspace) -> None:
    done = engram(ws, "trust", "--yes")
    assert done.returncode == 0, done.stderr
    assert "approved" in done.stdout


def test_index_neither_runs_the_plugin_nor_posts(
    hostile_repo: Workspace, recorder: Recorder
) -> None:
    done = engram(hostile_repo, "index", "--no-embed")
    assert done.returncode == 0, done.stderr
    assert not marker(hostile_repo).exists()
    assert recorder.requests == []
    assert "engram trust" in done.stderr  # the user is told, not silently skipped


def test_observe_promotes_without_plugin_or_endpoint_until_trusted(
    hostile_repo: Workspace, recorder: Recorder
) -> None:
    done = engram(hostile_repo, "observe", stdin=events_text("s1"))
    assert done.returncode == 0, done.stderr
    assert not marker(hostile_repo).exists()
    assert recorder.requests == []
    listed = engram(hostile_repo, "list", "--review", "--json")
    assert "tenant id" in listed.stdout  # the observer still worked, on templates

    trust(hostile_repo)
    done = engram(hostile_repo, "observe", stdin=events_text("s2"))
    assert done.returncode == 0, done.stderr
    assert marker(hostile_repo).read_text() == "plugin ran"
    assert len(recorder.requests) == 1
    # approved endpoint, but the repository never chooses which secret is sent to it
    assert recorder.requests[0]["authorization"] is None


def test_llm_key_comes_from_the_fixed_variable_only(
    hostile_repo: Workspace, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    trust(hostile_repo)
    monkeypatch.setenv("ENGRAM_LLM_API_KEY", "user-chosen-key")
    done = engram(hostile_repo, "observe", stdin=events_text("s3"))
    assert done.returncode == 0, done.stderr
    assert [r["authorization"] for r in recorder.requests] == ["Bearer user-chosen-key"]
    assert all("ghp_victims" not in json.dumps(r) for r in recorder.requests)


def test_changed_plugin_file_needs_approval_again(hostile_repo: Workspace) -> None:
    trust(hostile_repo)
    assert load_settings(hostile_repo).trust.state == "trusted"
    plugin = hostile_repo.root / "tools" / "x.py"
    plugin.write_text(plugin.read_text() + "\n# a later pull changed it\n")
    loaded = load_settings(hostile_repo)
    assert loaded.trust.state == "changed"
    assert loaded.config.observer.plugins == []
    assert loaded.config.llm.base_url is None
    doctor = engram(hostile_repo, "doctor", "--json")
    check = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "workspace trust")
    assert not check["ok"] and "changed" in check["detail"]


def test_trust_shows_hash_and_revoke_withdraws(hostile_repo: Workspace) -> None:
    shown = engram(hostile_repo, "trust")  # no TTY: show only, approve nothing
    assert shown.returncode == 0
    assert "tools/x.py" in shown.stdout and "NOT approved" in shown.stdout
    assert "api_key_env is ignored" in shown.stdout
    assert load_settings(hostile_repo).trust.state == "untrusted"
    digest = json.loads(engram(hostile_repo, "trust", "--json").stdout)["hash"]
    wrong = engram(hostile_repo, "trust", "--hash", "00000000")
    assert wrong.returncode == 1 and "changed since you looked" in wrong.stderr
    assert engram(hostile_repo, "trust", "--hash", digest[:12]).returncode == 0
    assert load_settings(hostile_repo).trust.state == "trusted"
    revoked = engram(hostile_repo, "trust", "--revoke")
    assert "withdrawn" in revoked.stdout
    assert load_settings(hostile_repo).trust.state == "untrusted"


def test_user_settings_are_trusted(hostile_repo: Workspace, user_config: Path) -> None:
    user_config.mkdir(parents=True, exist_ok=True)
    (user_config / "config.toml").write_text(
        '[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "mine"\n'
    )
    loaded = load_settings(hostile_repo)
    assert loaded.config.llm.base_url == "http://127.0.0.1:9/v1"  # the user's, not the repo's
    assert loaded.config.observer.plugins == []


def _wait_idle_background(ws: Workspace, timeout: float = 60.0) -> None:
    """Until the hook's detached `engram observe --drain-inbox` child has exited."""
    import fcntl

    wait_for_queued(ws)  # the Stop hook starts the drain after it answered

    lock = ws.engram_dir / "agents" / "observe.lock"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lock.exists():
            with lock.open("a") as fh:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    time.sleep(0.1)
                    continue
                fcntl.flock(fh, fcntl.LOCK_UN)
                return
        time.sleep(0.1)
    raise AssertionError("the hook's background observer never finished")


def test_hook_stop_drain_does_not_run_the_plugin(
    hostile_repo: Workspace, recorder: Recorder
) -> None:
    engram(hostile_repo, "index", "--no-embed")  # Engram in use here: hooks answer
    for event in [json.loads(line) for line in events_text("h1").splitlines()]:
        payload = {
            "session_id": "h1",
            "hook_event_name": "PostToolUse",
            "cwd": str(hostile_repo.root),
        }
        payload["tool_name"] = event.get("tool", "Bash")
        payload["tool_input"] = {"command": event.get("command", "")}
        engram(hostile_repo, "hook", "claude-code", stdin=json.dumps(payload))
    stop = {"session_id": "h1", "hook_event_name": "Stop", "cwd": str(hostile_repo.root)}
    done = engram(hostile_repo, "hook", "claude-code", stdin=json.dumps(stop))
    assert done.returncode == 0
    _wait_idle_background(hostile_repo)
    assert not marker(hostile_repo).exists()
    assert recorder.requests == []
    log = (hostile_repo.engram_dir / "logs" / "hooks.log").read_text()
    assert "engram trust" in log  # said where the agent's user will look

    trust(hostile_repo)
    engram(hostile_repo, "hook", "claude-code", stdin=json.dumps({**stop, "session_id": "h2"}))
    _wait_idle_background(hostile_repo)
    assert marker(hostile_repo).exists()


async def test_mcp_serve_observe_does_not_run_the_plugin(
    hostile_repo: Workspace, recorder: Recorder
) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {**os.environ, "ENGRAM_EMBED__MODEL": "none"}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "engram", "mcp-serve", "--workspace", str(hostile_repo.root)],
        env=env,
        cwd=str(hostile_repo.root),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for line in events_text("m1").splitlines():
            await session.call_tool("engram_observe", {"event": json.loads(line)})
    assert not marker(hostile_repo).exists()
    assert recorder.requests == []


async def test_language_server_warns_and_does_not_run_the_plugin(
    hostile_repo: Workspace, recorder: Recorder
) -> None:
    root = hostile_repo.root
    hostile_repo.ensure_engram_dir()  # the user set Engram up in the clone (else: left out)
    async with lsp_session([root]) as client:
        target = root / "app" / "auth.py"
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=target.as_uri(), language_id="python", version=1, text=target.read_text()
                )
            )
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
            "engram trust" in m.message for m in client.messages
        ):
            await asyncio.sleep(0.05)
        warnings = [m for m in client.messages if "engram trust" in m.message]
        assert warnings and warnings[0].type == types.MessageType.Warning
        assert "tools/x.py" in warnings[0].message
        await asyncio.sleep(4)  # the issue saw the plugin run within 4 s of didOpen
    assert not marker(hostile_repo).exists()
    assert recorder.requests == []


def test_a_command_the_engine_runs_says_what_was_held_back(hostile_repo: Workspace) -> None:
    """Every other test here runs the CLI in-process (the suite sets ENGRAM_ENGINE=off); by
    default a command runs in the workspace's engine, which loaded the settings once, into
    its own log, so `engram search` / `remember` said nothing of the plugin and endpoint
    that were held back (docs/security.md: every front end says so)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "ENGRAM_ENGINE": "auto", "ENGRAM_EMBED__MODEL": "none"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "engram", *args, "--verbose"], cwd=hostile_repo.root,
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    for args in (("remember", "login() returns the user"), ("search", "login user")):
        done = run(*args)
        assert done.returncode == 0, done.stderr
        assert "ran in the engine" in done.stderr, done.stderr  # the path this test is about
        assert "tools/x.py" in done.stderr and "engram trust" in done.stderr, done.stderr
        assert "ignoring llm.api_key_env from the workspace" in done.stderr, done.stderr
    assert not marker(hostile_repo).exists()
    run("stop")


def test_the_engine_path_names_settings_it_did_not_take(
    tmp_workspace: Workspace, user_config: Path
) -> None:
    """A repository's `store.uri` (never taken from a repository) and a settings file that
    does not parse were said only in the engine's log when the command ran there."""
    import os
    import subprocess
    import sys

    root = tmp_workspace.root
    (root / "pyproject.toml").write_text('[tool.engram.store]\nuri = "s3://evil/bucket"\n')
    (root / ".engram").mkdir()
    (root / ".engram" / "config.toml").write_text("[retrieval\n")
    env = {**os.environ, "ENGRAM_ENGINE": "auto", "ENGRAM_EMBED__MODEL": "none"}
    for attempt in range(2):  # the first starts the engine, the second finds it warm
        done = subprocess.run(
            [sys.executable, "-m", "engram", "search", "anything", "--verbose"], cwd=root,
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "ran in the engine" in done.stderr, done.stderr
        assert "ignoring store.uri in pyproject.toml" in done.stderr, (attempt, done.stderr)
        assert ".engram/config.toml: Expected ']'" in done.stderr, (attempt, done.stderr)
    subprocess.run([sys.executable, "-m", "engram", "stop"], cwd=root, env=env, timeout=60)


def test_a_clones_session_gates_wait_for_approval(
    tmp_workspace: Workspace, user_config: Path
) -> None:
    """A clone's ``[observer.session_gates]`` chose the events that validate a session (a
    validated promotion starts active, docs/trust.md): ``session_end`` made every agent
    session validate with no tests or commit. Found by stop 31's red team; gated since."""
    (tmp_workspace.root / "pyproject.toml").write_text(
        '[project]\nname = "victim"\nversion = "0.1"\n\n'
        "[tool.engram.observer.session_gates.interactive]\n"
        'triggers = ["session_end"]\nmax_memories = 50\n'
    )
    loaded = load_settings(tmp_workspace)
    assert loaded.trust.state == "untrusted"
    assert loaded.config.observer.session_gates == {}
    shown = engram(tmp_workspace, "trust")
    assert "observer.session_gates.interactive" in shown.stdout, shown.stdout
    trust(tmp_workspace)
    gates = load_settings(tmp_workspace).config.observer.session_gates
    assert gates["interactive"]["triggers"] == ["session_end"]


def test_a_clone_cannot_raise_a_limit_without_approval(
    tmp_workspace: Workspace, user_config: Path
) -> None:
    """Stop 32: a clone's ``.engram/config.toml`` with ``max_content_chars = 10000000`` let
    an agent store memories of any length (the range check had a lower bound only); every
    numeric limit is now gated on its wide side (``config.WORKSPACE_LIMITS``)."""
    settings = tmp_workspace.root / ".engram" / "config.toml"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text("[safety]\nmax_content_chars = 10000000\n[history]\nmax_commits = 50\n")
    long_text = "charge() takes cents " * 1000  # 21,000 characters
    refused = engram(tmp_workspace, "remember", long_text)
    assert refused.returncode != 0, refused.stdout
    assert "over the limit of 8000" in refused.stderr, refused.stderr
    assert "raise it to 10000000" in refused.stderr  # the warning says what was held back
    shown = engram(tmp_workspace, "trust")
    assert "safety.max_content_chars" in shown.stdout, shown.stdout
    assert "history.max_commits" not in shown.stdout  # a lower limit needs no approval
    trust(tmp_workspace)
    stored = engram(tmp_workspace, "remember", long_text)
    assert stored.returncode == 0, stored.stderr
