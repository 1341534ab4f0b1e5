"""Issue 13, secrets never on disk: what agents and people paste is redacted before anything is
written under `.engram/` (hook inbox, observer scratchpads, store, digest, logs), exported or
shared; `engram share` scans again and refuses (docs/security.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import attrs
import pytest
from tests.security.conftest import engram

from engram.agents.deferred import wait_for_queued
from engram.workspace import Workspace

#: the gaps issue 13 found, each as an agent's tool output or a note would carry it
SECRETS = {
    "openai": "sk-proj-Zy9x8Wv7Ut6Sr5Qp4On3Ml2Kj1Ih0GfEdCbA9z8Y7x6",
    "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrSt",
    "cli_password": "hunter3xyzzy",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "json_api_key": "a8f5f167f44f4964e6c998dee827110c",
}
TOOL_OUTPUT = (
    f"$ cat .env\nOPENAI_API_KEY {SECRETS['openai']}\nSLACK={SECRETS['slack']}\n"
    f"$ mysql --user admin --password {SECRETS['cli_password']} prod\n"
    f"aws_secret_access_key {SECRETS['aws_secret']}\n"
    f'{{"api_key": "{SECRETS["json_api_key"]}", "region": "eu-west-1"}}\n'
)


def leaked(root: Path) -> dict[str, list[str]]:
    """Which raw secrets appear in which files under ``root`` (bytes, so binary stores too)."""
    found: dict[str, list[str]] = {}
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        for name, secret in SECRETS.items():
            if secret.encode() in data:
                found.setdefault(name, []).append(str(path.relative_to(root)))
    return found


def _wait_background(ws: Workspace, timeout: float = 90.0) -> None:
    import fcntl

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
                return
        time.sleep(0.1)
    raise AssertionError("the hook's background observer never finished")


def test_hook_payloads_are_redacted_in_inbox_and_scratchpad(
    tmp_workspace: Workspace, user_config: Path
) -> None:
    ws = tmp_workspace
    ws.ensure_engram_dir()
    payload = {
        "session_id": "leaky",
        "hook_event_name": "PostToolUse",
        "cwd": str(ws.root),
        "tool_name": "Bash",
        "tool_input": {"command": f"mysql --password {SECRETS['cli_password']} prod"},
        "tool_response": {"stdout": TOOL_OUTPUT, "stderr": "", "exit_code": 0},
    }
    done = engram(ws, "hook", "claude-code", stdin=json.dumps(payload))
    assert done.returncode == 0
    wait_for_queued(ws)  # the hook queues the payload after it answered
    inbox = ws.engram_dir / "agents" / "inbox" / "leaky.jsonl"
    assert inbox.is_file() and "REDACTED" in inbox.read_text()
    assert leaked(ws.engram_dir) == {}
    stop = {"session_id": "leaky", "hook_event_name": "Stop", "cwd": str(ws.root)}
    engram(ws, "hook", "claude-code", stdin=json.dumps(stop))
    wait_for_queued(ws)  # the Stop hook's child has started the drain
    _wait_background(ws)
    assert any((ws.engram_dir / "observer").rglob("*.jsonl"))  # the drain did write
    assert leaked(ws.engram_dir) == {}


@pytest.mark.parametrize(
    "text",
    [
        f"the deploy key: aws_secret_access_key {SECRETS['aws_secret']}",
        f'config has {{"api_key": "{SECRETS["json_api_key"]}"}} in it',
        f"run mysql --password {SECRETS['cli_password']} to get in",
        f"use {SECRETS['openai']} for the eval",
        f"the bot token is {SECRETS['slack']}",
    ],
)
def test_the_gaps_are_redacted(text: str) -> None:
    from engram.redaction import redact_secrets

    result = redact_secrets(text)
    assert result.redacted
    assert not any(secret in result.text for secret in SECRETS.values())


def test_remember_export_share_carry_no_secret(tmp_workspace: Workspace, user_config: Path) -> None:
    ws = tmp_workspace
    ids = []
    for line in [t for t in TOOL_OUTPUT.splitlines() if any(v in t for v in SECRETS.values())]:
        made = engram(ws, "remember", "--json", "--type", "gotcha", f"never commit this: {line}")
        assert made.returncode == 0, made.stderr
        assert "redacted" in made.stderr
        ids.append(json.loads(made.stdout)["id"])
    exported = engram(ws, "export")
    assert not any(secret in exported.stdout for secret in SECRETS.values())
    shared = engram(ws, "share", "--json", *ids)
    assert shared.returncode == 0, shared.stderr
    team = ws.root / ".engram-team"
    assert list(team.glob("*.json")) and leaked(team) == {}
    assert leaked(ws.engram_dir) == {}


def test_share_scans_again_and_refuses(tmp_workspace: Workspace, user_config: Path) -> None:
    from engram.app import Engine
    from engram.app.remember import remember
    from engram.app.team import share

    with Engine.open(ws := tmp_workspace, {"embed": {"model": "none"}}) as eng:
        memory = remember(eng, "the staging database lives on db-2", type="gotcha").memory
        # a memory stored before a redaction rule existed, or edited in the store directly
        raw = attrs.evolve(memory, content=f"db-2 password is {SECRETS['cli_password']}!")
        eng.store.update([raw])
        report = share(eng, [memory.id])
    assert report.written == []
    assert [r for r in report.refused if memory.id in r and "secret" in r]
    team = ws.root / ".engram-team"
    assert not team.exists() or leaked(team) == {}
