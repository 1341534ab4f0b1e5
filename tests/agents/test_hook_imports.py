"""What ``engram hook`` loads on its way to an answer (docs/agents.md, "Hook latency").

An agent runs a hook as a fresh process on every prompt and tool call, so its start-up is
most of its time: the answering path is the entry point, the hook module and a few small
Engram modules on ``json``/``re``/``sqlite3``. Module sets and behaviour only, never times
(scripts/bench/agent_hooks.py and scripts/bench/claude_live_hooks.py print the figures).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engram.agents.deferred import wait_for_queued
from engram.lifecycle.trust import mirror_rules
from engram.model import CodeAnchor, Memory, MemoryType
from engram.store.digest import Digest
from engram.workspace import Workspace

#: Runs ``engram ARGV`` as the console script does and reports the modules it held when it
#: answered (before the deferred child, which imports the redaction, was forked).
PROBE = """
import json, sys
import engram.agents.hooks as hooks
seen = []
real = hooks.run_detached
def record(*args, **kwargs):
    seen.append(sorted(sys.modules))
    return real(*args, **kwargs)
hooks.run_detached = record
from engram.cli.entry import main
try:
    code = main(json.loads(sys.argv[1]))
except SystemExit as exc:  # argparse's --help
    code = exc.code
sys.stderr.write("MODULES " + json.dumps(seen[0] if seen else sorted(sys.modules)) + "\\n")
raise SystemExit(code)
"""

#: Everything of Engram the answering hook may import.
HOOK_MODULES = {
    "engram",
    "engram.agents",
    "engram.agents.deferred",
    "engram.agents.hooks",
    "engram.cli",
    "engram.cli.entry",
    "engram.gitroot",
    "engram.marks",
    "engram.quoting",
    "engram.store",
    "engram.store.digest",
    "engram.tokens",
    "engram.workspace",
}
#: Each costs a hook milliseconds (or far more): the CLI's parser, the forwarder, the
#: redaction's patterns (the deferred child's), process spawning and the model.
NEVER = {
    "argparse",
    "attr",
    "attrs",
    "logging",
    "subprocess",
    "typing",
    "engram.cli.main",
    "engram.daemon.forward",
    "engram.redaction",
    "engram.jobs",
    "engram.model",
    "engram.config",
    "numpy",
    "lancedb",
}


def _gotcha(text: str, file: str) -> Memory:
    return Memory(
        text, type=MemoryType.GOTCHA, anchors=[CodeAnchor(file, "charge", 1, 1)], confidence=0.8
    )


@pytest.fixture
def ws(tmp_workspace: Workspace) -> Workspace:
    tmp_workspace.ensure_engram_dir()
    (tmp_workspace.root / "billing.py").write_text("def charge(x):\n    return x\n")
    Digest(tmp_workspace, rules=mirror_rules()).apply(
        [_gotcha("charge() wants cents", "billing.py")]
    )
    return tmp_workspace


def _payload(ws: Workspace, event: str, session: str = "s1", **extra: object) -> str:
    return json.dumps(
        {"session_id": session, "hook_event_name": event, "cwd": str(ws.root), **extra}
    )


def probe(ws: Workspace, argv: list[str], stdin: str) -> tuple[str, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        cwd=ws.root,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    found = [line for line in done.stderr.splitlines() if line.startswith("MODULES ")]
    assert done.returncode == 0 and found, done.stderr
    return done.stdout, set(json.loads(found[-1].removeprefix("MODULES ")))


@pytest.mark.parametrize(
    ("event", "extra", "answers"),
    [
        ("PreToolUse", {"tool_name": "Edit", "tool_input": {"file_path": "billing.py"}}, True),
        ("PostToolUse", {"tool_name": "Read", "tool_input": {"file_path": "billing.py"}}, True),
        ("UserPromptSubmit", {"prompt": "why does charge want cents here"}, True),
        ("SessionStart", {"source": "startup"}, False),
        ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}}, False),
    ],
)
def test_a_hook_answers_on_the_standard_library_and_a_few_engram_modules(
    ws: Workspace, event: str, extra: dict[str, object], answers: bool
) -> None:
    out, modules = probe(ws, ["hook", "claude-code"], _payload(ws, event, **extra))
    if answers:
        assert "charge() wants cents" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    ours = {m for m in modules if m == "engram" or m.startswith("engram.")}
    assert ours <= HOOK_MODULES, sorted(ours - HOOK_MODULES)
    assert not modules & NEVER, sorted(modules & NEVER)
    wait_for_queued(ws)  # the child queued the payload after the answer
    queued = (ws.engram_dir / "agents" / "inbox" / "s1.jsonl").read_text().splitlines()
    assert [json.loads(line)["hook_event_name"] for line in queued][:1] == [event]


def test_hook_with_workspace_option_takes_the_short_path_and_help_the_parser(
    ws: Workspace,
) -> None:
    extra = {"tool_name": "Edit", "tool_input": {"file_path": "billing.py"}}
    payload = _payload(ws, "PreToolUse", **extra)
    out, modules = probe(ws, ["hook", "claude-code", "--workspace", str(ws.root)], payload)
    assert "charge() wants cents" in out
    assert "argparse" not in modules
    out, modules = probe(ws, ["hook", "--help"], "")
    assert "AGENT" in out and "argparse" in modules  # anything else: the full parser


def test_deferred_payloads_are_queued_in_the_order_the_hooks_came(ws: Workspace) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    events = [
        ("UserPromptSubmit", {"prompt": "fix charge"}),
        ("PreToolUse", {"tool_name": "Edit", "tool_input": {"file_path": "billing.py"}}),
        ("PostToolUse", {"tool_name": "Bash", "tool_response": {"stdout": f"token {secret}"}}),
        ("PostToolUse", {"tool_name": "Edit", "tool_input": {"file_path": "billing.py"}}),
    ]
    for event, extra in events:
        done = subprocess.run(
            [sys.executable, "-m", "engram", "hook", "claude-code"],
            cwd=ws.root,
            input=_payload(ws, event, "order", **extra),
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        assert done.stderr == ""
    wait_for_queued(ws)
    text = (ws.engram_dir / "agents" / "inbox" / "order.jsonl").read_text()
    assert secret not in text and "REDACTED" in text  # redacted before it reached the disk
    queued = [json.loads(line) for line in text.splitlines()]
    assert [(q["hook_event_name"], q.get("tool_name")) for q in queued] == [
        (event, extra.get("tool_name")) for event, extra in events
    ]
